"""Proposals, edits (new versions) and decisions on them."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from resolveflow.domain.actions import action_digest, build_action, canonical_json, parse_action
from resolveflow.domain.policy import check_can_approve, require_role
from resolveflow.domain.records import Approval, Execution, Principal, Proposal, Role
from resolveflow.errors import (
    AlreadyDecided,
    InvalidInput,
    InvalidTransition,
    NotAuthorized,
    PolicyViolation,
    ResolveFlowError,
)
from resolveflow.store import audit
from resolveflow.store import executions as execution_store
from resolveflow.store import proposals as proposal_store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)


def actor_of(principal: Principal) -> str:
    return f"principal:{principal.subject}"


def _require_proposer(principal: Principal) -> None:
    if not (principal.has(Role.REQUESTER) or principal.has(Role.APPROVER)):
        raise NotAuthorized(f"{principal.subject} may not propose or edit actions")


def _check_allowed(conn: Connection, tenant_id: UUID, repository: str) -> None:
    if not tenant_store.repository_allowed(conn, tenant_id, repository):
        raise PolicyViolation(f"repository {repository} is not on this tenant's allowlist")


def create_proposal(
    db: Database,
    principal: Principal,
    *,
    repository: str,
    issue: int,
    comment: str | None,
    labels: list[str],
    note: str | None = None,
    run_id: UUID | None = None,
    author_kind: str = "principal",
) -> Proposal:
    _require_proposer(principal)
    action = build_action(repository, issue, comment, labels)
    proposal_id = uuid.uuid4()
    with db.tenant(principal.tenant_id) as conn:
        _check_allowed(conn, principal.tenant_id, action.target.repository)
        proposal = proposal_store.insert_proposal(
            conn,
            proposal_id=proposal_id,
            tenant_id=principal.tenant_id,
            lineage_id=proposal_id,
            version=1,
            action=action.canonical(),
            digest=action_digest(action),
            author_kind=author_kind,
            created_by=principal.id,
            run_id=run_id,
            note=note,
        )
        audit.record(
            conn,
            tenant_id=principal.tenant_id,
            actor=actor_of(principal),
            event="proposal.created",
            subject_type="proposal",
            subject_id=proposal.id,
            run_id=run_id,
            details={"digest": proposal.digest, "version": 1},
        )
    return proposal


def edit_proposal(
    db: Database,
    principal: Principal,
    proposal_id: UUID,
    *,
    comment: str | None = None,
    labels: list[str] | None = None,
    drop_comment: bool = False,
) -> Proposal:
    """Write a new version from the latest one; it needs its own approval."""
    _require_proposer(principal)
    with db.tenant(principal.tenant_id) as conn:
        base = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
        proposal_store.lock_lineage(conn, base.lineage_id)
        latest = proposal_store.latest_version(conn, principal.tenant_id, base.lineage_id)
        if execution_store.lineage_sending(conn, principal.tenant_id, base.lineage_id):
            raise InvalidTransition(
                "an approved version is being posted right now; wait for its outcome, then edit"
            )
        versions = proposal_store.lineage_versions(conn, principal.tenant_id, base.lineage_id)
        current = parse_action(versions[-1]["action"])
        new_comment = (
            None if drop_comment else (comment if comment is not None else current.comment)
        )
        new_labels = list(current.labels) if labels is None else labels
        action = build_action(
            current.target.repository, current.target.issue, new_comment, new_labels
        )
        if action_digest(action) == versions[-1]["digest"]:
            raise InvalidInput("the edit changes nothing")
        proposal = proposal_store.insert_proposal(
            conn,
            proposal_id=uuid.uuid4(),
            tenant_id=principal.tenant_id,
            lineage_id=base.lineage_id,
            version=latest + 1,
            action=action.canonical(),
            digest=action_digest(action),
            author_kind="principal",
            created_by=principal.id,
            run_id=base.run_id,
        )
        audit.record(
            conn,
            tenant_id=principal.tenant_id,
            actor=actor_of(principal),
            event="proposal.edited",
            subject_type="proposal",
            subject_id=proposal.id,
            run_id=base.run_id,
            details={
                "digest": proposal.digest,
                "version": proposal.version,
                "previous": str(versions[-1]["id"]),
            },
        )
    return proposal


@dataclass(frozen=True)
class ApprovalResult:
    approval: Approval
    execution: Execution


def approve(
    db: Database, principal: Principal, proposal_id: UUID, digest: str, ttl_seconds: int
) -> ApprovalResult:
    try:
        with db.tenant(principal.tenant_id) as conn:
            proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
            proposal_store.lock_lineage(conn, proposal.lineage_id)
            _ensure_undecided(conn, proposal)
            now = proposal_store.database_now(conn)
            action = check_can_approve(
                approver=principal,
                proposal=proposal,
                latest_version=proposal_store.latest_version(
                    conn, principal.tenant_id, proposal.lineage_id
                ),
                supplied_digest=digest,
                now=now,
                proposal_expires_at=proposal.created_at + timedelta(seconds=ttl_seconds),
            )
            _check_allowed(conn, principal.tenant_id, action.target.repository)
            approval = proposal_store.insert_approval(
                conn,
                tenant_id=principal.tenant_id,
                proposal_id=proposal.id,
                digest=digest,
                decision="approved",
                principal_id=principal.id,
                reason=None,
                expires_at=now + timedelta(seconds=ttl_seconds),
            )
            execution = execution_store.insert_execution(
                conn,
                tenant_id=principal.tenant_id,
                proposal_id=proposal.id,
                approval_id=approval.id,
                digest=digest,
            )
            audit.record(
                conn,
                tenant_id=principal.tenant_id,
                actor=actor_of(principal),
                event="proposal.approved",
                subject_type="proposal",
                subject_id=proposal.id,
                run_id=proposal.run_id,
                details={
                    "digest": digest,
                    "approval_id": str(approval.id),
                    "execution_id": str(execution.id),
                    "expires_at": approval.expires_at.isoformat() if approval.expires_at else None,
                },
            )
    except ResolveFlowError as exc:
        _audit_refusal(db, principal, proposal_id, "approve", exc)
        raise
    return ApprovalResult(approval=approval, execution=execution)


def reject(db: Database, principal: Principal, proposal_id: UUID, reason: str) -> Approval:
    reason = reason.strip()
    if not reason:
        raise InvalidInput("give a reason for the rejection")
    try:
        require_role(principal, Role.APPROVER)
        with db.tenant(principal.tenant_id) as conn:
            proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
            proposal_store.lock_lineage(conn, proposal.lineage_id)
            _ensure_undecided(conn, proposal)
            approval = proposal_store.insert_approval(
                conn,
                tenant_id=principal.tenant_id,
                proposal_id=proposal.id,
                digest=proposal.digest,
                decision="rejected",
                principal_id=principal.id,
                reason=reason,
                expires_at=None,
            )
            audit.record(
                conn,
                tenant_id=principal.tenant_id,
                actor=actor_of(principal),
                event="proposal.rejected",
                subject_type="proposal",
                subject_id=proposal.id,
                run_id=proposal.run_id,
                details={"reason": reason, "digest": proposal.digest},
            )
    except ResolveFlowError as exc:
        _audit_refusal(db, principal, proposal_id, "reject", exc)
        raise
    return approval


def _ensure_undecided(conn: Connection, proposal: Proposal) -> None:
    existing = proposal_store.approval_for_proposal(conn, proposal.tenant_id, proposal.id)
    if existing is not None:
        raise AlreadyDecided(f"this proposal version was already {existing.decision}")


def _audit_refusal(
    db: Database, principal: Principal, proposal_id: UUID, what: str, exc: ResolveFlowError
) -> None:
    """Refused decisions are security-relevant; record them in their own transaction."""
    try:
        with db.tenant(principal.tenant_id) as conn:
            audit.record(
                conn,
                tenant_id=principal.tenant_id,
                actor=actor_of(principal),
                event=f"proposal.{what}_refused",
                subject_type="proposal",
                subject_id=proposal_id,
                details={"error": type(exc).__name__, "message": exc.message},
            )
    except ResolveFlowError:
        logger.warning("could not audit a refused decision", extra={"proposal": str(proposal_id)})


def describe(db: Database, principal: Principal, proposal_id: UUID) -> dict[str, Any]:
    """Everything a reviewer needs to decide: the exact action, its digest, history and state."""
    with db.tenant(principal.tenant_id) as conn:
        proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
        approval = proposal_store.approval_for_proposal(conn, principal.tenant_id, proposal.id)
        execution = execution_store.execution_for_proposal(conn, principal.tenant_id, proposal.id)
        versions = proposal_store.lineage_versions(conn, principal.tenant_id, proposal.lineage_id)
    action = parse_action(proposal.action)
    return {
        "id": str(proposal.id),
        "lineage_id": str(proposal.lineage_id),
        "version": proposal.version,
        "latest_version": versions[-1]["version"],
        "digest": proposal.digest,
        "canonical": canonical_json(action),
        "action": proposal.action,
        "author_kind": proposal.author_kind,
        "created_at": proposal.created_at.isoformat(),
        "run_id": str(proposal.run_id) if proposal.run_id else None,
        "decision": approval.decision if approval else None,
        "approval": _approval_view(approval),
        "execution": {"id": str(execution.id), "state": execution.state.value}
        if execution
        else None,
        "versions": [
            {
                "id": str(v["id"]),
                "version": v["version"],
                "digest": v["digest"],
                "decision": v["decision"],
            }
            for v in versions
        ],
    }


def _approval_view(approval: Approval | None) -> dict[str, Any] | None:
    if approval is None:
        return None
    return {
        "id": str(approval.id),
        "decision": approval.decision,
        "principal_id": str(approval.principal_id),
        "reason": approval.reason,
        "decided_at": approval.decided_at.isoformat(),
        "expires_at": approval.expires_at.isoformat() if approval.expires_at else None,
    }


def list_proposals(db: Database, principal: Principal, limit: int = 50) -> list[dict[str, Any]]:
    with db.tenant(principal.tenant_id) as conn:
        rows = proposal_store.list_proposals(conn, principal.tenant_id, limit)
    return [
        {
            "id": str(row["id"]),
            "version": row["version"],
            "digest": row["digest"],
            "target": f"{row['action']['target']['repository']}#{row['action']['target']['issue']}",
            "decision": row["decision"],
            "execution_id": str(row["execution_id"]) if row["execution_id"] else None,
            "execution_state": row["execution_state"],
            "created_at": row["created_at"].isoformat(),
        }
        for row in rows
    ]
