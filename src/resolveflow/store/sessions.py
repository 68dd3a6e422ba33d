"""Browser sessions. The GitHub token a sign-in brings is a principal's own token, kept with the
others in one encrypted store (store/tenants.py: save_github_token)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def insert_session(
    conn: Connection,
    *,
    tenant_id: UUID,
    principal_id: UUID,
    token_hash: str,
    csrf_token: str,
    ttl_seconds: int,
) -> datetime:
    row = conn.execute(
        q("sessions", "insert_session"),
        {
            "tenant_id": tenant_id,
            "principal_id": principal_id,
            "token_hash": token_hash,
            "csrf_token": csrf_token,
            "ttl_seconds": ttl_seconds,
        },
    ).fetchone()
    assert row is not None
    expires: datetime = row["expires_at"]
    return expires


@dataclass(frozen=True)
class LiveSession:
    id: UUID
    principal_id: UUID
    csrf_token: str
    expires_at: datetime


def live_session(conn: Connection, tenant_id: UUID, token_hash: str) -> LiveSession | None:
    params = {"tenant_id": tenant_id, "token_hash": token_hash}
    return rows.one(conn, LiveSession, q("sessions", "live_session"), params)


def end_session(conn: Connection, tenant_id: UUID, token_hash: str) -> bool:
    row = conn.execute(
        q("sessions", "end_session"), {"tenant_id": tenant_id, "token_hash": token_hash}
    ).fetchone()
    return row is not None
