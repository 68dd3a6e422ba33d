"""The executor's pre-write view of an execution, read in one query."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from resolveflow.domain.records import Approval, Execution, Principal, Proposal, Role
from resolveflow.domain.vocabulary import Decision
from resolveflow.errors import NotFound
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class ExecutionContext:
    proposal: Proposal
    approval: Approval | None
    approver: Principal | None  # has_github_token: they have their own token in the store
    latest_version: int
    allowed_repositories: list[str]
    now: datetime


def execution_context(conn: Connection, execution: Execution) -> ExecutionContext:
    row = conn.execute(
        q("gate/store/executions", "execution_context"),
        {"tenant_id": execution.tenant_id, "id": execution.id},
    ).fetchone()
    if row is None:
        raise NotFound(f"no execution {execution.id}")
    proposal = Proposal(
        id=row["p_id"],
        tenant_id=row["p_tenant_id"],
        lineage_id=row["lineage_id"],
        version=row["version"],
        action=row["action"],
        digest=row["p_digest"],
        created_by=row["created_by"],
        author_kind=row["author_kind"],
        created_at=row["p_created_at"],
        run_id=row["run_id"],
    )
    approval = None
    if row["a_id"] is not None:
        approval = Approval(
            id=row["a_id"],
            tenant_id=row["a_tenant_id"],
            proposal_id=row["a_proposal_id"],
            decision=Decision(row["decision"]),
            digest=row["a_digest"],
            principal_id=row["principal_id"],
            reason=row["reason"],
            decided_at=row["decided_at"],
            expires_at=row["expires_at"],
        )
    approver = None
    if row["pr_id"] is not None:
        approver = Principal(
            id=row["pr_id"],
            tenant_id=row["pr_tenant_id"],
            subject=row["subject"],
            roles=frozenset(Role(role) for role in row["roles"]),
            has_github_token=row["has_github_token"],
        )
    return ExecutionContext(
        proposal=proposal,
        approval=approval,
        approver=approver,
        latest_version=row["latest_version"],
        allowed_repositories=list(row["allowed"]),
        now=row["db_now"],
    )
