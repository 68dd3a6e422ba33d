"""The threshold fitted from a repository's decisions (issue 31), worked out by hand."""

from __future__ import annotations

import pytest

from resolveflow.gate.domain.thresholds import Scored, band, fit_threshold, isotonic


def _decisions(*runs: tuple[float, int, int]) -> list[Scored]:
    """(score, approved, rejected) runs: that many decisions at that score."""
    found = []
    for score, yes, no in runs:
        found += [Scored(score, True)] * yes + [Scored(score, False)] * no
    return found


def test_isotonic_pools_what_decreases() -> None:
    assert isotonic([0, 1, 0, 1, 1]) == [0, 0.5, 0.5, 1, 1]
    assert isotonic([1, 0, 0]) == pytest.approx([1 / 3] * 3)
    assert isotonic([0.2, 0.4, 0.9]) == [0.2, 0.4, 0.9]
    assert isotonic([]) == []
    # Weighted: one point standing for three decisions outweighs one standing for one.
    assert isotonic([0.9, 0.1], [1, 3]) == pytest.approx([0.3, 0.3])


def test_the_order_of_decisions_at_one_score_does_not_matter() -> None:
    rejected_first = _decisions((0.2, 0, 18), (0.2, 2, 0), (0.6, 16, 4))
    approved_first = _decisions((0.2, 2, 0), (0.2, 0, 18), (0.6, 16, 4))
    assert fit_threshold(rejected_first, 0.15) == fit_threshold(approved_first, 0.15)
    assert fit_threshold(rejected_first, 0.15).value == 0.6


def test_too_few_decisions_leave_the_default() -> None:
    fitted = fit_threshold(_decisions((0.3, 5, 20), (0.9, 4, 0)), default=0.15)
    assert not fitted.fitted and fitted.value == 0.15
    assert fitted.decisions == 29 and "29 of the 30 decisions needed" in fitted.why
    # Decisions under the default are not the product's: they do not count.
    low = fit_threshold(_decisions((0.1, 0, 40)), default=0.15)
    assert not low.fitted and low.decisions == 0


def test_the_lowest_score_approved_half_the_time() -> None:
    # 20 rejected at 0.2, then 0.4: 5 of 10 approved, 0.6: 9 of 10.
    decided = _decisions((0.2, 0, 20), (0.4, 5, 5), (0.6, 9, 1))
    fitted = fit_threshold(decided, default=0.15)
    assert fitted.fitted and fitted.value == 0.4
    assert (fitted.decisions, fitted.approved) == (40, 14)
    assert "approved 50% of the time from 0.40 on" in fitted.why


def test_it_keeps_four_fifths_of_what_was_approved() -> None:
    # Half the time only from 0.8 on; but 10 of 14 approvals lie below it.
    decided = _decisions((0.3, 5, 16), (0.5, 5, 10), (0.8, 4, 0))
    fitted = fit_threshold(decided, default=0.15)
    # approvals by score: 5 at 0.3, 5 at 0.5, 4 at 0.8; the cap is the 3rd lowest approved (0.3).
    assert fitted.value == 0.3
    assert "held at 0.30 to keep 80% of the approved" in fitted.why


def test_never_below_the_default_and_never_without_an_approval() -> None:
    decided = _decisions((0.5, 20, 20))
    assert fit_threshold(decided, default=0.6).decisions == 0  # all under the default
    fitted = fit_threshold(_decisions((0.7, 30, 10)), default=0.6)
    assert fitted.value == 0.7  # approved at the lowest score seen, which is above the default
    none = fit_threshold(_decisions((0.7, 0, 35)), default=0.6)
    assert not none.fitted and none.value == 0.6 and "0 approved and 35 rejected" in none.why
    # Three approvals among 465 (hf-datasets' fix links before the split) fit nothing.
    few = fit_threshold(_decisions((0.2, 0, 300), (0.4, 3, 162)), default=0.15)
    assert not few.fitted and few.value == 0.15 and "10 of each needed" in few.why
    all_yes = fit_threshold(_decisions((0.7, 35, 0)), default=0.6)
    assert not all_yes.fitted and all_yes.value == 0.6


def test_no_score_reaches_half_takes_the_top_step_within_the_cap() -> None:
    decided = _decisions((0.2, 2, 38), (0.5, 4, 16), (0.9, 6, 8))
    fitted = fit_threshold(decided, default=0.1)
    # fit: 0.05 at 0.2, 0.2 at 0.5, 0.43 at 0.9; never 50%; approvals 0.2 x2, 0.5 x4, 0.9 x6:
    # the cap is the 3rd lowest (floor(0.2 * 12) = 2): 0.5.
    assert fitted.value == 0.5
    assert "never approved half the time" in fitted.why


def test_bands() -> None:
    assert band(0.72) == (0.7, 0.8)
    assert band(0.7) == (0.7, 0.8)
    assert band(0.0) == (0.0, 0.1)
    assert band(1.0) == (0.9, 1.0)
    assert band(0.3) == (0.3, 0.4)  # not 0.2 by a rounding error
