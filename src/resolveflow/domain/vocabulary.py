"""The words of the domain as types: run and execution states, decisions, attempts, audit events.

Strings stored in the database are these enums' values; the database's CHECK constraints and the
execution-state trigger allow exactly these (tests compare them).
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    EXECUTING = "executing"
    COMPLETED = "completed"
    NO_ACTION = "no_action"
    REJECTED = "rejected"
    FAILED = "failed"

    @property
    def is_settled(self) -> bool:
        return self in {self.COMPLETED, self.NO_ACTION, self.REJECTED, self.FAILED}


class ExecutionState(StrEnum):
    PENDING = "pending"  # approved, waiting to be claimed (possibly not before a rate-limit reset)
    SENDING = "sending"  # claimed under a lease; a write may be in flight
    SENT = "sent"
    PARTIAL = "partial"  # part of the action was written, the rest definitely refused
    FAILED = "failed"  # definitely not written (refused by policy or by the provider)
    UNKNOWN = "unknown"  # may or may not have been written; reconciliation or a person decides
    NOT_SENT = "not_sent"  # a person confirmed it was not written

    @property
    def is_final(self) -> bool:
        return self in {self.SENT, self.PARTIAL, self.FAILED, self.NOT_SENT}


_S = ExecutionState
# Every state move the executor, the reconciler and a person may make; the trigger
# rf_guard_execution_state allows exactly these (tests/core/integration/test_vocabulary.py).
EXECUTION_MOVES: frozenset[tuple[ExecutionState, ExecutionState]] = frozenset(
    {
        (_S.PENDING, _S.PENDING),  # a repeated release
        (_S.PENDING, _S.SENDING),  # claim
        (_S.SENDING, _S.SENDING),  # lease renewal, a step recorded
        (_S.SENDING, _S.SENT),
        (_S.SENDING, _S.PARTIAL),
        (_S.SENDING, _S.FAILED),
        (_S.SENDING, _S.UNKNOWN),
        (_S.SENDING, _S.PENDING),  # deferred: rate limit, unreachable, nothing sent
        (_S.UNKNOWN, _S.UNKNOWN),  # reconciliation could not prove anything yet
        (_S.UNKNOWN, _S.SENT),  # reconciliation or a person: it was written
        (_S.UNKNOWN, _S.PARTIAL),
        (_S.UNKNOWN, _S.NOT_SENT),  # a person: it was not written
        (_S.UNKNOWN, _S.PENDING),  # reconciliation: no request had left
    }
)


def can_move(before: ExecutionState, after: ExecutionState) -> bool:
    return (before, after) in EXECUTION_MOVES


class Decision(StrEnum):
    APPROVED = "approved"
    REJECTED = "rejected"


class AttemptStep(StrEnum):
    """One request an execution makes; each is preceded by a committed attempt row."""

    COMMENT = "comment"  # github.issue
    LABELS = "labels"  # github.issue
    CREATE = "create"  # github.issue_create, gitlab.issue_create
    SEND = "send"  # email.send: one SMTP session that hands the message over
    CLOSE = "close"  # github.issue_close_duplicate, after its notice (a comment) and the grace


class AttemptOutcome(StrEnum):
    SENT = "sent"
    REJECTED = "rejected"  # definitely refused; nothing written
    RATE_LIMITED = "rate_limited"  # nothing written; try again later
    UNAVAILABLE = "unavailable"  # could not be sent at all
    UNKNOWN = "unknown"  # may have been written

    @property
    def may_have_written(self) -> bool:
        return self in {self.SENT, self.UNKNOWN}


class Credential(StrEnum):
    APPROVER = "approver"  # the approver's own token
    SERVICE = "service"  # the service token


class AuditEvent(StrEnum):
    TENANT_CREATED = "tenant.created"
    PRINCIPAL_CREATED = "principal.created"
    PRINCIPAL_ROLES_SET = "principal.roles_set"
    PRINCIPAL_TOKEN_REVOKED = "principal.token_revoked"  # noqa: S105 - an event name
    MAILBOX_GRANTED = "mailbox.granted"
    MAILBOX_REVOKED = "mailbox.revoked"
    MAILBOX_CREDENTIAL_SET = "mailbox.credential_set"
    NOTIFY_WEBHOOK_SET = "notify.webhook_set"
    NOTIFY_WEBHOOK_REMOVED = "notify.webhook_removed"
    REPOSITORY_ALLOWED = "repository.allowed"
    REPOSITORY_REMOVED = "repository.removed"
    # an operator's `github-app install-map`: the App's installation now serves this tenant
    # (in the tenant it left, ..._moved_away)
    APP_INSTALLATION_MAPPED = "github_app.installation_mapped"
    APP_INSTALLATION_MOVED_AWAY = "github_app.installation_moved_away"
    SESSION_STARTED = "session.started"
    SESSION_ENDED = "session.ended"
    WEBHOOK_RUN_REFUSED = "webhook.run_refused"
    WEBHOOK_SECRET_SET = "webhook.secret_set"  # noqa: S105 - an event name, not a secret
    WEBHOOK_SECRET_REMOVED = "webhook.secret_removed"  # noqa: S105 - an event name
    RUN_STARTED = "run.started"
    RUN_CLASSIFIED = "run.classified"
    RUN_ROUTED = "run.routed"
    RUN_RESUME_REFUSED = "run.resume_refused"
    RUN_EVIDENCE = "run.evidence"
    RUN_INVESTIGATED = "run.investigated"
    RUN_NO_ACTION = "run.no_action"
    RUN_FAILED = "run.failed"
    PROPOSAL_CREATED = "proposal.created"
    PROPOSAL_EDITED = "proposal.edited"
    PROPOSAL_APPROVED = "proposal.approved"
    PROPOSAL_REJECTED = "proposal.rejected"
    PROPOSAL_APPROVE_REFUSED = "proposal.approve_refused"
    PROPOSAL_REJECT_REFUSED = "proposal.reject_refused"
    EXECUTION_SENT = "execution.sent"
    EXECUTION_PARTIAL = "execution.partial"
    EXECUTION_FAILED = "execution.failed"
    EXECUTION_UNKNOWN = "execution.unknown"
    EXECUTION_REFUSED = "execution.refused"
    EXECUTION_DEFERRED = "execution.deferred"
    EXECUTION_COMMENT_POSTED = "execution.comment_posted"
    # github.issue_close_duplicate: the notice is out and the grace period is being waited out;
    # someone objected (or the issue was closed meanwhile) and nothing was closed
    EXECUTION_GRACE_STARTED = "execution.grace_started"
    EXECUTION_OBJECTED = "execution.objected"
    EXECUTION_DELIVERED_EARLIER = "execution.delivered_earlier"
    EXECUTION_RECONCILE_FAILED = "execution.reconcile_failed"
    EXECUTION_REQUEUED = "execution.requeued"
    EXECUTION_RESOLVED = "execution.resolved"
    EXECUTION_RECONCILED_SENT = "execution.reconciled_sent"
    EXECUTION_RECONCILED_PARTIAL = "execution.reconciled_partial"
    EXECUTION_RECONCILED_UNKNOWN = "execution.reconciled_unknown"

    @classmethod
    def execution_ended(cls, state: ExecutionState) -> AuditEvent:
        return cls(f"execution.{state.value}")

    @classmethod
    def reconciled(cls, state: ExecutionState) -> AuditEvent:
        return cls(f"execution.reconciled_{state.value}")


class LinkEvent(StrEnum):
    """The audit trail's words for a one-time sign-in link (subject type ``sign_in_link``)."""

    ISSUED = "sign_in_link.issued"
    USED = "sign_in_link.used"
    REFUSED = "sign_in_link.refused"
    # Refusals past a limit (per address, per tenant) are not recorded one by one: this, once
    # per window (accounts/refusal_limits.py).
    REFUSALS_LIMITED = "sign_in_link.refusals_limited"


