"""What a duplicate floor fitted from the team's decisions would have changed (issue 31).

``backtest --fit-before DATE`` replays every issue of the stream (not only those the rules would
investigate: any issue can get a duplicate suggestion) as triage would have seen it when it was
opened, and reads each one's related documents with their relevance. Where the corpus says which
earlier issues an issue relates to (``duplicates.tsv`` pairs, issues fixed by the same merged
pull request), a suggestion is what a team would approve when one of the issues it names is one
of them, and rejected otherwise (an issue with no known relative: any suggestion is wrong).

The issues opened before ``DATE`` stand for the team's decisions: the floor is fitted from them
by the rule the product uses on a repository's real decisions (``gate/domain/thresholds.py``).
The issues from ``DATE`` on are then measured at the default floor and at the fitted one:
suggestions made, precision (the share a team would approve) and recall (the share of the
default's approvable suggestions the fitted floor still makes). Nothing is proposed or recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from resolveflow.gate.domain.thresholds import Fitted, Scored, fit_threshold
from resolveflow.retrieval.records import SourceDocument
from resolveflow.triage.investigation import Investigation

# The stated floor for recall: the fitted threshold targets keeping KEEP_APPROVED of what the
# team approved (``thresholds.KEEP_APPROVED``); on later issues it must keep at least this much.
RECALL_FLOOR = 0.7


@dataclass(frozen=True)
class StreamIssue:
    """One replayed issue: what retrieval related to it, and what is known to relate."""

    id: str
    created_at: datetime
    related: tuple[tuple[str, float], ...]  # (external id, relevance), in rank order
    known: frozenset[str]

    def suggestion(self, floor: float, most: int) -> tuple[str, ...]:
        """The issues a suggestion at ``floor`` names (none: no suggestion)."""
        return tuple(i for i, relevance in self.related if relevance >= floor)[:most]

    def score(self) -> float:
        return max((relevance for _, relevance in self.related), default=0.0)


@dataclass(frozen=True)
class FloorFigures:
    floor: float
    made: int
    right: int  # suggestions a team would approve
    recall: float  # of the default's right suggestions, the share still made and right

    @property
    def precision(self) -> float:
        return self.right / self.made if self.made else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "floor": round(self.floor, 4),
            "suggestions": self.made,
            "right": self.right,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
        }


@dataclass(frozen=True)
class FloorBacktest:
    fit_before: datetime
    fitted: Fitted
    decisions: int  # issues before ``fit_before``
    measured: int  # issues from it on
    default: FloorFigures
    with_fitted: FloorFigures
    withheld: tuple[str, ...]  # issues that got a suggestion at the default, none fitted

    def as_json(self) -> dict[str, Any]:
        return {
            "fit_before": self.fit_before.isoformat(),
            "fitted": self.fitted.as_json(),
            "decision_issues": self.decisions,
            "measured_issues": self.measured,
            "default": self.default.as_json(),
            "fitted_floor": self.with_fitted.as_json(),
            "recall_floor": RECALL_FLOOR,
            "recall_held": self.with_fitted.recall >= RECALL_FLOOR,
            "withheld": list(self.withheld),
        }


def stream_issue(doc: SourceDocument, found: Investigation, known: frozenset[str]) -> StreamIssue:
    assert doc.created_at is not None
    related = tuple((s.external_id, s.relevance) for s in found.snippets)
    return StreamIssue(doc.external_id, doc.created_at, related, known)


def floor_backtest(
    stream: Sequence[StreamIssue], fit_before: datetime, default: float, most: int
) -> FloorBacktest:
    before = [i for i in stream if i.created_at < fit_before]
    after = [i for i in stream if i.created_at >= fit_before]
    decided = [
        Scored(issue.score(), bool(set(named) & issue.known))
        for issue in before
        if (named := issue.suggestion(default, most))
    ]
    fitted = fit_threshold(decided, default)
    at_default = _figures(after, default, most, None)
    at_fitted = _figures(after, fitted.value, most, at_default.right)
    withheld = tuple(
        i.id for i in after if i.suggestion(default, most) and not i.suggestion(fitted.value, most)
    )
    return FloorBacktest(
        fit_before, fitted, len(before), len(after), at_default, at_fitted, withheld
    )


def _figures(
    issues: Sequence[StreamIssue], floor: float, most: int, default_right: int | None
) -> FloorFigures:
    made = right = 0
    for issue in issues:
        named = issue.suggestion(floor, most)
        made += bool(named)
        right += bool(set(named) & issue.known)
    base = right if default_right is None else default_right
    return FloorFigures(floor, made, right, right / base if base else 0.0)


__all__ = [
    "RECALL_FLOOR",
    "FloorBacktest",
    "FloorFigures",
    "StreamIssue",
    "floor_backtest",
    "stream_issue",
]
