"""Who may do what, decided from records alone (no I/O), written once as named checks.

``APPROVAL_CHECKS`` is data: ``approve`` runs them in order and refuses with the first failure's
error; the run and proposal pages evaluate all of them and show each green or red with its
reason. Both read the same ``ApprovalFacts``, so a page can never show a check as passing that
``approve`` refuses. ``check_approval_still_valid`` is the executor's re-check, on rows read
again right before the write. Kind-specific checks (a GitHub repository on the allowlist, labels
that exist) come from ``kind_checks``; what a GitLab issue or a drafted reply took from the
policy file is checked again by ``gate/domain/rechecks.py``, by the kinds' executors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from resolveflow.domain.counted import plural
from resolveflow.domain.records import Approval, Principal, Proposal, Role
from resolveflow.domain.vocabulary import Decision, ExecutionState
from resolveflow.errors import (
    AlreadyDecided,
    ApprovalExpired,
    DigestMismatch,
    InvalidTransition,
    NotAuthorized,
    NotFound,
    PolicyViolation,
    ResolveFlowError,
    SupersededProposal,
    Unavailable,
)
from resolveflow.gate.domain.actions import (
    AnyAction,
    EmailSendAction,
    GitHubIssueAction,
    GitHubIssueCloseDuplicateAction,
    GitHubIssueCreateAction,
    GitLabIssueCreateAction,
    action_digest,
    parse_action,
)
from resolveflow.gate.domain.rechecks import check_gitlab_fields
from resolveflow.policy_file import ProjectAlias


def require_role(principal: Principal, role: Role) -> None:
    if not principal.has(role):
        raise NotAuthorized(f"{principal.subject} does not have the {role.value} role")


def verified_action(proposal: Proposal) -> AnyAction:
    """Rebuild the action from its stored form and prove it still hashes to the stored digest."""
    action = parse_action(proposal.action)
    if action_digest(action) != proposal.digest:
        raise DigestMismatch("the stored proposal no longer matches its digest; it was altered")
    return action


@dataclass(frozen=True)
class ApprovalFacts:
    """Everything an approval decision depends on, read in the approver's tenant."""

    approver: Principal
    proposal: Proposal
    decision: Approval | None  # an earlier decision on this version
    latest_version: int
    supplied_digest: str | None  # None on a page: the page shows the digest to approve
    now: datetime
    window_closes_at: datetime
    allowed_repositories: frozenset[str]
    repository_labels: frozenset[str] | None  # None: not known here; checked before the write
    # (version, state) of a version of this lineage that was carried out, if any
    carried_out: tuple[int, ExecutionState] | None = None
    # Why the repository's labels could not be read from GitHub (then they are not known, and
    # "labels exist" fails rather than pass unchecked)
    labels_unreadable: str | None = None
    # email.send: the tenant's mailboxes in the policy file (None: not known here, and the
    # executor checks it right before sending), and those granted to the approver
    configured_mailboxes: frozenset[str] | None = None
    granted_mailboxes: frozenset[str] = frozenset()
    # email.send: whether this version is a draft version whose checks passed (None: no draft
    # made this lineage, so there is nothing to check it against)
    checked_draft: bool | None = None
    # gitlab.issue_create: the tenant's GitLab project aliases in the policy file now (None: not
    # known here, and the executor checks them right before the write)
    project_aliases: tuple[ProjectAlias, ...] | None = None


@dataclass(frozen=True)
class Check:
    """A named rule: ``run`` returns why it holds, or raises the error a person should see."""

    name: str
    run: Callable[[ApprovalFacts], str]


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    reason: str
    error: ResolveFlowError | None = None


def _same_tenant(facts: ApprovalFacts) -> str:
    if facts.approver.tenant_id != facts.proposal.tenant_id:
        raise NotFound("no such proposal")
    return "the proposal belongs to your tenant"


def _undecided(facts: ApprovalFacts) -> str:
    if facts.decision is not None:
        raise AlreadyDecided(f"this proposal version was already {facts.decision.decision}")
    return "no decision yet"


def _approver_role(facts: ApprovalFacts) -> str:
    require_role(facts.approver, Role.APPROVER)
    return f"{facts.approver.subject} has the approver role"


def _not_own_request(facts: ApprovalFacts) -> str:
    created_by = facts.proposal.created_by
    if created_by is not None and created_by == facts.approver.id:
        raise NotAuthorized("the requester of a proposal cannot approve it")
    return "you did not request it"