# The principal that GitHub's webhooks act as in each tenant (``triage/webhooks.py``).
WEBHOOK_SUBJECT = "github-webhook"


class ActionKind(StrEnum):
    """What an action does to an outside system (its models: ``gate/domain/actions/``)."""

    GITHUB_ISSUE = "github.issue"  # comment and/or labels on an existing issue
    GITHUB_ISSUE_CREATE = "github.issue_create"  # a new issue
    GITLAB_ISSUE_CREATE = "gitlab.issue_create"  # a new issue in a GitLab project
    # a notice, then after a grace period the close of an issue as a duplicate of another
    GITHUB_ISSUE_CLOSE_DUPLICATE = "github.issue_close_duplicate"
    EMAIL_SEND = "email.send"  # one exact message from a tenant's mailbox over SMTP


class ReviewOutcome(StrEnum):
    """What the code's review of an investigation decided (``triage/domain/review.py``)."""

    APPROVE = "approve"
    ESCALATE = "escalate"


class SuggestionKind(StrEnum):
    """What ResolveFlow suggested, as the team's decisions are counted (``gate/feedback.py``):
    a proposal a product prepared, and each label it proposed. A person's own proposal is no
    suggestion."""

    RULE_COMMENT = "rule_comment"  # triage, decided by a rule (a failing CI's comment)
    DUPLICATE = "duplicate"  # triage's investigation: related issues, a likely duplicate
    REVIEW_REQUEST = "review_request"  # triage sent it to a person (a vague report)
    LABEL = "label"  # one label of a proposal, counted per label
    MISSING_FACTS = "missing_facts"  # triage's request for what a bug report lacks
    DOCS = "docs"  # triage's cited pages of the documentation that answer a question
    DRAFT = "draft"  # a reply drafted from a mailbox's past replies
    REFINE_SUMMARY = "refine_summary"  # refine's enrichment of a ticket
    NEW_ISSUE = "new_issue"  # an issue prepared by Ask (issues prepare, the planner, a gap)
    RELATED = "related"  # triage's part: earlier issues that look related, linked
    FILES = "files"  # triage's part: the files a fix would likely touch (internal)


