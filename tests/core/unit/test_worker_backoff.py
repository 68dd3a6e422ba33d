"""The worker's reconnect waits (worker/supervise.py): capped exponential backoff with jitter,
and the one-line reason an outage is logged with."""

from __future__ import annotations

import itertools

import psycopg
from procrastinate import exceptions as queue_errors

from resolveflow.config import WorkerSettings
from resolveflow.worker.supervise import Backoff, outage_reason


def test_waits_double_up_to_the_cap_without_jitter() -> None:
    waits = Backoff(1.0, 30.0, 0.0).delays()
    assert list(itertools.islice(waits, 7)) == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_jitter_shortens_each_wait_by_at_most_its_share() -> None:
    backoff = Backoff(1.0, 8.0, 0.5)
    longest = list(itertools.islice(backoff.delays(draw=lambda: 0.0), 5))
    shortest = list(itertools.islice(backoff.delays(draw=lambda: 1.0), 5))
    assert longest == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert shortest == [0.5, 1.0, 2.0, 4.0, 4.0]


def test_a_cap_below_the_first_wait_caps_it_too() -> None:
    assert next(Backoff(10.0, 2.0, 0.0).delays()) == 2.0


def test_the_defaults_are_safe() -> None:
    backoff = Backoff.of(WorkerSettings())
    assert (backoff.initial, backoff.maximum, backoff.jitter) == (1.0, 30.0, 0.5)


def test_the_reason_is_the_innermost_causes_first_line() -> None:
    cause = psycopg.OperationalError("connection refused\n\tIs the server running?")
    try:
        try:
            raise cause
        except psycopg.OperationalError as exc:
            raise queue_errors.ConnectorException() from exc
    except queue_errors.ConnectorException as wrapped:
        assert outage_reason(wrapped) == "OperationalError: connection refused"
