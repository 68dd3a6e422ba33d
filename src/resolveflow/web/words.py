"""The plain words a person reads for the domain's vocabulary: one table per enum, in one place.

The pages never show an enum's value (``awaiting_approval``, ``not_sent``); they show these words,
through the ``words`` filter, and the CLI prints the same words (``cli/plain.py``).
``tests/core/web/test_web_words.py`` checks that every member of every enum listed in ``TABLES``
has its words, so a new state cannot reach a page (or a command's output) as a machine word.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from resolveflow.domain.vocabulary import (
    AttemptOutcome,
    AttemptStep,
    AuditEvent,
    Confidence,
    Credential,
    Decision,
    ExecutionState,
    GitHubVerdict,
    LinkEvent,
    NotificationKind,
    NotificationState,
    ReviewOutcome,
    RunStatus,
    SuggestedPart,
    SuggestionKind,
    SuggestionMode,
    SuggestionOutcome,
)
from resolveflow.gate import outcome_words as outcomes
from resolveflow.gate.domain.actions import ActionKind
from resolveflow.gate.domain.disclosure import Hidden
from resolveflow.policy_file import Classification
from resolveflow.triage.domain.missing_facts import MissingFact
from resolveflow.triage.domain.parts import PartName

RUN_STATUS: dict[RunStatus, str] = {
    RunStatus.RUNNING: "gathering evidence",
    RunStatus.AWAITING_APPROVAL: "waiting for a decision",
    RunStatus.EXECUTING: "approved, being carried out",
    RunStatus.COMPLETED: "done",
    RunStatus.NO_ACTION: "nothing to do",
    RunStatus.REJECTED: "rejected",
    RunStatus.FAILED: "failed",
}
# Shared with the CLI's outcome sentence (gate/outcome_words.py).
EXECUTION_STATE: dict[ExecutionState, str] = outcomes.EXECUTION_STATE
DECISION: dict[Decision, str] = {Decision.APPROVED: "approved", Decision.REJECTED: "rejected"}
ATTEMPT_STEP: dict[AttemptStep, str] = {
    AttemptStep.COMMENT: "post the comment",
    AttemptStep.LABELS: "add the labels",
    AttemptStep.CREATE: "create the issue",
    AttemptStep.SEND: "send the message",
    AttemptStep.CLOSE: "close the issue as a duplicate",
}
ATTEMPT_OUTCOME: dict[AttemptOutcome, str] = {
    AttemptOutcome.SENT: "done",
    AttemptOutcome.REJECTED: "refused",
    AttemptOutcome.RATE_LIMITED: "rate limited, to retry",
    AttemptOutcome.UNAVAILABLE: "could not be sent",
    AttemptOutcome.UNKNOWN: "no answer: may have been written",
}
CREDENTIAL: dict[Credential, str] = {
    Credential.APPROVER: "the approver's own token",
    Credential.SERVICE: "the service account",
}
CLASSIFICATION: dict[Classification, str] = {
    Classification.DETERMINISTIC: "decided by a rule",
    Classification.AI_INVESTIGATION: "needs more information",
    Classification.HUMAN_REVIEW: "for a person to review",
}
ACTION_KIND: dict[ActionKind, str] = {
    ActionKind.GITHUB_ISSUE: "comment / labels",
    ActionKind.GITHUB_ISSUE_CREATE: "new issue",
    ActionKind.GITLAB_ISSUE_CREATE: "new GitLab issue",
    ActionKind.EMAIL_SEND: "email reply",
    ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE: "close as duplicate",
}
REVIEW_OUTCOME: dict[ReviewOutcome, str] = {
    ReviewOutcome.APPROVE: "may be approved",
    ReviewOutcome.ESCALATE: "escalated to a person",
}
HIDDEN: dict[Hidden, str] = {kind: kind.value.replace("_", " ") for kind in Hidden}
AUDIT_EVENT: dict[AuditEvent, str] = {
    AuditEvent.TENANT_CREATED: "tenant created",
    AuditEvent.PRINCIPAL_CREATED: "person added",
    AuditEvent.PRINCIPAL_ROLES_SET: "roles changed",
    AuditEvent.PRINCIPAL_TOKEN_REVOKED: "API token revoked",
    AuditEvent.REPOSITORY_ALLOWED: "repository allowed",
    AuditEvent.REPOSITORY_REMOVED: "repository removed",
    AuditEvent.APP_INSTALLATION_MAPPED: "GitHub App installation mapped here",
    AuditEvent.APP_INSTALLATION_MOVED_AWAY: "GitHub App installation moved away",
    AuditEvent.SESSION_STARTED: "signed in",
    AuditEvent.SESSION_ENDED: "signed out",
    AuditEvent.WEBHOOK_RUN_REFUSED: "webhook run refused",
    AuditEvent.WEBHOOK_SECRET_SET: "webhook secret set",
    AuditEvent.WEBHOOK_SECRET_REMOVED: "webhook secret removed",
    AuditEvent.RUN_STARTED: "run started",
    AuditEvent.RUN_CLASSIFIED: "classified",
    AuditEvent.RUN_ROUTED: "routed",
    AuditEvent.RUN_RESUME_REFUSED: "resume refused",
    AuditEvent.RUN_EVIDENCE: "evidence gathered",
    AuditEvent.RUN_INVESTIGATED: "investigated",
    AuditEvent.RUN_NO_ACTION: "nothing to do",
    AuditEvent.RUN_FAILED: "run failed",
    AuditEvent.PROPOSAL_CREATED: "proposal written",
    AuditEvent.PROPOSAL_EDITED: "proposal edited",
    AuditEvent.PROPOSAL_APPROVED: "approved",
    AuditEvent.PROPOSAL_REJECTED: "rejected",
    AuditEvent.PROPOSAL_APPROVE_REFUSED: "approval refused",
    AuditEvent.PROPOSAL_REJECT_REFUSED: "rejection refused",
    AuditEvent.EXECUTION_SENT: "posted",
    AuditEvent.EXECUTION_PARTIAL: "partly done",
    AuditEvent.EXECUTION_FAILED: "could not be sent",
    AuditEvent.EXECUTION_UNKNOWN: "outcome unknown",
    AuditEvent.EXECUTION_REFUSED: "refused by the executor",
    AuditEvent.EXECUTION_DEFERRED: "deferred",
    AuditEvent.EXECUTION_COMMENT_POSTED: "comment posted",
    AuditEvent.EXECUTION_GRACE_STARTED: "notice posted; waiting out the grace period",
    AuditEvent.EXECUTION_OBJECTED: "not closed: someone objected",
    AuditEvent.EXECUTION_DELIVERED_EARLIER: "already delivered earlier",
    AuditEvent.EXECUTION_RECONCILE_FAILED: "reconciliation failed",
    AuditEvent.EXECUTION_REQUEUED: "queued again",
    AuditEvent.EXECUTION_RESOLVED: "settled by a person",
    AuditEvent.EXECUTION_RECONCILED_SENT: "found posted",
    AuditEvent.EXECUTION_RECONCILED_PARTIAL: "found partly done",
    AuditEvent.EXECUTION_RECONCILED_UNKNOWN: "still unknown",
    AuditEvent.MAILBOX_GRANTED: "mailbox granted",
    AuditEvent.MAILBOX_REVOKED: "mailbox grant taken away",
    AuditEvent.MAILBOX_CREDENTIAL_SET: "mailbox secret stored",
    AuditEvent.NOTIFY_WEBHOOK_SET: "notification webhook set",
    AuditEvent.NOTIFY_WEBHOOK_REMOVED: "notification webhook removed",
}

LINK_EVENT: dict[LinkEvent, str] = {
    LinkEvent.ISSUED: "sign-in link issued",
    LinkEvent.USED: "sign-in link used",
    LinkEvent.REFUSED: "sign-in link refused",
    LinkEvent.REFUSALS_LIMITED: "sign-in link refused too often: further refusals not recorded",
}

SUGGESTION_KIND: dict[SuggestionKind, str] = {
    SuggestionKind.RULE_COMMENT: "a rule's comment",
    SuggestionKind.DUPLICATE: "a likely duplicate",
    SuggestionKind.REVIEW_REQUEST: "a request for a person's review",
    SuggestionKind.LABEL: "a label",
    SuggestionKind.MISSING_FACTS: "a request for the facts a report lacks",
    SuggestionKind.DOCS: "the documentation that answers a question",
    SuggestionKind.DRAFT: "a reply draft",
    SuggestionKind.REFINE_SUMMARY: "a refine summary",
    SuggestionKind.NEW_ISSUE: "a prepared new issue",
    SuggestionKind.RELATED: "earlier issues that look related",
    SuggestionKind.FILES: "the files a fix would likely touch",
}
SUGGESTION_MODE: dict[SuggestionMode, str] = {
    SuggestionMode.ON: "in the inbox unless its acceptance is low",
    SuggestionMode.ALWAYS: "always in the inbox",
    SuggestionMode.DIGEST: "in the daily digest only",
    SuggestionMode.OFF: "not suggested",
}
SUGGESTION_OUTCOME: dict[SuggestionOutcome, str] = {
    SuggestionOutcome.APPROVED: "approved as proposed",
    SuggestionOutcome.EDITED: "approved after an edit",
    SuggestionOutcome.REJECTED: "rejected",
}
PART_NAME: dict[PartName, str] = {
    PartName.LABELS: "labels",
    PartName.RELATED: "related issues",
    PartName.DUPLICATE: "a likely duplicate",
    PartName.FILES: "likely files",
    PartName.DOCS: "the docs that answer it",
    PartName.MISSING_FACTS: "a request for the missing facts",
    PartName.FAILING_CHECKS: "the failing checks",
}
NOTIFICATION_KIND: dict[NotificationKind, str] = {
    NotificationKind.WAITING: "waiting for a decision",
    NotificationKind.CLOSING: "approval window closing soon",
}
NOTIFICATION_STATE: dict[NotificationState, str] = {
    NotificationState.PENDING: "to be sent",
    NotificationState.SENT: "sent",
    NotificationState.FAILED: "given up on",
    NotificationState.DROPPED: "not sent (no longer waiting)",
}

CONFIDENCE: dict[Confidence, str] = {
    Confidence.LOW: "low confidence",
    Confidence.MEDIUM: "medium confidence",
    Confidence.HIGH: "high confidence",
}
SUGGESTED_PART: dict[SuggestedPart, str] = {
    SuggestedPart.LABEL: "a label",
    SuggestedPart.DUPLICATE: "a close as a duplicate",
}
GITHUB_VERDICT: dict[GitHubVerdict, str] = {
    GitHubVerdict.ACCEPTED: "accepted in GitHub",
    GitHubVerdict.DISMISSED: "dismissed in GitHub",
}
MISSING_FACT: dict[MissingFact, str] = {
    MissingFact.VERSION: "the version",
    MissingFact.REPRODUCTION: "a way to reproduce it",
    MissingFact.ERROR_OUTPUT: "what it printed",
    MissingFact.ENVIRONMENT: "the environment",
}

# Every enum a page shows, with its words; a test checks each member has an entry.
TABLES: dict[type[StrEnum], Mapping[Any, str]] = {
    RunStatus: RUN_STATUS,
    ExecutionState: EXECUTION_STATE,
    Decision: DECISION,
    AttemptStep: ATTEMPT_STEP,
    AttemptOutcome: ATTEMPT_OUTCOME,
    Credential: CREDENTIAL,
    Classification: CLASSIFICATION,
    ActionKind: ACTION_KIND,
    Hidden: HIDDEN,
    ReviewOutcome: REVIEW_OUTCOME,
    AuditEvent: AUDIT_EVENT,
    LinkEvent: LINK_EVENT,
    SuggestionKind: SUGGESTION_KIND,
    SuggestionMode: SUGGESTION_MODE,
    SuggestionOutcome: SUGGESTION_OUTCOME,
    NotificationKind: NOTIFICATION_KIND,
    NotificationState: NOTIFICATION_STATE,
    PartName: PART_NAME,
    Confidence: CONFIDENCE,
    SuggestedPart: SUGGESTED_PART,
    GitHubVerdict: GITHUB_VERDICT,
    MissingFact: MISSING_FACT,
}

# Names that are not enums: the evidence facts and their rules, and the approval checks (whose
# names are already words, in gate/domain/policy.py).
FACTS: dict[str, str] = {
    "has_failing_ci": "CI is failing",
    "is_information_sparse": "the report is too short to act on",
}
RULES: dict[str, str] = {
    **FACTS,
    "fallback": "no rule matched",
}
# A fact's good outcome: false for both (no failing CI, enough information).
GOOD_WHEN: dict[str, bool] = {"has_failing_ci": False, "is_information_sparse": False}
DETAIL_KEYS: dict[str, str] = {
    "digest": "digest",
    "proposal_id": "proposal",
    "execution_id": "execution",
    "comment_url": "comment",
    "result_url": "created issue",
    "http_status": "HTTP status",
    "labels": "labels",
    "reason": "reason",
    "labels_done": "labels added",
}
# What ``reconcile`` did with one execution (its JSON's ``outcome``): not an enum of the domain.
RECONCILE_OUTCOME: dict[str, str] = {
    "settled": "settled",
    "still_unknown": "still unknown",
    "requeued": "queued again: nothing had been sent",
    "skipped": "skipped",
}

# What an answer's answerability was decided from (ask/domain/answers.py: AnswerFeatures).
ANSWER_FEATURES: dict[str, str] = {
    "top_cosine": "closeness in meaning of the top document",
    "top_score": "rank score of the top document",
    "margin": "lead over the second document",
    "term_coverage": "share of the question's rare words in the top document",
    "title_coverage": "share of the top document's title words in the question",
    "name_match": "the question names what the top document is about (1: in its own words)",
    "relation": "closeness measured against this index (0: as off-topic questions, 1: as a title)",
    "unseen_share": "share of the question's words this index has never seen",
    "known_names": "names in the question (functions, settings) that this index holds",
    "question_words": "distinct words searched for",
}
GENERATORS: dict[str, str] = {
    "extractive": "quoted from the top document (no model)",
    "none": "no answer written: no page answers it for sure",
}


def generator_words(generator: str) -> str:
    """Who wrote an answer: quoted, none (abstained), or a model (``provider/model``)."""
    return GENERATORS.get(generator) or f"written by the model {generator}, checked by code"


def words(value: object, table: str = "") -> str:
    """The words for ``value``: an enum member, or a string looked up in ``table`` (its enum's
    name, or ``fact``/``rule``/``event``); anything unknown is shown with spaces for underscores."""
    if value is None or value == "":
        return "–"
    text = str(value)
    for enum, names in TABLES.items():
        if isinstance(value, enum) or (table and table == enum.__name__):
            try:
                return names[enum(text)]
            except ValueError:
                break
    if table == "fact":
        return FACTS.get(text, text.replace("_", " "))
    if table == "rule":
        if text.startswith("policy:"):
            return f"policy rule {text.removeprefix('policy:')!r}"
        return RULES.get(text, text.replace("_", " "))
    if table == "key":
        return DETAIL_KEYS.get(text) or FACTS.get(text) or text.replace("_", " ")
    return text.replace("_", " ")


def like_this(like: Mapping[str, Any]) -> str:
    """How suggestions like a proposal's fared (``describe``'s ``like_this``), in a sentence:
    "A rule's comment (CI is failing) in this place, last 90 days: 14 approved as proposed,
    2 after an edit, 3 rejected"."""
    kind = words(like["kind"], "SuggestionKind")
    detail = f" ({words(like['detail'], 'rule')})" if like.get("detail") else ""
    opening = f"{kind[:1].upper()}{kind[1:]}{detail} here, last {like['days']} days"
    said = (
        f"{opening}: none decided yet"
        if not like["decisions"]
        else f"{opening}: {like['approved']} approved as proposed, {like['edited']} after an"
        f" edit, {like['rejected']} rejected"
    )
    return said + score_band(like.get("score"))


