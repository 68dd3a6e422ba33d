"""The notifications table (migration 0032): the scan's inserts, the delivery's claims and
outcomes, and the counts readiness and metrics read. The caller owns the transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.domain.vocabulary import NotificationKind, NotificationState
from resolveflow.store.database import Connection
from resolveflow.store.queries import q

_Q = "notify/store/notifications"


@dataclass(frozen=True)
class Due:
    """A claimed notification and the lineage's latest version, which it tells about."""

    id: UUID
    kind: NotificationKind
    attempts: int  # this one included
    proposal_id: UUID
    action: dict[str, Any]
    proposal_created_at: datetime
    tenant: str


@dataclass(frozen=True)
class NotificationRow:
    id: UUID
    lineage_id: UUID
    proposal_id: UUID
    kind: NotificationKind
    state: NotificationState
    attempts: int
    last_error: str | None
    next_attempt_at: datetime
    sent_at: datetime | None


@dataclass(frozen=True)
class StateCount:
    """One tenant's rows in one state (``rf_notification_counts``)."""

    state: NotificationState
    notifications: int
    retries: int  # attempts after each row's first
    retrying: int  # pending rows that failed at least once
    last_error: str | None
    last_error_at: datetime | None


def enqueue(
    conn: Connection,
    tenant_id: UUID,
    kind: NotificationKind,
    *,
    ttl_seconds: int,
    remind_before_seconds: int,
) -> int:
    params = {
        "tenant_id": tenant_id,
        "kind": kind.value,
        "ttl_seconds": ttl_seconds,
        "remind_before_seconds": remind_before_seconds,
    }
    return conn.execute(q(_Q, "enqueue"), params).rowcount


def drop_settled(conn: Connection, tenant_id: UUID, ttl_seconds: int) -> int:
    params = {"tenant_id": tenant_id, "ttl_seconds": ttl_seconds}
    return conn.execute(q(_Q, "drop_settled"), params).rowcount


def claim_due(conn: Connection, tenant_id: UUID, *, limit: int, lease_seconds: float) -> list[Due]:
    params = {"tenant_id": tenant_id, "limit": limit, "lease_seconds": lease_seconds}
    return [
        Due(
            id=row["id"],
            kind=NotificationKind(row["kind"]),
            attempts=row["attempts"],
            proposal_id=row["proposal_id"],
            action=row["action"],
            proposal_created_at=row["created_at"],
            tenant=row["tenant"],
        )
        for row in conn.execute(q(_Q, "claim_due"), params)
    ]


def record_sent(conn: Connection, tenant_id: UUID, notification_id: UUID) -> None:
    conn.execute(q(_Q, "record_sent"), {"tenant_id": tenant_id, "id": notification_id})


def record_failure(
    conn: Connection,
    tenant_id: UUID,
    notification_id: UUID,
    *,
    error: str,
    retry_seconds: float,
    max_attempts: int,
) -> NotificationState | None:
    """The row's state after the failure (``failed`` once attempts are spent)."""
    row = conn.execute(
        q(_Q, "record_failure"),
        {
            "tenant_id": tenant_id,
            "id": notification_id,
            "error": error[:400],
            "retry_seconds": retry_seconds,
            "max_attempts": max_attempts,
        },
    ).fetchone()
    return NotificationState(row["state"]) if row else None


def notifications_of(conn: Connection, tenant_id: UUID) -> list[NotificationRow]:
    return [
        NotificationRow(
            id=row["id"],
            lineage_id=row["lineage_id"],
            proposal_id=row["proposal_id"],
            kind=NotificationKind(row["kind"]),
            state=NotificationState(row["state"]),
            attempts=row["attempts"],
            last_error=row["last_error"],
            next_attempt_at=row["next_attempt_at"],
            sent_at=row["sent_at"],
        )
        for row in conn.execute(q(_Q, "notifications_of"), {"tenant_id": tenant_id})
    ]


def counts(conn: Connection) -> list[StateCount]:
    """Every tenant's rows by state (an unscoped connection: the function visits each tenant)."""
    return [
        StateCount(
            state=NotificationState(row["state"]),
            notifications=int(row["notifications"]),
            retries=int(row["retries"]),
            retrying=int(row["retrying"]),
            last_error=row["last_error"],
            last_error_at=row["last_error_at"],
        )
        for row in conn.execute(q(_Q, "counts"))
    ]
