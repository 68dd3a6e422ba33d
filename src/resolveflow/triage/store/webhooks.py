"""Webhook deliveries, the events acted on, per-tenant run claims and per-tenant secrets.

A delivery of the global hook, and its event's claim, belong to no tenant (``tenant_id`` NULL,
read and written unscoped): it is recorded before anyone knows which tenants it concerns. One
received on a tenant's own URL belongs to that tenant, like secrets and run claims (row-level
security; the policy lets every scope see the global rows).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from uuid import UUID

from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class EventKey:
    """What makes an event the same event again, in the scope of the secret that signed it."""

    tenant_id: UUID | None
    event: str
    repository: str
    issue_number: int
    action: str
    subject: str
    updated_at: datetime


@dataclass(frozen=True)
class NewDelivery:
    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    issue_number: int | None
    tenant_id: UUID | None
    ignored: str | None  # None: acted on (its job is queued in the same transaction)


@dataclass(frozen=True)
class RecordedDelivery:
    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    issue_number: int | None
    tenant_id: UUID | None
    queued: bool
    ignored: str | None
    received_at: datetime


def insert_delivery(conn: Connection, delivery: NewDelivery) -> bool:
    """True when the delivery is new; False for a redelivery (nothing was written)."""
    row = conn.execute(
        q("triage/store/webhooks", "insert_delivery"),
        {
            "delivery_id": delivery.delivery_id,
            "event": delivery.event,
            "action": delivery.action,
            "repository": delivery.repository,
            "issue_number": delivery.issue_number,
            "tenant_id": delivery.tenant_id,
            "ignored": delivery.ignored,
        },
    ).fetchone()
    return row is not None


def claim_event(conn: Connection, key: EventKey, delivery_id: str, max_age_days: int) -> bool:
    """True for the first delivery of ``key`` within the last ``max_age_days``."""
    row = conn.execute(
        q("triage/store/webhooks", "claim_event"),
        {**asdict(key), "delivery_id": delivery_id, "max_age": f"{max_age_days} days"},
    ).fetchone()
    return row is not None


def event_claimed_by(conn: Connection, key: EventKey) -> str | None:
    row = conn.execute(q("triage/store/webhooks", "event_claimed_by"), asdict(key)).fetchone()
    return str(row["delivery_id"]) if row else None


def event_of_delivery(conn: Connection, delivery_id: str, scope: UUID | None) -> EventKey | None:
    """The event ``delivery_id`` claimed when it was recorded in ``scope`` (None: the global
    hook's); None when it claimed none (ignored, or recorded before events were claimed)."""
    params = {"delivery_id": delivery_id, "scope": scope}
    return rows.one(conn, EventKey, q("triage/store/webhooks", "event_of_delivery"), params)


def delivery_by_id(conn: Connection, delivery_id: str) -> RecordedDelivery | None:
    params = {"delivery_id": delivery_id}
    return rows.one(conn, RecordedDelivery, q("triage/store/webhooks", "delivery_by_id"), params)


def count_deliveries(conn: Connection) -> int:
    row = conn.execute(q("triage/store/webhooks", "count_deliveries")).fetchone()
    return int(row["n"]) if row else 0


def claim_webhook_run(conn: Connection, delivery_id: str, tenant_id: UUID, run_id: UUID) -> bool:
    """True for the one caller that may start the delivery's run (``run_id``) in this tenant."""
    row = conn.execute(
        q("triage/store/webhooks", "claim_webhook_run"),
        {"delivery_id": delivery_id, "tenant_id": tenant_id, "run_id": run_id},
    ).fetchone()
    return row is not None


def unstarted_claim(conn: Connection, delivery_id: str, tenant_id: UUID) -> UUID | None:
    """The run id of a claim whose run was never created, if there is one."""
    row = conn.execute(
        q("triage/store/webhooks", "unstarted_claim"),
        {"delivery_id": delivery_id, "tenant_id": tenant_id},
    ).fetchone()
    return row["run_id"] if row else None


def prune_deliveries(conn: Connection, older_than_days: int) -> int:
    """Delete deliveries (with their run claims) and event records older than the age; returns
    how many deliveries went. Only through the database function, which refuses under 3 days."""
    row = conn.execute(
        q("triage/store/webhooks", "prune_deliveries"), {"days": older_than_days}
    ).fetchone()
    return int(row["pruned"]) if row else 0


def save_secret(conn: Connection, tenant_id: UUID, ciphertext: str) -> None:
    conn.execute(
        q("triage/store/webhooks", "upsert_secret"),
        {"tenant_id": tenant_id, "ciphertext": ciphertext},
    )


def secret_ciphertext(conn: Connection, tenant_id: UUID) -> str | None:
    row = conn.execute(
        q("triage/store/webhooks", "secret_ciphertext"), {"tenant_id": tenant_id}
    ).fetchone()
    return str(row["ciphertext"]) if row else None


def delete_secret(conn: Connection, tenant_id: UUID) -> bool:
    row = conn.execute(
        q("triage/store/webhooks", "delete_secret"), {"tenant_id": tenant_id}
    ).fetchone()
    return row is not None
