"""Proposal versions and approvals: both insert-only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.domain.records import Approval, Proposal
from resolveflow.domain.vocabulary import Decision
from resolveflow.errors import NotFound
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def proposal_from_row(row: dict[str, Any]) -> Proposal:
    return Proposal(
        id=row["id"],
        tenant_id=row["tenant_id"],
        lineage_id=row["lineage_id"],
        version=row["version"],
        action=row["action"],
        digest=row["digest"],
        created_by=row["created_by"],
        author_kind=row["author_kind"],
        created_at=row["created_at"],
        run_id=row["run_id"],
    )


def _approval(row: dict[str, Any]) -> Approval:
    return Approval(
        id=row["id"],
        tenant_id=row["tenant_id"],
        proposal_id=row["proposal_id"],
        decision=Decision(row["decision"]),
        digest=row["digest"],
        principal_id=row["principal_id"],
        reason=row["reason"],
        decided_at=row["decided_at"],
        expires_at=row["expires_at"],
    )


def insert_proposal(
    conn: Connection,
    *,
    proposal_id: UUID,
    tenant_id: UUID,
    lineage_id: UUID,
    version: int,
    action: dict[str, Any],
    digest: str,
    author_kind: str,
    created_by: UUID | None,
    run_id: UUID | None = None,
    note: str | None = None,
) -> Proposal:
    row = conn.execute(
        q("gate/store/proposals", "insert_proposal"),
        {
            "id": proposal_id,
            "tenant_id": tenant_id,
            "lineage_id": lineage_id,
            "version": version,
            "run_id": run_id,
            "action": Jsonb(action),
            "digest": digest,
            "author_kind": author_kind,
            "created_by": created_by,
            "note": note,
        },
    ).fetchone()
    assert row is not None
    return proposal_from_row(row)


def proposal_by_id(conn: Connection, tenant_id: UUID, proposal_id: UUID) -> Proposal:
    row = conn.execute(
        q("gate/store/proposals", "proposal_by_id"), {"tenant_id": tenant_id, "id": proposal_id}
    ).fetchone()
    if row is None:
        raise NotFound(f"no proposal {proposal_id}")
    return proposal_from_row(row)


def latest_for_run(conn: Connection, tenant_id: UUID, run_id: UUID) -> Proposal | None:
    row = conn.execute(
        q("gate/store/proposals", "latest_for_run"), {"tenant_id": tenant_id, "run_id": run_id}
    ).fetchone()
    return proposal_from_row(row) if row else None


def lock_lineage(conn: Connection, lineage_id: UUID) -> None:
    """Serialize edits and decisions on one proposal's versions until the transaction ends."""
    conn.execute(q("gate/store/proposals", "lock_lineage"), {"lineage_id": lineage_id})


def latest_version(conn: Connection, tenant_id: UUID, lineage_id: UUID) -> int:
    row = conn.execute(
        q("gate/store/proposals", "latest_version"),
        {"tenant_id": tenant_id, "lineage_id": lineage_id},
    ).fetchone()
    assert row is not None and row["version"] is not None
    return int(row["version"])


@dataclass(frozen=True)
class LineageVersion:
    """A version of a proposal lineage, with its decision if it has one."""

    id: UUID
    version: int
    action: dict[str, Any]
    digest: str
    decision: str | None  # a ``Decision`` value


def lineage_versions(conn: Connection, tenant_id: UUID, lineage_id: UUID) -> list[LineageVersion]:
    """Oldest first."""
    params = {"tenant_id": tenant_id, "lineage_id": lineage_id}
    query = q("gate/store/proposals", "lineage_versions")
    return typed.every(conn, LineageVersion, query, params)


@dataclass(frozen=True)
class ListedProposal:
    """A proposal version in the tenant's list, with its decision and execution if any."""

    proposal: Proposal
    decision: str | None
    execution_id: UUID | None
    execution_state: str | None


def list_proposals(conn: Connection, tenant_id: UUID, limit: int) -> list[ListedProposal]:
    rows = conn.execute(
        q("gate/store/proposals", "list_proposals"), {"tenant_id": tenant_id, "limit": limit}
    ).fetchall()
    return [
        ListedProposal(
            proposal_from_row(row), row["decision"], row["execution_id"], row["execution_state"]
        )
        for row in rows
    ]


def insert_approval(
    conn: Connection,
    *,
    tenant_id: UUID,
    proposal_id: UUID,
    digest: str,
    decision: Decision,
    principal_id: UUID,
    reason: str | None,
    expires_at: datetime | None,
) -> Approval:
    row = conn.execute(
        q("gate/store/proposals", "insert_approval"),
        {
            "tenant_id": tenant_id,
            "proposal_id": proposal_id,
            "digest": digest,
            "decision": decision.value,
            "principal_id": principal_id,
            "reason": reason,
            "expires_at": expires_at,
        },
    ).fetchone()
    assert row is not None
    return _approval(row)


def approval_for_proposal(conn: Connection, tenant_id: UUID, proposal_id: UUID) -> Approval | None:
    row = conn.execute(
        q("gate/store/proposals", "approval_for_proposal"),
        {"tenant_id": tenant_id, "proposal_id": proposal_id},
    ).fetchone()
    return _approval(row) if row else None


def approval_by_id(conn: Connection, tenant_id: UUID, approval_id: UUID) -> Approval | None:
    row = conn.execute(
        q("gate/store/proposals", "approval_by_id"), {"tenant_id": tenant_id, "id": approval_id}
    ).fetchone()
    return _approval(row) if row else None


def database_now(conn: Connection) -> datetime:
    row = conn.execute(q("gate/store/proposals", "now")).fetchone()
    assert row is not None
    now: datetime = row["now"]
    return now
