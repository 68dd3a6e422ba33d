"""Browser sessions and the GitHub tokens of users who signed in (encrypted before they reach
the database)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import TokenCipher


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


def live_session(conn: Connection, tenant_id: UUID, token_hash: str) -> dict[str, Any] | None:
    return conn.execute(
        q("sessions", "live_session"), {"tenant_id": tenant_id, "token_hash": token_hash}
    ).fetchone()


def end_session(conn: Connection, tenant_id: UUID, token_hash: str) -> bool:
    row = conn.execute(
        q("sessions", "end_session"), {"tenant_id": tenant_id, "token_hash": token_hash}
    ).fetchone()
    return row is not None


def save_user_token(
    conn: Connection,
    cipher: TokenCipher,
    *,
    tenant_id: UUID,
    principal_id: UUID,
    github_login: str,
    token: str,
) -> None:
    conn.execute(
        q("sessions", "upsert_user_token"),
        {
            "tenant_id": tenant_id,
            "principal_id": principal_id,
            "github_login": github_login,
            "ciphertext": cipher.encrypt(token),
        },
    )


def user_token(
    conn: Connection, cipher: TokenCipher, tenant_id: UUID, principal_id: UUID
) -> str | None:
    """The principal's own GitHub token in clear, for the executor; ``None`` when none is stored."""
    row = user_token_row(conn, tenant_id, principal_id)
    return cipher.decrypt(row["ciphertext"]) if row else None


def user_token_row(conn: Connection, tenant_id: UUID, principal_id: UUID) -> dict[str, Any] | None:
    """The stored row as it is (the token encrypted)."""
    return conn.execute(
        q("sessions", "user_token"), {"tenant_id": tenant_id, "principal_id": principal_id}
    ).fetchone()
