"""What maintainers did in GitHub with the labels and closes an approved execution sent there as
suggestions (``suggest: true``): recorded once per suggested part, and read back into the team's
examples (``gate/feedback.py``; the rule: ``gate/domain/suggestion_decisions.py``).

Two ways in, one record:

- the ``issues`` webhook (``triage/webhooks.py``): ``labeled`` for a label we suggested on that
  issue, ``closed`` with ``state_reason: duplicate`` for a suggested close, and
  ``suggestion_dismissed`` (our reading of a shape GitHub does not document yet). A ``labeled``
  that matches no execution of ours that suggested that label is nobody's decision and records
  nothing; the sender's login is who decided.
- reading ``GET .../issues/{n}/suggestions`` (``reconcile_issue``), for what no delivery says: it
  runs after any handled delivery on an issue where one of our suggestions is still undecided (the
  index update already re-reads that issue), so a dismissal GitHub announces some other way, or
  not at all, is found at the issue's next event. GitHub answers the resolver's id, not login.

The database keeps one decision per (execution, part, label): a redelivered webhook, or a read
after the webhook, records nothing new.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from uuid import UUID

from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub, IssueSuggestionData, RepoName
from resolveflow.domain.vocabulary import ActionKind, GitHubVerdict, SuggestedPart
from resolveflow.errors import ProviderError, ResolveFlowError
from resolveflow.gate.domain.actions import (
    GitHubIssueAction,
    GitHubIssueCloseDuplicateAction,
    parse_action,
)
from resolveflow.gate.domain.suggestion_decisions import (
    PART_OF_ACTION,
    READ_PARTS,
    SuggestedPartRow,
    SuggestionSignal,
    read_verdict,
    with_github_decisions,
)
from resolveflow.gate.domain.suggestions import DecisionExample
from resolveflow.gate.store import suggestion_decisions as store
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)

# A suggestion sent longer ago than this is not read back any more.
READ_WINDOW = timedelta(days=30)
# GitHub's clock and ours differ a little.
CLOCK_SKEW = timedelta(minutes=2)
ACTION_OF_PART = {part: kind for kind, part in PART_OF_ACTION.items()}


def record_signal(
    conn: Connection,
    tenant_id: UUID,
    repository: str,
    issue: int,
    signal: SuggestionSignal,
    at: datetime,
) -> bool:
    """Record what a delivery says, when it is about a suggestion of ours; True if new."""
    if signal.login is None:
        return False
    kind = ACTION_OF_PART[signal.part]
    sent = store.sent_suggestion(conn, tenant_id, repository, issue, kind, signal.label)
    if sent is None:
        return False  # a label or close nobody suggested through us: no decision
    decision = store.NewDecision(
        tenant_id=tenant_id,
        execution_id=sent.execution_id,
        proposal_id=sent.proposal_id,
        repository=repository,
        issue=issue,
        part=signal.part,
        label=sent.label,
        outcome=signal.verdict,
        decided_at=at,
        decided_by=signal.login,
        decided_by_id=None,
        seen_by="webhook",
    )
    return store.record(conn, decision)


def _parts(action: dict[str, object]) -> tuple[SuggestedPart, tuple[str, ...]] | None:
    try:
        parsed = parse_action(action)
    except ResolveFlowError:
        return None
    if isinstance(parsed, GitHubIssueAction):
        return SuggestedPart.LABEL, parsed.labels
    if isinstance(parsed, GitHubIssueCloseDuplicateAction):
        return SuggestedPart.DUPLICATE, ("",)
    return None


def _undecided(executions: list[store.IssueExecution]) -> bool:
    for execution in executions:
        parts = _parts(execution.action)
        if parts is not None and execution.decided < len(parts[1]):
            return True
    return False


def record_read(
    conn: Connection,
    tenant_id: UUID,
    repository: str,
    issue: int,
    read: list[IssueSuggestionData],
) -> int:
    """Record each suggestion GitHub says was approved or dismissed that one of our executions
    on the issue sent (the newest one sending that part before the suggestion was made)."""
    executions = store.suggested_on_issue(
        conn, tenant_id, repository, issue, datetime.now(UTC) - READ_WINDOW
    )
    recorded = 0
    for item in read:
        verdict, part = read_verdict(item.state), READ_PARTS.get(item.action)
        if verdict is None or part is None or item.resolved_by is None:
            continue
        label = (item.target_value or "") if part is SuggestedPart.LABEL else ""
        sent = _execution_that_sent(executions, part, label, item.created_at + CLOCK_SKEW)
        if sent is None:
            continue
        recorded += store.record(
            conn,
            store.NewDecision(
                tenant_id=tenant_id,
                execution_id=sent[0].execution_id,
                proposal_id=sent[0].proposal_id,
                repository=repository,
                issue=issue,
                part=part,
                label=sent[1],
                outcome=verdict,
                decided_at=item.updated_at,
                decided_by=None,
                decided_by_id=item.resolved_by,
                seen_by="read",
            ),
        )
    return recorded


def _execution_that_sent(
    executions: list[store.IssueExecution], part: SuggestedPart, label: str, before: datetime
) -> tuple[store.IssueExecution, str] | None:
    """The newest execution (``executions`` are newest first) that sent ``part`` (``label``,
    as it spelled it) before ``before``."""
    for execution in executions:
        parts = _parts(execution.action)
        if parts is None or parts[0] is not part or execution.sent_at > before:
            continue
        spelled = next((name for name in parts[1] if name.lower() == label.lower()), None)
        if spelled is not None:
            return execution, spelled
    return None


def reconcile_issue(
    db: Database, github: GitHub, tenant_id: UUID, repository: str, issue: int
) -> int:
    """Read the issue's suggestions when one of ours there is still undecided, and record what
    GitHub says was decided; 0 without a read otherwise. Returns how many were new."""
    since = datetime.now(UTC) - READ_WINDOW
    with db.tenant(tenant_id) as conn:
        executions = store.suggested_on_issue(conn, tenant_id, repository, issue, since)
    if not _undecided(executions):
        return 0
    repo = RepoName.parse(repository)
    try:
        read = acting_for(github, tenant_id).list_issue_suggestions(repo, issue)
    except ProviderError as exc:  # read again at the issue's next event
        logger.warning("suggestions not read: %s", exc.message, extra={"issue": issue})
        return 0
    with db.tenant(tenant_id) as conn:
        recorded = record_read(conn, tenant_id, repository, issue, read)
    if recorded:
        logger.info("suggestion decisions read", extra={"issue": f"{repository}#{issue}"})
    return recorded


def with_decisions_in_github(
    conn: Connection,
    tenant_id: UUID,
    found: list[DecisionExample],
    since: datetime,
    place: str | None = None,
) -> list[DecisionExample]:
    """``found`` (the examples of approvals decided since ``since``) with each part sent as a
    GitHub suggestion counted by what the maintainer did with it there."""
    rows = []
    for row in store.suggested_parts(conn, tenant_id, since, place):
        part = PART_OF_ACTION.get(ActionKind(row.action_kind))
        if part is None:
            continue
        rows.append(
            SuggestedPartRow(
                proposal_id=row.proposal_id,
                lineage_id=row.lineage_id,
                place=row.place,
                part=part,
                label=row.label or "",
                verdict=None if row.outcome is None else GitHubVerdict(row.outcome),
                decided_at=row.decided_at,
                decided_by=row.decided_by,
            )
        )
    return with_github_decisions(found, rows)
