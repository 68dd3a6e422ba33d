"""A part sent as a GitHub suggestion counts by the maintainer's decision there, once: it
replaces the approval's example, is left out while pending, and is added when the approval made
none (a close, a label an edit added)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from resolveflow.domain.vocabulary import GitHubVerdict, SuggestedPart, SuggestionKind
from resolveflow.domain.vocabulary import SuggestionOutcome as O
from resolveflow.gate.domain.suggestion_decisions import SuggestedPartRow, with_github_decisions
from resolveflow.gate.domain.suggestions import DecisionExample

APPROVED_AT = datetime(2026, 3, 1, tzinfo=UTC)
LATER = APPROVED_AT + timedelta(hours=5)
PROPOSAL, CLOSE = uuid.uuid4(), uuid.uuid4()


def _example(kind: SuggestionKind, detail: str, outcome: O = O.APPROVED) -> DecisionExample:
    return DecisionExample(
        PROPOSAL, PROPOSAL, "acme/widgets", kind, detail, outcome, (), None, APPROVED_AT, 0.7
    )


def _row(
    part: SuggestedPart, label: str, verdict: GitHubVerdict | None, proposal: uuid.UUID = PROPOSAL
) -> SuggestedPartRow:
    at = LATER if verdict else None
    return SuggestedPartRow(proposal, proposal, "acme/widgets", part, label, verdict, at, "rita")


def test_decisions_replace_pending_ones_leave_out_and_others_stand() -> None:
    found = [
        _example(SuggestionKind.REVIEW_REQUEST, ""),
        _example(SuggestionKind.LABEL, "bug"),
        _example(SuggestionKind.LABEL, "question"),
        _example(SuggestionKind.LABEL, "docs"),
        _example(SuggestionKind.LABEL, "wontfix", O.REJECTED),  # removed by the edit: not sent
    ]
    rows = [
        _row(SuggestedPart.LABEL, "Bug", GitHubVerdict.ACCEPTED),
        _row(SuggestedPart.LABEL, "question", GitHubVerdict.DISMISSED),
    ]
    merged = with_github_decisions(found, rows)
    assert [(e.kind, e.detail, e.outcome, e.reason) for e in merged] == [
        (SuggestionKind.REVIEW_REQUEST, "", O.APPROVED, None),
        (SuggestionKind.LABEL, "bug", O.APPROVED, None),
        (SuggestionKind.LABEL, "question", O.REJECTED, "dismissed in GitHub by rita"),
        (SuggestionKind.LABEL, "wontfix", O.REJECTED, None),
    ]  # docs: still pending in GitHub, no example yet
    assert merged[1].decided_at == LATER and merged[1].score == 0.7


def test_a_decision_without_an_example_is_added_once() -> None:
    rows = [_row(SuggestedPart.DUPLICATE, "", GitHubVerdict.DISMISSED, proposal=CLOSE)]
    [added] = with_github_decisions([], rows)
    assert (added.kind, added.detail, added.outcome) == (SuggestionKind.DUPLICATE, "", O.REJECTED)
    # Not sent as a suggestion: the approval's examples are the decisions.
    plain = [_example(SuggestionKind.LABEL, "bug")]
    assert with_github_decisions(plain, []) == plain