def _latest_version(facts: ApprovalFacts) -> str:
    if facts.proposal.version != facts.latest_version:
        raise SupersededProposal(
            f"version {facts.proposal.version} was superseded by version {facts.latest_version}"
        )
    return f"version {facts.proposal.version} is the latest"


def _nothing_carried_out(facts: ApprovalFacts) -> str:
    if facts.carried_out is not None:
        version, state = facts.carried_out
        raise InvalidTransition(
            f"version {version} of this proposal was already carried out ({state}); "
            "propose a new action instead"
        )
    return "no version of it was carried out"


def _digest_intact(facts: ApprovalFacts) -> str:
    verified_action(facts.proposal)
    return "the stored action still hashes to its digest"


def _digest_supplied(facts: ApprovalFacts) -> str:
    if facts.supplied_digest is None:
        return "approve with the digest shown"
    if facts.supplied_digest != facts.proposal.digest:
        raise DigestMismatch()
    return "the digest you reviewed is the proposal's"


def _window_open(facts: ApprovalFacts) -> str:
    if facts.now >= facts.window_closes_at:
        raise ApprovalExpired("this proposal is too old to approve; create a new version")
    return f"open until {facts.window_closes_at.isoformat(timespec='minutes')}"


def _repository_allowed(facts: ApprovalFacts) -> str:
    action = verified_action(facts.proposal)
    check_repository_allowed(action, facts.allowed_repositories)
    return f"{action.repository} is on the allowlist"


def _labels_exist(facts: ApprovalFacts) -> str:
    action = verified_action(facts.proposal)
    if not action.labels:
        return "no labels"
    if facts.labels_unreadable is not None:
        raise Unavailable(f"could not check labels: {facts.labels_unreadable}")
    if facts.repository_labels is None:
        return "checked against the repository right before the write"
    if isinstance(action, GitLabIssueCreateAction):
        # Only labels the project's alias allows were accepted when it was prepared; right
        # before the write the executor checks them against the alias in force and on GitLab.
        return "allowed for this project; checked against its alias and GitLab before the write"
    check_labels_exist(action, facts.repository_labels)
    return "every label exists in the repository"


def _alias_allows(facts: ApprovalFacts) -> str:
    action = verified_action(facts.proposal)
    assert isinstance(action, GitLabIssueCreateAction)
    if facts.project_aliases is None:
        return "checked against the project's alias right before the write"
    # Assignees mapped by username are looked up on GitLab by the executor; ids compare here.
    check_gitlab_fields(action, facts.project_aliases)
    return f"its labels and assignees are allowed for {action.target.project}"


def _mailbox_configured(facts: ApprovalFacts) -> str:
    action = verified_action(facts.proposal)
    assert isinstance(action, EmailSendAction)
    if facts.configured_mailboxes is None:
        return "checked against the policy file right before sending"
    check_mailbox_configured(action, facts.configured_mailboxes)
    return f"{action.mailbox} is one of the tenant's mailboxes"


def _mailbox_granted(facts: ApprovalFacts) -> str:
    action = verified_action(facts.proposal)
    assert isinstance(action, EmailSendAction)
    if action.mailbox.lower() not in facts.granted_mailboxes:
        raise NotAuthorized(
            f"{facts.approver.subject} may not approve mail from {action.mailbox} "
            "(no grant for that mailbox)"
        )
    return f"{facts.approver.subject} holds the grant for {action.mailbox}"


def _draft_checked(facts: ApprovalFacts) -> str:
    if facts.checked_draft is None:
        return "not drafted here: no request to check the message against"
    if not facts.checked_draft:
        # e.g. ``proposals edit`` on a drafted reply: the drafting checks never saw this text
        raise PolicyViolation(
            "this version was not checked as a draft (edited outside drafting): "
            "edit the reply on its draft instead (resolveflow mail edit)"
        )
    return "every drafting check passed on exactly this version"


