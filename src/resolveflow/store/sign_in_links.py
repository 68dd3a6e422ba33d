"""One-time sign-in links: stored as the SHA-256 of their token, used at most once, within an
hour (migration 0025). Every query runs inside the link's tenant (row-level security)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.telemetry import current_trace_id


@dataclass(frozen=True)
class NewLink:
    id: UUID
    expires_at: datetime


@dataclass(frozen=True)
class UsedLink:
    id: UUID
    principal_id: UUID


@dataclass(frozen=True)
class StoredLink:
    id: UUID
    principal_id: UUID
    subject: str
    expires_at: datetime
    used_at: datetime | None
    expired: bool


def insert_link(
    conn: Connection,
    *,
    tenant_id: UUID,
    principal_id: UUID,
    token_hash: str,
    issued_by: str,
    ttl_seconds: int,
) -> NewLink:
    params = {
        "tenant_id": tenant_id,
        "principal_id": principal_id,
        "token_hash": token_hash,
        "issued_by": issued_by,
        "ttl_seconds": ttl_seconds,
    }
    found = rows.one(conn, NewLink, q("sign_in_links", "insert_link"), params)
    assert found is not None
    return found


def use_link(conn: Connection, tenant_id: UUID, token_hash: str) -> UsedLink | None:
    """Mark the link used, if it is unused and unexpired; ``None`` otherwise."""
    params = {"tenant_id": tenant_id, "token_hash": token_hash}
    return rows.one(conn, UsedLink, q("sign_in_links", "use_link"), params)


def link_by_hash(conn: Connection, tenant_id: UUID, token_hash: str) -> StoredLink | None:
    params = {"tenant_id": tenant_id, "token_hash": token_hash}
    return rows.one(conn, StoredLink, q("sign_in_links", "link_by_hash"), params)


def tenant_name(conn: Connection, tenant_id: UUID) -> str | None:
    row = conn.execute(q("sign_in_links", "tenant_name"), {"tenant_id": tenant_id}).fetchone()
    return None if row is None else str(row["name"])


def record_event(
    conn: Connection,
    *,
    tenant_id: UUID,
    actor: str,
    event: StrEnum,
    subject_id: str,
    details: dict[str, Any],
) -> None:
    """An audit event about a link (subject type ``sign_in_link``)."""
    conn.execute(
        q("sign_in_links", "insert_event"),
        {
            "tenant_id": tenant_id,
            "actor": actor,
            "event": event.value,
            "subject_id": subject_id,
            "details": Jsonb(details),
            "trace_id": current_trace_id(),
        },
    )
