"""Read models of the web app: the inbox (runs with their latest proposal, and standalone
proposals waiting for a decision) and the audit trail."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def inbox(
    conn: Connection,
    tenant_id: UUID,
    *,
    status: str | None,
    repository: str | None,
    classification: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    return conn.execute(
        q("gate/store/inbox", "inbox"),
        {
            "tenant_id": tenant_id,
            "status": status,
            "repository": repository,
            "classification": classification,
            "limit": limit,
        },
    ).fetchall()


def run_repositories(conn: Connection, tenant_id: UUID) -> list[str]:
    rows = conn.execute(
        q("gate/store/inbox", "run_repositories"), {"tenant_id": tenant_id}
    ).fetchall()
    return [row["repository"] for row in rows]


def recent_audit_events(conn: Connection, tenant_id: UUID, limit: int) -> list[dict[str, Any]]:
    return conn.execute(
        q("gate/store/inbox", "recent_audit_events"), {"tenant_id": tenant_id, "limit": limit}
    ).fetchall()


def pending_proposals(
    conn: Connection, tenant_id: UUID, *, repository: str | None, limit: int
) -> list[dict[str, Any]]:
    """Standalone proposals (no run) whose latest version waits for a decision."""
    return conn.execute(
        q("gate/store/inbox", "pending_proposals"),
        {"tenant_id": tenant_id, "repository": repository, "limit": limit},
    ).fetchall()


def proposal_repositories(conn: Connection, tenant_id: UUID) -> list[str]:
    rows = conn.execute(
        q("gate/store/inbox", "proposal_repositories"), {"tenant_id": tenant_id}
    ).fetchall()
    return [row["repository"] for row in rows if row["repository"]]
