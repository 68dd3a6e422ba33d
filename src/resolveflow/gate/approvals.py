"""Approving and rejecting one proposal version: the checks, the records, the audit.

``approval_facts`` reads everything the checks in ``gate.domain.policy`` need; ``approve`` refuses on
the first failing check, and the pages show all of them from the same facts. The repository's
labels come from the run's evidence; a proposal without one (or evidence without them) has them
read from GitHub by ``RepositoryLabels``, before the decision's transaction opens. Deciding on a run
(its lease, its pause, the follow-up) is ``gate.decisions``; this module records decisions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.domain.records import Approval, Execution, Principal, Proposal, Role, actor_of
from resolveflow.domain.vocabulary import AuditEvent, Decision, ExecutionState
from resolveflow.errors import AlreadyDecided, InvalidInput, ResolveFlowError
from resolveflow.gate import kind_rules
from resolveflow.gate.domain.actions import parse_action
from resolveflow.gate.domain.policy import (
    ApprovalFacts,
    CheckResult,
    check_can_approve,
    evaluate,
    require_role,
)
from resolveflow.gate.run_records import runs
from resolveflow.gate.store import executions as execution_store
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.policy_file import ProjectAlias
from resolveflow.store import audit
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database
from resolveflow.telemetry import span

logger = logging.getLogger(__name__)


# tenant id -> the tenant's mailboxes in the policy file (lower case); wiring builds it. Without
# one, "mailbox configured" is left to the executor's check right before sending.
MailboxLookup = Callable[[UUID], frozenset[str]]
# tenant id -> the tenant's GitLab project aliases in the policy file now; without one, "allowed by
# the project alias" is left to the executor's check right before the write.
AliasLookup = Callable[[UUID], tuple[ProjectAlias, ...]]


@dataclass(frozen=True)
class ApprovalResult:
    approval: Approval
    execution: Execution


class RepositoryLabels:
    """A repository's labels read from GitHub (with the adapter's timeouts and the service
    token), each repository once for this object's life: make one per request or command."""

    def __init__(self, github: GitHub) -> None:
        self._github = github
        self._read: dict[str, frozenset[str] | ResolveFlowError] = {}

    def of(self, repository: str, tenant_id: UUID) -> frozenset[str]:
        """The labels as ``tenant_id`` may read them (a GitHub App's installation serves one
        tenant); an object serves one viewer, so its reads are that tenant's."""
        if repository not in self._read:
            try:
                github = acting_for(self._github, tenant_id)
                names = github.list_repository_labels(RepoName.parse(repository))
                self._read[repository] = frozenset(names)
            except ResolveFlowError as exc:  # said by the check, and not asked again
                self._read[repository] = exc
        found = self._read[repository]
        if isinstance(found, ResolveFlowError):
            raise found
        return found


@dataclass(frozen=True)
class LabelsRead:
    """What GitHub said of the labels: the names, or why they could not be read."""

    labels: frozenset[str] | None = None
    unreadable: str | None = None


def _evidence_labels(
    conn: Connection, viewer: Principal, proposal: Proposal
) -> frozenset[str] | None:
    """The repository's labels as the run's evidence saw them; None without a run or them."""
    if proposal.run_id is None:
        return None
    return runs().labels_seen(conn, viewer.tenant_id, proposal.run_id)


def read_labels(
    db: Database, viewer: Principal, proposal_id: UUID, source: RepositoryLabels | None
) -> LabelsRead:
    """The labels "labels exist" needs from GitHub: only when the proposal has labels and no
    run's evidence knows the repository's. Outside any transaction: a request may take a while."""
    if source is None:
        return LabelsRead()
    with db.tenant(viewer.tenant_id) as conn:
        proposal = proposal_store.proposal_by_id(conn, viewer.tenant_id, proposal_id)
        if _evidence_labels(conn, viewer, proposal) is not None:
            return LabelsRead()
        # Decided: "undecided" refuses it anyway, and a page following it asks again and again.
        if proposal_store.approval_for_proposal(conn, viewer.tenant_id, proposal.id):
            return LabelsRead()
    try:
        action = parse_action(proposal.action)
    except ResolveFlowError:
        return LabelsRead()  # "digest intact" fails and says why
    if not action.labels or action.kind == "gitlab.issue_create":
        return LabelsRead()  # GitLab labels: the alias's list, then the executor's read
    try:
        return LabelsRead(labels=source.of(action.repository, viewer.tenant_id))
    except ResolveFlowError as exc:
        return LabelsRead(unreadable=exc.message)


