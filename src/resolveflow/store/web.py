"""Records of the web app: webhook deliveries and claims, sessions, users' encrypted GitHub tokens,
daily usage counters, and the read models of the inbox and the audit page."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import TokenCipher

# --- webhook deliveries (global: a delivery is seen before its tenant is known) --------------


def insert_delivery(
    conn: Connection,
    *,
    delivery_id: str,
    event: str,
    action: str | None,
    repository: str | None,
    issue_number: int | None,
    queued: bool,
) -> bool:
    """True when the delivery is new; False for a redelivery (nothing was written)."""
    row = conn.execute(
        q("web", "insert_delivery"),
        {
            "delivery_id": delivery_id,
            "event": event,
            "action": action,
            "repository": repository,
            "issue_number": issue_number,
            "queued": queued,
        },
    ).fetchone()
    return row is not None


def delivery_by_id(conn: Connection, delivery_id: str) -> dict[str, Any] | None:
    return conn.execute(q("web", "delivery_by_id"), {"delivery_id": delivery_id}).fetchone()


def count_deliveries(conn: Connection) -> int:
    row = conn.execute(q("web", "count_deliveries")).fetchone()
    return int(row["n"]) if row else 0


def claim_webhook_run(conn: Connection, delivery_id: str, tenant_id: UUID) -> bool:
    row = conn.execute(
        q("web", "claim_webhook_run"), {"delivery_id": delivery_id, "tenant_id": tenant_id}
    ).fetchone()
    return row is not None


# --- sessions -------------------------------------------------------------------------------


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
        q("web", "insert_session"),
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
        q("web", "live_session"), {"tenant_id": tenant_id, "token_hash": token_hash}
    ).fetchone()


def end_session(conn: Connection, tenant_id: UUID, token_hash: str) -> bool:
    row = conn.execute(
        q("web", "end_session"), {"tenant_id": tenant_id, "token_hash": token_hash}
    ).fetchone()
    return row is not None


# --- users' GitHub tokens (encrypted before they reach the database) -------------------------


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
        q("web", "upsert_user_token"),
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
    row = conn.execute(
        q("web", "user_token"), {"tenant_id": tenant_id, "principal_id": principal_id}
    ).fetchone()
    return cipher.decrypt(row["ciphertext"]) if row else None


def user_token_row(conn: Connection, tenant_id: UUID, principal_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        q("web", "user_token"), {"tenant_id": tenant_id, "principal_id": principal_id}
    ).fetchone()


# --- usage counters ---------------------------------------------------------------------------


def consume_usage(
    conn: Connection, *, tenant_id: UUID, principal_id: UUID, kind: str, limit: int
) -> int | None:
    """Count one use; ``None`` (and nothing counted) when today's ``limit`` is already reached."""
    row = conn.execute(
        q("web", "consume_usage"),
        {"tenant_id": tenant_id, "principal_id": principal_id, "kind": kind, "limit": limit},
    ).fetchone()
    return int(row["used"]) if row else None


def usage_today(conn: Connection, tenant_id: UUID, principal_id: UUID) -> dict[str, int]:
    rows = conn.execute(
        q("web", "usage_today"), {"tenant_id": tenant_id, "principal_id": principal_id}
    ).fetchall()
    return {row["kind"]: int(row["used"]) for row in rows}


# --- read models ------------------------------------------------------------------------------


def recent_audit_events(conn: Connection, tenant_id: UUID, limit: int) -> list[dict[str, Any]]:
    return conn.execute(
        q("web", "recent_audit_events"), {"tenant_id": tenant_id, "limit": limit}
    ).fetchall()


def stalled_runs(
    conn: Connection, tenant_id: UUID, min_age_seconds: float, limit: int = 50
) -> list[dict[str, Any]]:
    return conn.execute(
        q("web", "stalled_runs"),
        {"tenant_id": tenant_id, "min_age_seconds": min_age_seconds, "limit": limit},
    ).fetchall()


def inbox(
    conn: Connection,
    tenant_id: UUID,
    *,
    status: str | None,
    repository: str | None,
    classification: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    return conn.execute(
        q("web", "inbox"),
        {
            "tenant_id": tenant_id,
            "status": status,
            "repository": repository,
            "classification": classification,
            "limit": limit,
        },
    ).fetchall()


def run_repositories(conn: Connection, tenant_id: UUID) -> list[str]:
    rows = conn.execute(q("web", "run_repositories"), {"tenant_id": tenant_id}).fetchall()
    return [row["repository"] for row in rows]
