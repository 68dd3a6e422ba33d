"""The maintainers' decisions in GitHub on suggestions executions sent there (migration 0038),
and the executions they are matched to (``gate/suggestion_decisions.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.domain.vocabulary import ActionKind, GitHubVerdict, SuggestedPart
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q

GROUP = "gate/store/suggestion_decisions"


@dataclass(frozen=True)
class SentSuggestion:
    """The execution that sent a part as a suggestion; ``label`` as its proposal spelled it."""

    execution_id: UUID
    proposal_id: UUID
    label: str


@dataclass(frozen=True)
class NewDecision:
    tenant_id: UUID
    execution_id: UUID
    proposal_id: UUID
    repository: str
    issue: int
    part: SuggestedPart
    label: str  # "" for a close
    outcome: GitHubVerdict
    decided_at: datetime
    decided_by: str | None  # the GitHub login, when the webhook said
    decided_by_id: int | None  # GitHub's user id, when a read said
    seen_by: str  # webhook | read


@dataclass(frozen=True)
class IssueExecution:
    execution_id: UUID
    proposal_id: UUID
    action: dict[str, Any]
    sent_at: datetime
    decided: int  # how many of its parts have a decision


@dataclass(frozen=True)
class SuggestedRow:
    proposal_id: UUID
    lineage_id: UUID
    place: str
    action_kind: str
    label: str | None
    outcome: str | None
    decided_at: datetime | None
    decided_by: str | None


@dataclass(frozen=True)
class RecordedDecision:
    execution_id: UUID
    proposal_id: UUID
    part: str
    label: str
    outcome: str
    decided_at: datetime
    decided_by: str | None
    decided_by_id: int | None
    seen_by: str


def sent_suggestion(
    conn: Connection,
    tenant_id: UUID,
    repository: str,
    issue: int,
    action_kind: ActionKind,
    label: str,
) -> SentSuggestion | None:
    params = {
        "tenant_id": tenant_id,
        "repository": repository,
        "issue": issue,
        "action_kind": action_kind.value,
        "label": label,
    }
    return typed.one(conn, SentSuggestion, q(GROUP, "suggested_execution"), params)


def record(conn: Connection, decision: NewDecision) -> bool:
    """True when this is the part's first decision; False when one is recorded already."""
    params = {**decision.__dict__, "part": decision.part.value, "outcome": decision.outcome.value}
    return conn.execute(q(GROUP, "record_decision"), params).fetchone() is not None


def suggested_on_issue(
    conn: Connection, tenant_id: UUID, repository: str, issue: int, since: datetime
) -> list[IssueExecution]:
    params = {"tenant_id": tenant_id, "repository": repository, "issue": issue, "since": since}
    return typed.every(conn, IssueExecution, q(GROUP, "suggested_on_issue"), params)


def suggested_parts(
    conn: Connection, tenant_id: UUID, since: datetime, place: str | None
) -> list[SuggestedRow]:
    params = {"tenant_id": tenant_id, "since": since, "place": place}
    return typed.every(conn, SuggestedRow, q(GROUP, "suggested_parts"), params)


def decisions_on_issue(
    conn: Connection, tenant_id: UUID, repository: str, issue: int
) -> list[RecordedDecision]:
    params = {"tenant_id": tenant_id, "repository": repository, "issue": issue}
    return typed.every(conn, RecordedDecision, q(GROUP, "decisions_on_issue"), params)
