"""Approving and rejecting one proposal version: the checks, the records, the audit.

``approval_facts`` reads everything the checks in ``domain.policy`` need; ``approve`` refuses on
the first failing check, and the pages show all of them from the same facts. Deciding on a run
(its lease, its pause, the follow-up) is ``service.decisions``; this module records decisions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

from resolveflow.domain.policy import (
    ApprovalFacts,
    CheckResult,
    check_can_approve,
    evaluate,
    require_role,
)
from resolveflow.domain.records import Approval, Execution, Principal, Proposal, Role
from resolveflow.domain.vocabulary import AuditEvent, Decision, ExecutionState
from resolveflow.errors import AlreadyDecided, InvalidInput, ResolveFlowError
from resolveflow.store import audit
from resolveflow.store import executions as execution_store
from resolveflow.store import proposals as proposal_store
from resolveflow.store import runs as run_store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)


def actor_of(principal: Principal) -> str:
    return f"principal:{principal.subject}"


@dataclass(frozen=True)
class ApprovalResult:
    approval: Approval
    execution: Execution


def approval_facts(
    conn: Connection,
    viewer: Principal,
    proposal: Proposal,
    *,
    supplied_digest: str | None,
    ttl_seconds: int,
) -> ApprovalFacts:
    """The records as they are now, inside the viewer's tenant (call under the lineage lock
    when deciding)."""
    labels: frozenset[str] | None = None
    if proposal.run_id is not None:
        snapshot = run_store.snapshot_for_run(conn, viewer.tenant_id, proposal.run_id)
        seen = ((snapshot or {}).get("raw") or {}).get("repository_labels")
        labels = frozenset(str(name) for name in seen) if isinstance(seen, list) else None
    return ApprovalFacts(
        approver=viewer,
        proposal=proposal,
        decision=proposal_store.approval_for_proposal(conn, viewer.tenant_id, proposal.id),
        latest_version=proposal_store.latest_version(conn, viewer.tenant_id, proposal.lineage_id),
        supplied_digest=supplied_digest,
        now=proposal_store.database_now(conn),
        window_closes_at=proposal.created_at + timedelta(seconds=ttl_seconds),
        allowed_repositories=frozenset(tenant_store.list_repositories(conn, viewer.tenant_id)),
        repository_labels=labels,
        carried_out=_carried_out(conn, viewer, proposal),
    )


def _carried_out(
    conn: Connection, viewer: Principal, proposal: Proposal
) -> tuple[int, ExecutionState] | None:
    done = execution_store.carried_out_version(conn, viewer.tenant_id, proposal.lineage_id)
    return (done.version, done.state) if done is not None else None


def checks_for(
    db: Database, viewer: Principal, proposal_id: UUID, ttl_seconds: int
) -> list[CheckResult]:
    """Every approval check for ``viewer`` on this proposal version, each passing or not."""
    with db.tenant(viewer.tenant_id) as conn:
        proposal = proposal_store.proposal_by_id(conn, viewer.tenant_id, proposal_id)
        facts = approval_facts(
            conn, viewer, proposal, supplied_digest=None, ttl_seconds=ttl_seconds
        )
    return evaluate(facts)


def approve(
    db: Database, principal: Principal, proposal_id: UUID, digest: str, ttl_seconds: int
) -> ApprovalResult:
    try:
        with db.tenant(principal.tenant_id) as conn:
            proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
            proposal_store.lock_lineage(conn, proposal.lineage_id)
            facts = approval_facts(
                conn, principal, proposal, supplied_digest=digest, ttl_seconds=ttl_seconds
            )
            check_can_approve(facts)
            approval = proposal_store.insert_approval(
                conn,
                tenant_id=principal.tenant_id,
                proposal_id=proposal.id,
                digest=digest,
                decision=Decision.APPROVED,
                principal_id=principal.id,
                reason=None,
                expires_at=facts.now + timedelta(seconds=ttl_seconds),
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
                event=AuditEvent.PROPOSAL_APPROVED,
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
        _audit_refusal(db, principal, proposal_id, AuditEvent.PROPOSAL_APPROVE_REFUSED, exc)
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
            existing = proposal_store.approval_for_proposal(conn, principal.tenant_id, proposal.id)
            if existing is not None:
                raise AlreadyDecided(f"this proposal version was already {existing.decision}")
            approval = proposal_store.insert_approval(
                conn,
                tenant_id=principal.tenant_id,
                proposal_id=proposal.id,
                digest=proposal.digest,
                decision=Decision.REJECTED,
                principal_id=principal.id,
                reason=reason,
                expires_at=None,
            )
            audit.record(
                conn,
                tenant_id=principal.tenant_id,
                actor=actor_of(principal),
                event=AuditEvent.PROPOSAL_REJECTED,
                subject_type="proposal",
                subject_id=proposal.id,
                run_id=proposal.run_id,
                details={"reason": reason, "digest": proposal.digest},
            )
    except ResolveFlowError as exc:
        _audit_refusal(db, principal, proposal_id, AuditEvent.PROPOSAL_REJECT_REFUSED, exc)
        raise
    return approval


def _audit_refusal(
    db: Database,
    principal: Principal,
    proposal_id: UUID,
    event: AuditEvent,
    exc: ResolveFlowError,
) -> None:
    """Refused decisions are security-relevant; record them in their own transaction."""
    try:
        with db.tenant(principal.tenant_id) as conn:
            audit.record(
                conn,
                tenant_id=principal.tenant_id,
                actor=actor_of(principal),
                event=event,
                subject_type="proposal",
                subject_id=proposal_id,
                details={"error": type(exc).__name__, "message": exc.message},
            )
    except ResolveFlowError:
        logger.warning("could not audit a refused decision", extra={"proposal": str(proposal_id)})