def approval_facts(
    conn: Connection,
    viewer: Principal,
    proposal: Proposal,
    *,
    supplied_digest: str | None,
    ttl_seconds: int,
    read: LabelsRead | None = None,
    configured_mailboxes: frozenset[str] | None = None,
    project_aliases: tuple[ProjectAlias, ...] | None = None,
) -> ApprovalFacts:
    """The records as they are now, inside the viewer's tenant (call under the lineage lock
    when deciding); ``read``: the labels from GitHub when the run's evidence has none."""
    labels = _evidence_labels(conn, viewer, proposal)
    read = read or LabelsRead()
    kind = kind_rules.approval_facts(conn, viewer, proposal)
    return ApprovalFacts(
        approver=viewer,
        proposal=proposal,
        decision=proposal_store.approval_for_proposal(conn, viewer.tenant_id, proposal.id),
        latest_version=proposal_store.latest_version(conn, viewer.tenant_id, proposal.lineage_id),
        supplied_digest=supplied_digest,
        now=proposal_store.database_now(conn),
        window_closes_at=proposal.created_at + timedelta(seconds=ttl_seconds),
        allowed_repositories=frozenset(tenant_store.list_repositories(conn, viewer.tenant_id)),
        repository_labels=labels if labels is not None else read.labels,
        carried_out=_carried_out(conn, viewer, proposal),
        labels_unreadable=read.unreadable if labels is None else None,
        configured_mailboxes=configured_mailboxes,
        granted_mailboxes=kind.granted_mailboxes,
        checked_draft=kind.checked_draft,
        project_aliases=project_aliases,
    )


def _carried_out(
    conn: Connection, viewer: Principal, proposal: Proposal
) -> tuple[int, ExecutionState] | None:
    done = execution_store.carried_out_version(conn, viewer.tenant_id, proposal.lineage_id)
    return (done.version, done.state) if done is not None else None


def checks_for(
    db: Database,
    viewer: Principal,
    proposal_id: UUID,
    ttl_seconds: int,
    labels: RepositoryLabels | None = None,
    mailboxes: MailboxLookup | None = None,
    aliases: AliasLookup | None = None,
) -> list[CheckResult]:
    """Every approval check for ``viewer`` on this proposal version, each passing or not.
    ``labels``: where to read the repository's labels when no run's evidence has them (without
    it, "labels exist" leaves them to the executor's check before the write)."""
    read = read_labels(db, viewer, proposal_id, labels)
    with db.tenant(viewer.tenant_id) as conn:
        proposal = proposal_store.proposal_by_id(conn, viewer.tenant_id, proposal_id)
        facts = approval_facts(
            conn,
            viewer,
            proposal,
            supplied_digest=None,
            ttl_seconds=ttl_seconds,
            read=read,
            configured_mailboxes=mailboxes(viewer.tenant_id) if mailboxes else None,
            project_aliases=aliases(viewer.tenant_id) if aliases else None,
        )
    return evaluate(facts)


def approve(
    db: Database,
    principal: Principal,
    proposal_id: UUID,
    digest: str,
    ttl_seconds: int,
    labels: RepositoryLabels | None = None,
    mailboxes: MailboxLookup | None = None,
    aliases: AliasLookup | None = None,
) -> ApprovalResult:
    with span("approval", proposal_id=str(proposal_id), tenant_id=str(principal.tenant_id)):
        lookups = (labels, mailboxes, aliases)
        return _approve(db, principal, proposal_id, digest, ttl_seconds, *lookups)


def _approve(
    db: Database,
    principal: Principal,
    proposal_id: UUID,
    digest: str,
    ttl_seconds: int,
    labels: RepositoryLabels | None,
    mailboxes: MailboxLookup | None,
    aliases: AliasLookup | None,
) -> ApprovalResult:
    try:
        read = read_labels(db, principal, proposal_id, labels)
        configured = mailboxes(principal.tenant_id) if mailboxes else None
        project_aliases = aliases(principal.tenant_id) if aliases else None
        with db.tenant(principal.tenant_id) as conn:
            proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
            proposal_store.lock_lineage(conn, proposal.lineage_id)
            facts = approval_facts(
                conn,
                principal,
                proposal,
                supplied_digest=digest,
                ttl_seconds=ttl_seconds,
                read=read,
                configured_mailboxes=configured,
                project_aliases=project_aliases,
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
            # Deciding on mail one may not read is refused, a rejection as well as an approval.
            kind_rules.require_readable(conn, principal, proposal.action)
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
