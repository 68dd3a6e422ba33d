"""Audit events: append-only; the runtime role cannot change or delete them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.telemetry import current_trace_id


def record(
    conn: Connection,
    *,
    tenant_id: UUID,
    actor: str,
    event: AuditEvent,
    subject_type: str,
    subject_id: UUID | str,
    details: dict[str, Any] | None = None,
    run_id: UUID | None = None,
) -> None:
    conn.execute(
        q("audit", "insert_event"),
        {
            "tenant_id": tenant_id,
            "actor": actor,
            "event": event.value,
            "subject_type": subject_type,
            "subject_id": str(subject_id),
            "run_id": run_id,
            "details": Jsonb(details or {}),
            "trace_id": current_trace_id(),
        },
    )


@dataclass(frozen=True)
class RecordedEvent:
    id: int
    at: datetime
    actor: str
    event: str  # an ``AuditEvent`` value
    subject_type: str
    subject_id: str
    run_id: UUID | None
    details: dict[str, Any]
    trace_id: str | None


def events_for(conn: Connection, tenant_id: UUID, subject_ids: list[str]) -> list[RecordedEvent]:
    params = {"tenant_id": tenant_id, "subject_ids": subject_ids}
    return rows.every(conn, RecordedEvent, q("audit", "events_for_subjects"), params)
