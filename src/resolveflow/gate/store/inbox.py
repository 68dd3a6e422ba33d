"""Read models of the web app: the inbox (runs with their latest proposal, and standalone
proposals waiting for a decision) and the audit trail."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class InboxRun:
    """A run with its classification and its latest proposal (none yet: the proposal's columns
    are None)."""

    run_id: UUID
    # Nullable columns, but every run is inserted with them (``triage.store.runs.insert_run``).
    repository: str
    issue_number: int
    status: str  # a ``RunStatus`` value
    created_at: datetime
    classification: str | None
    rule: str | None
    branch: str | None
    proposal_id: UUID | None
    digest: str | None
    version: int | None
    action: dict[str, Any] | None
    issue_title: str | None  # as the run saw the issue


@dataclass(frozen=True)
class TrailEvent:
    """An audit event, with the mailbox of the email it is about (None for anything else)."""

    id: int
    at: datetime
    actor: str
    event: str
    subject_type: str
    subject_id: str
    run_id: UUID | None
    details: dict[str, Any]
    mailbox: str | None


@dataclass(frozen=True)
class PendingProposal:
    """A standalone proposal's latest version, waiting for a decision."""

    proposal_id: UUID
    version: int
    digest: str
    action: dict[str, Any]
    created_at: datetime
    repository: str | None  # the action's target repository; an email has none


def inbox(
    conn: Connection,
    tenant_id: UUID,
    *,
    status: str | None,
    repository: str | None,
    classification: str | None,
    limit: int,
) -> list[InboxRun]:
    params = {
        "tenant_id": tenant_id,
        "status": status,
        "repository": repository,
        "classification": classification,
        "limit": limit,
    }
    return typed.every(conn, InboxRun, q("gate/store/inbox", "inbox"), params)


def run_repositories(conn: Connection, tenant_id: UUID) -> list[str]:
    rows = conn.execute(
        q("gate/store/inbox", "run_repositories"), {"tenant_id": tenant_id}
    ).fetchall()
    return [row["repository"] for row in rows]


def recent_audit_events(conn: Connection, tenant_id: UUID, limit: int) -> list[TrailEvent]:
    params = {"tenant_id": tenant_id, "limit": limit}
    return typed.every(conn, TrailEvent, q("gate/store/inbox", "recent_audit_events"), params)


def pending_proposals(
    conn: Connection, tenant_id: UUID, *, repository: str | None, limit: int
) -> list[PendingProposal]:
    """Standalone proposals (no run) whose latest version waits for a decision."""
    params = {"tenant_id": tenant_id, "repository": repository, "limit": limit}
    return typed.every(conn, PendingProposal, q("gate/store/inbox", "pending_proposals"), params)


def proposal_repositories(conn: Connection, tenant_id: UUID) -> list[str]:
    rows = conn.execute(
        q("gate/store/inbox", "proposal_repositories"), {"tenant_id": tenant_id}
    ).fetchall()
    return [row["repository"] for row in rows if row["repository"]]
