"""Webhook deliveries and per-tenant run claims. Global, not tenant-scoped: a delivery is
recorded before anyone knows which tenants it concerns."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q


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
        q("webhooks", "insert_delivery"),
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
    return conn.execute(q("webhooks", "delivery_by_id"), {"delivery_id": delivery_id}).fetchone()


def count_deliveries(conn: Connection) -> int:
    row = conn.execute(q("webhooks", "count_deliveries")).fetchone()
    return int(row["n"]) if row else 0


def claim_webhook_run(conn: Connection, delivery_id: str, tenant_id: UUID) -> bool:
    """True for the one caller that may start the delivery's run in this tenant."""
    row = conn.execute(
        q("webhooks", "claim_webhook_run"), {"delivery_id": delivery_id, "tenant_id": tenant_id}
    ).fetchone()
    return row is not None
