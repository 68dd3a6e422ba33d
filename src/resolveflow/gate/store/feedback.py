"""The decisions the team made on what ResolveFlow proposed, read for ``gate/feedback.py``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class DecidedRow:
    proposal_id: UUID
    lineage_id: UUID
    version: int
    decided_action: dict[str, Any]
    first_action: dict[str, Any]
    author_kind: str
    note: str | None
    branch: str | None
    rule: str | None
    decision: str  # a ``Decision`` value
    reason: str | None
    decided_at: datetime
    score: float | None  # what it was made with, when it had one (duplicate relevance)


def decided_proposals(
    conn: Connection, tenant_id: UUID, since: datetime, limit: int, place: str | None = None
) -> list[DecidedRow]:
    params = {"tenant_id": tenant_id, "since": since, "limit": limit, "place": place}
    return typed.every(conn, DecidedRow, q("gate/store/feedback", "decided_proposals"), params)


@dataclass(frozen=True)
class LineageFirst:
    first_action: dict[str, Any]
    author_kind: str
    note: str | None
    branch: str | None
    rule: str | None
    score: float | None
    floor: float | None


def lineage_first(conn: Connection, tenant_id: UUID, lineage_id: UUID) -> LineageFirst | None:
    params = {"tenant_id": tenant_id, "lineage_id": lineage_id}
    return typed.one(conn, LineageFirst, q("gate/store/feedback", "lineage_first"), params)
