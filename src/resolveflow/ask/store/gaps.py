"""The asks that got no answer, read for the coverage-gap report (``ask/gaps.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class UnansweredAsk:
    id: UUID
    question: str
    abstained: bool  # the fixed abstention; else "these may help" (or nothing retrieved)
    created_at: datetime


def unanswered_asks(
    conn: Connection, tenant_id: UUID, since: datetime, limit: int
) -> list[UnansweredAsk]:
    params = {"tenant_id": tenant_id, "since": since, "limit": limit}
    return typed.every(conn, UnansweredAsk, q("ask/store/gaps", "unanswered_asks"), params)
