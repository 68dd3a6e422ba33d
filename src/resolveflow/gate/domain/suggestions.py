"""The team's decisions as labelled examples of what ResolveFlow suggested (issue 31). Pure.

Every decided proposal that a product prepared is one example of its kind (a rule's comment, a
duplicate, a request for review, a draft, a refine summary, a new issue), and each label it
proposed is one more: approved as proposed, approved after an edit (with what the edit changed),
or rejected (with the reason). A label the approved edit took away counts as rejected, and one it
added is a change, not a suggestion. A person's own proposal is no suggestion and no example.

The acceptance of a kind in one place (a repository, a GitLab project, a mailbox) is read over
its last N decisions: ``approved + edited`` out of all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.domain.vocabulary import (
    COVERAGE_GAP_NOTE,
    PREPARED_ISSUE_NOTE_PREFIX,
    REFINE_PROPOSAL_NOTE,
    ActionKind,
    Decision,
    SuggestionKind,
    SuggestionOutcome,
)
from resolveflow.gate.domain.actions import AnyAction
from resolveflow.gate.domain.parts import PartRecord, decided_parts, label_scores

# A triage run's branch (``run_classifications.branch``) -> what its proposal suggests.
_BRANCHES = {
    "deterministic": SuggestionKind.RULE_COMMENT,
    "ai_investigation": SuggestionKind.DUPLICATE,
    "human_review": SuggestionKind.REVIEW_REQUEST,
}
_NEW_ISSUE_KINDS = {ActionKind.GITHUB_ISSUE_CREATE, ActionKind.GITLAB_ISSUE_CREATE}


@dataclass(frozen=True)
class Decided:
    """One decided proposal: the first version of its lineage (what was suggested), the
    version a person decided on, and the decision."""

    proposal_id: UUID  # the decided version
    lineage_id: UUID
    version: int
    first: AnyAction
    decided: AnyAction
    author_kind: str  # of the first version: principal, workflow or model
    note: str | None  # of the first version
    branch: str | None  # the triage run's branch, when a run made it
    rule: str | None  # the triage rule that decided it
    decision: Decision
    reason: str | None
    decided_at: datetime
    score: float | None = None  # what it was made with, when it had one (duplicate relevance)
    parts: tuple[PartRecord, ...] = ()  # the triage run's parts, when it stored them


@dataclass(frozen=True)
class DecisionExample:
    proposal_id: UUID  # the decided version
    lineage_id: UUID
    place: str  # where it writes: OWNER/REPO, gitlab:PROJECT, email:MAILBOX
    kind: SuggestionKind
    detail: str  # the label (LABEL), the rule (RULE_COMMENT), else ""
    outcome: SuggestionOutcome
    changes: tuple[str, ...]  # what the approved edit changed ("comment", "labels +docs")
    reason: str | None  # a rejection's
    decided_at: datetime
    # the proposal's score; a part's (its labels' each their own) when a run stored its parts
    score: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "proposal_id": str(self.proposal_id),
            "lineage_id": str(self.lineage_id),
            "place": self.place,
            "kind": self.kind.value,
            "detail": self.detail,
            "outcome": self.outcome.value,
            "changes": list(self.changes),
            "reason": self.reason,
            "decided_at": self.decided_at.isoformat(),
            "score": None if self.score is None else round(self.score, 4),
        }

    @property
    def approved(self) -> bool:
        return self.outcome is not SuggestionOutcome.REJECTED


@dataclass(frozen=True)
class Acceptance:
    """How one kind of suggestion fared in one place over its last decisions."""

    place: str
    kind: SuggestionKind
    detail: str
    approved: int
    edited: int
    rejected: int
    since: datetime | None  # the oldest decision counted

    @property
    def decisions(self) -> int:
        return self.approved + self.edited + self.rejected

    @property
    def rate(self) -> float:
        """The share approved, as proposed or after an edit."""
        return (self.approved + self.edited) / self.decisions if self.decisions else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "place": self.place,
            "kind": self.kind.value,
            "detail": self.detail,
            "decisions": self.decisions,
            "approved": self.approved,
            "edited": self.edited,
            "rejected": self.rejected,
            "acceptance": round(self.rate, 4),
            "since": self.since.isoformat() if self.since else None,
        }


def branch_kind(branch: str) -> SuggestionKind | None:
    """What a triage run's proposal on this branch suggests."""
    return _BRANCHES.get(branch)