class Confidence(StrEnum):
    """How sure a suggestion is, in the three words GitHub's issue API and its agents use
    (``triage/domain/label_notes.py`` says how a part's score and band map to one)."""

    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"


class SuggestedPart(StrEnum):
    """What an approved execution sent to GitHub as a suggestion (``suggest: true``)."""

    LABEL = "label"
    DUPLICATE = "duplicate"  # a close as a duplicate


class GitHubVerdict(StrEnum):
    """What a maintainer did, in GitHub, with one suggestion ResolveFlow sent there."""

    ACCEPTED = "accepted"
    DISMISSED = "dismissed"


class SuggestionMode(StrEnum):
    """Where a kind of suggestion goes in one place (the policy file's ``suggestions`` table,
    ``gate/domain/quiet.py``)."""

    ON = "on"  # into the inbox, unless its measured acceptance moves it to the digest
    ALWAYS = "always"  # into the inbox, whatever its acceptance
    DIGEST = "digest"  # recorded, listed in the daily digest, not in the inbox
    OFF = "off"  # not proposed at all; the run or the command says so


class SuggestionOutcome(StrEnum):
    """How the team decided one suggestion."""

    APPROVED = "approved"  # approved as proposed
    EDITED = "edited"  # approved after an edit
    REJECTED = "rejected"  # rejected, or (a label) removed by the edit that was approved


class NotificationKind(StrEnum):
    """Which message about a waiting proposal (``notify/``): each goes out once per lineage."""

    WAITING = "waiting"  # a proposal waits for a decision
    CLOSING = "closing"  # its approval window closes soon


class NotificationState(StrEnum):
    """Where one notification's delivery stands."""

    PENDING = "pending"  # to send, or to send again at its next attempt
    SENT = "sent"
    FAILED = "failed"  # gave up after the last attempt
    DROPPED = "dropped"  # decided, or its window closed, before it went out


# The notes by which the products mark what they prepared on a person's behalf: the proposal's
# author is that person, so the note is what tells a suggestion from the person's own proposal.
REFINE_PROPOSAL_NOTE = "refine enrichment"
PREPARED_ISSUE_NOTE_PREFIX = "project "
COVERAGE_GAP_NOTE = "coverage gap"  # Ask's issue for questions the documents do not answer