COMMON_APPROVAL_CHECKS: tuple[Check, ...] = (
    Check("same tenant", _same_tenant),
    Check("undecided", _undecided),
    Check("approver role", _approver_role),
    Check("not your own request", _not_own_request),
    Check("latest version", _latest_version),
    Check("nothing carried out", _nothing_carried_out),
    Check("digest intact", _digest_intact),
    Check("digest you reviewed", _digest_supplied),
    Check("approval window", _window_open),
)
GITHUB_CHECKS: tuple[Check, ...] = (
    Check("repository allowed", _repository_allowed),
    Check("labels exist", _labels_exist),
)
# Closing as a duplicate sets no labels; its chains and circles are checked on GitHub at
# proposal time and again before each write (``gate/kinds/github_issue_close_duplicate.py``).
CLOSE_DUPLICATE_CHECKS: tuple[Check, ...] = (Check("repository allowed", _repository_allowed),)
# A GitLab project is reachable only through the tenant's project aliases (resolved by
# ``service/issues_prepare``): its labels and assignees must still be the alias's, now and again
# right before the write.
GITLAB_CHECKS: tuple[Check, ...] = (
    Check("allowed by the project alias", _alias_allows),
    Check("labels exist", _labels_exist),
)
# A message leaves from one of the tenant's configured mailboxes, approved by someone who holds
# the grant for it (the approver role alone is not enough).
EMAIL_CHECKS: tuple[Check, ...] = (
    Check("mailbox configured", _mailbox_configured),
    Check("mailbox granted", _mailbox_granted),
    Check("draft checks passed", _draft_checked),
)


def kind_checks(action: AnyAction) -> tuple[Check, ...]:
    """The checks a kind adds; both GitHub kinds write to an allowlisted repository."""
    match action:
        case GitHubIssueAction() | GitHubIssueCreateAction():
            return GITHUB_CHECKS
        case GitHubIssueCloseDuplicateAction():
            return CLOSE_DUPLICATE_CHECKS
        case GitLabIssueCreateAction():
            return GITLAB_CHECKS
        case EmailSendAction():
            return EMAIL_CHECKS


def approval_checks(proposal: Proposal) -> tuple[Check, ...]:
    try:
        return COMMON_APPROVAL_CHECKS + kind_checks(parse_action(proposal.action))
    except ResolveFlowError:
        return COMMON_APPROVAL_CHECKS  # "digest intact" fails and says why


def evaluate(facts: ApprovalFacts) -> list[CheckResult]:
    """Every check, each with its outcome: what a page shows."""
    results = []
    for check in approval_checks(facts.proposal):
        try:
            results.append(CheckResult(check.name, True, check.run(facts)))
        except ResolveFlowError as exc:
            results.append(CheckResult(check.name, False, exc.message, exc))
    return results


def check_can_approve(facts: ApprovalFacts) -> AnyAction:
    """Refuse with the first failing check's error; otherwise the verified action."""
    for check in approval_checks(facts.proposal):
        check.run(facts)
    return verified_action(facts.proposal)


def check_approval_still_valid(
    *,
    approval: Approval,
    approver: Principal | None,
    proposal: Proposal,
    latest_version: int,
    now: datetime,
) -> AnyAction:
    """The executor's re-check, on rows read again from the database right before writing."""
    if approval.decision != Decision.APPROVED:
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


def github_repository(action: AnyAction) -> str | None:
    """The GitHub repository ``action`` writes to; None for a kind that writes elsewhere."""
    if isinstance(action, GitLabIssueCreateAction | EmailSendAction):
        return None
    return action.repository


def check_repository_allowed(action: AnyAction, allowed: Iterable[str]) -> None:
    repository = github_repository(action)
    if repository is None:
        return  # not a GitHub repository: its executor checks the tenant's aliases or mailboxes
    if repository not in {name.lower() for name in allowed}:
        raise PolicyViolation(f"repository {repository} is not on the allowlist")


def check_labels_exist(action: AnyAction, repository_labels: Iterable[str]) -> None:
    known = set(repository_labels)
    missing = [label for label in action.labels if label not in known]
    if missing:
        raise PolicyViolation(
            f"{plural(len(missing), 'label')} {', '.join(missing)} "
            f"{plural(len(missing), 'does', 'do')} not exist in {action.repository}"
        )


def check_mailbox_configured(action: EmailSendAction, configured: Iterable[str]) -> None:
    """The mailbox is (still) one of the tenant's mailboxes in the policy file."""
    if action.mailbox.lower() not in {address.lower() for address in configured}:
        raise PolicyViolation(f"mailbox {action.mailbox} is not one of the tenant's mailboxes")
