"""Daily usage counters per principal (runs started, model calls), for the limits."""

from __future__ import annotations

from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def consume_usage(
    conn: Connection, *, tenant_id: UUID, principal_id: UUID, kind: str, limit: int
) -> int | None:
    """Count one use; ``None`` (and nothing counted) when today's ``limit`` is already reached."""
    row = conn.execute(
        q("usage", "consume_usage"),
        {"tenant_id": tenant_id, "principal_id": principal_id, "kind": kind, "limit": limit},
    ).fetchone()
    return int(row["used"]) if row else None


def usage_today(conn: Connection, tenant_id: UUID, principal_id: UUID) -> dict[str, int]:
    rows = conn.execute(
        q("usage", "usage_today"), {"tenant_id": tenant_id, "principal_id": principal_id}
    ).fetchall()
    return {row["kind"]: int(row["used"]) for row in rows}
