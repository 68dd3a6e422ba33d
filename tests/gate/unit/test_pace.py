"""Write pacing's arithmetic (gate/domain/pace.py) and the product's default paces."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolveflow.bootstrap.app import gate_settings
from resolveflow.config import PaceConfig, Settings
from resolveflow.domain.vocabulary import Credential
from resolveflow.gate.domain.pace import (
    Pace,
    PaceTarget,
    full_bucket,
    held_slot_usable,
    pace_key,
    reserve,
    waiting_detail,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
GITHUB = Pace.per_hour(1.0, 60, 500)


def slots(pace: Pace, request_times: list[float]) -> list[float]:
    """The slot (seconds after T0) each request gets, requests in order at the given times."""
    bucket = full_bucket(pace, T0)
    taken = []
    for at in request_times:
        slot, bucket = reserve(pace, bucket, T0 + timedelta(seconds=at))
        assert slot >= T0 + timedelta(seconds=at)  # never in the past
        taken.append((slot - T0).total_seconds())
    return taken


def most_in_any_window(times: list[float], window: float) -> int:
    ordered = sorted(times)
    most, start = 0, 0
    for end, t in enumerate(ordered):
        while t - ordered[start] >= window:
            start += 1
        most = max(most, end - start + 1)
    return most


def test_githubs_secondary_limits_hold_when_everything_is_approved_at_once() -> None:
    taken = slots(GITHUB, [0.0] * 700)
    assert taken[:3] == [0.0, 1.0, 2.0]  # a second apart from the first
    assert min(b - a for a, b in itertools.pairwise(taken)) >= 1.0 - 1e-9
    assert most_in_any_window(taken, 60.0) <= 80
    assert most_in_any_window(taken, 3600.0) <= 500
    # and the pace is not needlessly slow: the 500th write goes out within the hour
    assert taken[499] < 3600.0


@settings(max_examples=200, deadline=None)
@given(
    interval=st.floats(0.0, 3.0),
    burst=st.integers(1, 20),
    refill=st.floats(0.01, 5.0),
    gaps=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=80),
)
def test_no_window_ever_holds_more_than_the_pace_allows(
    interval: float, burst: int, refill: float, gaps: list[float]
) -> None:
    pace = Pace(interval, burst, refill)
    request_times = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    taken = slots(pace, request_times)
    assert taken == sorted(taken)  # first come, first served
    for window in (0.5, 1.0, 7.0, 60.0):
        assert most_in_any_window(taken, window) <= pace.most_in(window) + 1e-6


def test_an_idle_credential_refills_but_never_beyond_its_burst() -> None:
    pace = Pace(0.0, 3, 1.0)
    taken = slots(pace, [0, 0, 0, 0, 100, 100, 100, 100])
    assert taken[:3] == [0, 0, 0] and taken[3] == pytest.approx(1.0)
    assert taken[4:7] == [100, 100, 100] and taken[7] == pytest.approx(101.0)


def test_keys_name_whose_allowance_a_write_uses() -> None:
    tenant = UUID(int=7)
    assert pace_key(PaceTarget.GITHUB, Credential.SERVICE, None, tenant) == "github:service"
    assert (
        pace_key(PaceTarget.GITHUB, Credential.APPROVER, "0123456789abcdef", tenant)
        == "github:approver:0123456789abcdef"
    )
    assert (
        pace_key(PaceTarget.GITLAB, Credential.SERVICE, None, tenant) == f"gitlab:tenant:{tenant}"
    )
    assert pace_key(PaceTarget.SMTP, Credential.SERVICE, None, tenant) == f"smtp:tenant:{tenant}"


def test_a_held_slot_is_used_when_due_and_given_up_when_stale() -> None:
    assert held_slot_usable(T0, T0 + timedelta(seconds=1), grace_seconds=5)
    assert not held_slot_usable(T0, T0 + timedelta(seconds=6), grace_seconds=5)
    assert not held_slot_usable(T0 + timedelta(seconds=3), T0, grace_seconds=5)  # not yet due
    assert not held_slot_usable(None, T0, grace_seconds=5)


def test_the_waiting_detail_names_the_system_and_the_time() -> None:
    at = datetime(2026, 12, 1, 9, 5, 7, tzinfo=UTC)
    assert (
        waiting_detail(PaceTarget.GITHUB, at) == "waiting for GitHub's pace, next at 09:05:07 UTC"
    )


def test_the_product_paces_by_default_and_can_be_told_not_to() -> None:
    paces = gate_settings(Settings()).pace.paces
    assert set(paces) == set(PaceTarget)
    assert paces[PaceTarget.GITHUB] == GITHUB
    assert gate_settings(Settings(pace=PaceConfig(enabled=False))).pace.paces == {}


def test_a_burst_at_or_over_the_hourly_allowance_is_refused() -> None:
    with pytest.raises(ValueError, match="RESOLVEFLOW_PACE_SMTP_BURST must be below"):
        PaceConfig(smtp_burst=300, smtp_per_hour=300)
    with pytest.raises(ValueError):
        Pace(1.0, 0, 1.0)