def score_band(score: Mapping[str, Any] | None) -> str:
    """The score a suggestion was made with and how its band fared: "; this one scored 0.72
    (0.70-0.80 here: 5 approved, 1 rejected; made at the floor 0.42)"."""
    if not score:
        return ""
    low, high = score["band"]
    approved = score["approved"] + score["edited"]
    fared = (
        f"{approved} approved, {score['rejected']} rejected"
        if approved + score["rejected"]
        else "none decided yet"
    )
    floor = f"; made at the floor {score['floor']:.2f}" if score.get("floor") is not None else ""
    return f"; this one scored {score['value']:.2f} ({low:.2f}-{high:.2f} here: {fared}{floor})"


def part_score(part: Mapping[str, Any]) -> str:
    """A part's score against its floor: "0.81 (floor 0.60)"; a rule's part has none."""
    score, floor = part.get("score"), part.get("floor")
    if score is None:
        return "decided by a rule (no score)"
    return f"{score:.2f}" + (f" (floor {floor:.2f})" if floor is not None else "")


def part_band(band: Mapping[str, Any] | None) -> str:
    """How suggestions of a part's kind in its score band fared here: "scored 0.80-0.90 here:
    3 of 4 approved (75 %)"; a rule's part is read against every decision of its kind."""
    if not band:
        return "not counted as a suggestion of its own"
    span = band.get("band")
    where = f"scored {span[0]:.2f}-{span[1]:.2f} here" if span else "of its kind here"
    if not band["decisions"]:
        return f"{where}: none decided yet"
    share = band["approved"] / band["decisions"]
    return f"{where}: {band['approved']} of {band['decisions']} approved ({share:.0%})"


def fact_is_good(name: str, value: object) -> bool:
    """Whether a yes/no fact shows its good outcome (green), else neutral."""
    good = GOOD_WHEN.get(name)
    return good is not None and bool(value) == good