def suggestion_kind(
    first: AnyAction, author_kind: str, note: str | None, branch: str | None
) -> SuggestionKind | None:
    """What a lineage's first version suggests; None for a person's own proposal."""
    if branch is not None:
        return branch_kind(branch)
    action_kind = ActionKind(first.kind)
    if action_kind is ActionKind.EMAIL_SEND:
        return SuggestionKind.DRAFT
    if note == REFINE_PROPOSAL_NOTE:
        return SuggestionKind.REFINE_SUMMARY
    if action_kind in _NEW_ISSUE_KINDS and (
        author_kind == "model"
        or note == COVERAGE_GAP_NOTE
        or (note or "").startswith(PREPARED_ISSUE_NOTE_PREFIX)
    ):
        return SuggestionKind.NEW_ISSUE
    return None


def suggestion_detail(kind: SuggestionKind, rule: str | None) -> str:
    """What a kind's figures are kept apart by besides their place: a rule's comment by its
    rule (a label by the label itself, given where it is made)."""
    return (rule or "") if kind is SuggestionKind.RULE_COMMENT else ""


def examples(decided: Decided) -> list[DecisionExample]:
    """The examples one decision makes: the proposal's, then one per label it proposed."""
    kind = suggestion_kind(decided.first, decided.author_kind, decided.note, decided.branch)
    if kind is None:
        return []
    approved = decided.decision is Decision.APPROVED
    edited = approved and decided.version > 1
    made = changes(decided.first, decided.decided) if edited else ()

    def example(kind: SuggestionKind, detail: str, outcome: SuggestionOutcome) -> DecisionExample:
        reason = decided.reason if outcome is SuggestionOutcome.REJECTED else None
        return DecisionExample(
            decided.proposal_id,
            decided.lineage_id,
            decided.first.repository,
            kind,
            detail,
            outcome,
            made,
            reason,
            decided.decided_at,
        )

    outcome = (
        SuggestionOutcome.REJECTED
        if not approved
        else SuggestionOutcome.EDITED
        if edited
        else SuggestionOutcome.APPROVED
    )
    found = [
        replace(example(kind, suggestion_detail(kind, decided.rule), outcome), score=decided.score)
    ]
    # Each public part with a paragraph is a suggestion of its own kind (its score with it).
    comment = getattr(decided.decided, "comment", None)
    for part in decided_parts(decided.parts, approved, comment):
        made_part = replace(example(part.kind, "", part.outcome), score=part.score)
        if approved and part.outcome is SuggestionOutcome.REJECTED:
            made_part = replace(made_part, reason="removed by the edit that was approved")
        found.append(made_part)
    scores = label_scores(decided.parts)
    kept = set(decided.decided.labels)
    for label in dict.fromkeys(decided.first.labels):
        if not approved:
            labelled = example(SuggestionKind.LABEL, label, SuggestionOutcome.REJECTED)
        elif label not in kept:
            removed = example(SuggestionKind.LABEL, label, SuggestionOutcome.REJECTED)
            labelled = replace(removed, reason="removed by the edit that was approved")
        else:
            labelled = example(SuggestionKind.LABEL, label, SuggestionOutcome.APPROVED)
        found.append(replace(labelled, score=scores.get(label)))
    return found


def changes(first: AnyAction, decided: AnyAction) -> tuple[str, ...]:
    """What differs between two versions of one action: each changed field by name, labels
    (and other lists of names) as ``+added`` / ``-removed``."""
    return tuple(_diff(first.canonical(), decided.canonical(), ""))


def _diff(before: Any, after: Any, path: str) -> Iterable[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            yield from _diff(before.get(key), after.get(key), f"{path}.{key}" if path else key)
    elif _names(before) and _names(after):
        added = [n for n in after if n not in before]
        removed = [n for n in before if n not in after]
        if added or removed:
            words = [f"+{n}" for n in added] + [f"-{n}" for n in removed]
            yield f"{path} {' '.join(words)}"
    elif before != after:
        yield path


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def acceptance(found: Sequence[DecisionExample], last: int) -> list[Acceptance]:
    """Per place, kind and detail, over its ``last`` most recent decisions."""
    groups: dict[tuple[str, SuggestionKind, str], list[DecisionExample]] = defaultdict(list)
    for example in found:
        groups[(example.place, example.kind, example.detail)].append(example)
    figures = []
    for (place, kind, detail), members in groups.items():
        recent = sorted(members, key=lambda e: e.decided_at, reverse=True)[:last]
        count = {outcome: 0 for outcome in SuggestionOutcome}
        for example in recent:
            count[example.outcome] += 1
        figures.append(
            Acceptance(
                place,
                kind,
                detail,
                count[SuggestionOutcome.APPROVED],
                count[SuggestionOutcome.EDITED],
                count[SuggestionOutcome.REJECTED],
                recent[-1].decided_at if recent else None,
            )
        )
    # Per place: what the proposals suggested first, then their labels; most decided first.
    return sorted(
        figures,
        key=lambda a: (
            a.place,
            a.kind is SuggestionKind.LABEL,
            -a.decisions,
            a.kind.value,
            a.detail,
        ),
    )
