"""The digest's records (``digest_entries``): which proposals went to the daily digest instead of
the inbox, and why (``gate/quiet.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class DigestRow:
    lineage_id: UUID
    place: str
    kind: str  # a ``SuggestionKind`` value
    why: str  # a ``DigestWhy`` value
    approved: int | None  # the figures the automatic move read (None: the policy file's)
    decisions: int | None
    created_at: datetime
    proposal_id: UUID  # the lineage's latest version
    version: int
    action: dict[str, Any]
    decision: str | None  # that version's, if decided
    execution_state: str | None


def run_branch(conn: Connection, tenant_id: UUID, run_id: UUID) -> str | None:
    row = conn.execute(
        q("gate/store/digest", "run_branch"), {"tenant_id": tenant_id, "run_id": run_id}
    ).fetchone()
    return row["branch"] if row else None


def insert_entry(
    conn: Connection,
    *,
    tenant_id: UUID,
    lineage_id: UUID,
    place: str,
    kind: str,
    why: str,
    approved: int | None,
    decisions: int | None,
) -> None:
    conn.execute(
        q("gate/store/digest", "insert_entry"),
        {
            "tenant_id": tenant_id,
            "lineage_id": lineage_id,
            "place": place,
            "kind": kind,
            "why": why,
            "approved": approved,
            "decisions": decisions,
        },
    )


def entries(
    conn: Connection, tenant_id: UUID, since: datetime, until: datetime, limit: int
) -> list[DigestRow]:
    params = {"tenant_id": tenant_id, "since": since, "until": until, "limit": limit}
    return typed.every(conn, DigestRow, q("gate/store/digest", "entries"), params)
