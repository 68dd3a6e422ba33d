"""What a duplicate floor fitted from earlier decisions changes on later issues (issue 31),
on a stream made by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from resolveflow.triage.floor_backtest import RECALL_FLOOR, StreamIssue, floor_backtest

START = datetime(2024, 1, 1, tzinfo=UTC)
SPLIT = START + timedelta(days=100)


def _issue(n: int, day: int, relevance: float, right: bool) -> StreamIssue:
    """An issue whose best related issue is ``r{n}`` at ``relevance``: a known relative or not."""
    known = frozenset({f"r{n}"} if right else {"elsewhere"})
    related = ((f"r{n}", relevance), (f"x{n}", 0.05))
    return StreamIssue(str(n), START + timedelta(days=day), related, known)


def _stream() -> list[StreamIssue]:
    issues = []
    # Before the split, 40 decisions: at 0.2 nine in ten wrong, at 0.6 eight in ten right.
    for n in range(20):
        issues.append(_issue(n, n, 0.2, n % 10 == 0))
        issues.append(_issue(100 + n, n, 0.6, n % 5 != 0))
    # After it: the same mix, 10 of each.
    for n in range(10):
        issues.append(_issue(200 + n, 100 + n, 0.2, n == 0))
        issues.append(_issue(300 + n, 100 + n, 0.6, n % 5 != 0))
    # And one issue nothing relates to above any floor.
    issues.append(StreamIssue("400", SPLIT, (("y", 0.01),), frozenset()))
    return issues


def test_the_fitted_floor_is_more_precise_and_keeps_recall_above_its_floor() -> None:
    result = floor_backtest(_stream(), SPLIT, default=0.15, most=5)
    assert (result.decisions, result.measured) == (40, 21)
    assert result.fitted.fitted and result.fitted.value == 0.6
    # Default: 20 suggestions, 1 + 8 right. Fitted: the 10 at 0.6, 8 right.
    assert (result.default.made, result.default.right) == (20, 9)
    assert (result.with_fitted.made, result.with_fitted.right) == (10, 8)
    assert result.with_fitted.precision == 0.8 > result.default.precision == 0.45
    assert result.with_fitted.recall == 8 / 9 >= RECALL_FLOOR
    assert len(result.withheld) == 10 and "200" in result.withheld
    figures = result.as_json()
    assert figures["recall_held"] is True and figures["fitted"]["value"] == 0.6


def test_too_few_decisions_change_nothing() -> None:
    stream = [i for i in _stream() if i.created_at >= SPLIT or int(i.id) < 5]
    result = floor_backtest(stream, SPLIT, default=0.15, most=5)
    assert not result.fitted.fitted and result.with_fitted == result.default.__class__(
        0.15, result.default.made, result.default.right, 1.0
    )
    assert result.withheld == ()
