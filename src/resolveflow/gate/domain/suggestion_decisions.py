"""A maintainer's decision, in GitHub, on a label or a close that an approved execution sent there
as a suggestion (``suggest: true``), and what it does to the team's examples. Pure.

Where a proposal goes out as GitHub suggestions, its approval in ResolveFlow only says "suggest
it"; what the maintainer then does in GitHub is the part's real outcome. So in the examples
(``gate/domain/suggestions.py``) each suggested part's example from the approval is replaced by
its GitHub decision (accepted: approved; dismissed: rejected, with who dismissed it), is left out
while GitHub still holds it pending (undecided, it is no example yet), and a GitHub decision with
no example from the approval (a label an edit added, a close) is added as one. Nothing is counted
twice: one example per (proposal, kind, label).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

from resolveflow.domain.vocabulary import (
    ActionKind,
    GitHubVerdict,
    SuggestedPart,
    SuggestionKind,
    SuggestionOutcome,
)
from resolveflow.gate.domain.suggestions import DecisionExample

# The action kind that sends each part, and the kind of example it is.
PART_OF_ACTION = {
    ActionKind.GITHUB_ISSUE: SuggestedPart.LABEL,
    ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE: SuggestedPart.DUPLICATE,
}
EXAMPLE_KIND = {
    SuggestedPart.LABEL: SuggestionKind.LABEL,
    SuggestedPart.DUPLICATE: SuggestionKind.DUPLICATE,
}
# GitHub's suggestion states (``IssueSuggestion.state``) that are a maintainer's decision;
# pending, replaced (another suggestion took its place) and invalidated are not.
READ_VERDICTS = {
    "approved": GitHubVerdict.ACCEPTED,
    "applied": GitHubVerdict.ACCEPTED,
    "dismissed": GitHubVerdict.DISMISSED,
}
READ_PARTS = {"add_label": SuggestedPart.LABEL, "close_issue": SuggestedPart.DUPLICATE}


@dataclass(frozen=True)
class SuggestionSignal:
    """What one ``issues`` delivery says a maintainer did with a suggestion: a label put on
    (``labeled``), the issue closed as a duplicate (``closed``), or a suggestion dismissed."""

    part: SuggestedPart
    label: str  # the label's name; "" for a close
    verdict: GitHubVerdict
    login: str | None  # who (the delivery's sender), when it says


@dataclass(frozen=True)
class SuggestedPartRow:
    """One approved proposal that went out as suggestions, with one recorded GitHub decision
    on it (``verdict`` None when none is recorded yet)."""

    proposal_id: UUID
    lineage_id: UUID
    place: str
    part: SuggestedPart
    label: str
    verdict: GitHubVerdict | None
    decided_at: datetime | None
    decided_by: str | None


def read_verdict(state: str) -> GitHubVerdict | None:
    return READ_VERDICTS.get(state)


def _key(proposal_id: UUID, part: SuggestedPart, label: str) -> tuple[UUID, SuggestedPart, str]:
    return proposal_id, part, label.lower()


def _decided(example: DecisionExample, row: SuggestedPartRow) -> DecisionExample:
    assert row.decided_at is not None
    if row.verdict is GitHubVerdict.ACCEPTED:
        return replace(
            example, outcome=SuggestionOutcome.APPROVED, reason=None, decided_at=row.decided_at
        )
    who = f" by {row.decided_by}" if row.decided_by else ""
    return replace(
        example,
        outcome=SuggestionOutcome.REJECTED,
        reason=f"dismissed in GitHub{who}",
        decided_at=row.decided_at,
    )


def with_github_decisions(
    found: Sequence[DecisionExample], rows: Iterable[SuggestedPartRow]
) -> list[DecisionExample]:
    """``found`` with each suggested part's example replaced by its GitHub decision, left out
    while undecided, and decisions without an example added (see the module's text)."""
    rows = list(rows)
    sent = {row.proposal_id: row.part for row in rows}
    decided = {_key(r.proposal_id, r.part, r.label): r for r in rows if r.verdict is not None}
    used: set[tuple[UUID, SuggestedPart, str]] = set()
    kept: list[DecisionExample] = []
    for example in found:
        part = sent.get(example.proposal_id)
        suggested = part is not None and example.kind is EXAMPLE_KIND[part]
        if not suggested or example.outcome is SuggestionOutcome.REJECTED:
            kept.append(example)  # not sent as a suggestion (a rejection sent nothing)
            continue
        assert part is not None
        key = _key(example.proposal_id, part, example.detail if part is SuggestedPart.LABEL else "")
        row = decided.get(key)
        if row is not None:
            used.add(key)
            kept.append(_decided(example, row))
    for key, row in decided.items():
        if key not in used:
            kept.append(_decided(_bare_example(row), row))
    return kept


def _bare_example(row: SuggestedPartRow) -> DecisionExample:
    assert row.decided_at is not None
    return DecisionExample(
        proposal_id=row.proposal_id,
        lineage_id=row.lineage_id,
        place=row.place,
        kind=EXAMPLE_KIND[row.part],
        detail=row.label,
        outcome=SuggestionOutcome.APPROVED,
        changes=(),
        reason=None,
        decided_at=row.decided_at,
    )
