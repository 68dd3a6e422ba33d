"""Who may do what, decided from records alone (no I/O).

The same checks run twice: when a person approves, and again in the executor right before the write,
against rows re-read from the database. Each check raises the error a person should see.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from resolveflow.domain.actions import GitHubIssueAction, action_digest, parse_action
from resolveflow.domain.records import Approval, Principal, Proposal, Role
from resolveflow.errors import (
    ApprovalExpired,
    DigestMismatch,
    NotAuthorized,
    NotFound,
    PolicyViolation,
    SupersededProposal,
)


def require_role(principal: Principal, role: Role) -> None:
    if not principal.has(role):
        raise NotAuthorized(f"{principal.subject} does not have the {role.value} role")


def verified_action(proposal: Proposal) -> GitHubIssueAction:
    """Rebuild the action from its stored form and prove it still hashes to the stored digest."""
    action = parse_action(proposal.action)
    if action_digest(action) != proposal.digest:
        raise DigestMismatch("the stored proposal no longer matches its digest; it was altered")
    return action


def check_can_approve(
    *,
    approver: Principal,
    proposal: Proposal,
    latest_version: int,
    supplied_digest: str,
    now: datetime,
    proposal_expires_at: datetime,
) -> GitHubIssueAction:
    """Everything that must hold for ``approver`` to approve ``proposal`` with ``supplied_digest``."""
    if approver.tenant_id != proposal.tenant_id:
        raise NotFound("no such proposal")
    require_role(approver, Role.APPROVER)
    if proposal.created_by is not None and proposal.created_by == approver.id:
        raise NotAuthorized("the requester of a proposal cannot approve it")
    if proposal.version != latest_version:
        raise SupersededProposal(
            f"version {proposal.version} was superseded by version {latest_version}"
        )
    action = verified_action(proposal)
    if supplied_digest != proposal.digest:
        raise DigestMismatch()
    if now >= proposal_expires_at:
        raise ApprovalExpired("this proposal is too old to approve; create a new version")
    return action


def check_approval_still_valid(
    *,
    approval: Approval,
    approver: Principal | None,
    proposal: Proposal,
    latest_version: int,
    now: datetime,
) -> GitHubIssueAction:
    """The executor's re-check, on rows read again from the database right before writing."""
    if approval.decision != "approved":
        raise NotAuthorized("the proposal was not approved")
    if approval.proposal_id != proposal.id or approval.tenant_id != proposal.tenant_id:
        raise NotAuthorized("the approval belongs to another proposal")
    if approver is None or approver.tenant_id != proposal.tenant_id:
        raise NotAuthorized("the approver no longer exists in this tenant")
    require_role(approver, Role.APPROVER)
    if proposal.created_by is not None and approver.id == proposal.created_by:
        raise NotAuthorized("the requester of a proposal cannot approve it")
    if approval.expires_at is not None and now >= approval.expires_at:
        raise ApprovalExpired()
    if proposal.version != latest_version:
        raise SupersededProposal(
            f"version {proposal.version} was superseded by version {latest_version} after approval"
        )
    action = verified_action(proposal)
    if approval.digest != proposal.digest:
        raise DigestMismatch("the approved digest differs from the proposal's digest")
    return action


def check_repository_allowed(action: GitHubIssueAction, allowed: Iterable[str]) -> None:
    if action.target.repository not in {name.lower() for name in allowed}:
        raise PolicyViolation(f"repository {action.target.repository} is not on the allowlist")


def check_labels_exist(action: GitHubIssueAction, repository_labels: Iterable[str]) -> None:
    known = set(repository_labels)
    missing = [label for label in action.labels if label not in known]
    if missing:
        raise PolicyViolation(
            f"label(s) {', '.join(missing)} do not exist in {action.target.repository}"
        )
