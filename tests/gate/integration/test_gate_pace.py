"""Write pacing through the gate (issue 17): many executors on one Postgres share a credential's
pace, the queue's order is the sending order, a far slot is held and shown, and a 403 that still
comes back waits for Retry-After."""

from __future__ import annotations

import re
import threading
import time
from datetime import timedelta

from conftest import (
    World,
    attempt_outcomes,
    execution_state,
    make_due,
    make_executor,
    propose_and_approve,
    seconds_until_due,
)
from resolveflow.bootstrap.pace import schedule_execute
from resolveflow.domain.records import ExecutionState
from resolveflow.gate.domain.pace import Pace, PaceTarget
from resolveflow.gate.lease import PaceSettings
from resolveflow.sandbox.forge.server import FakeGitHubServer, SecondaryRateLimit
from resolveflow.store.database import Database

REPO = "acme/widgets"
JITTER = 0.05  # seconds between a request leaving and the fake forge seeing it, at worst


def paced(pace: Pace) -> PaceSettings:
    return PaceSettings(paces={PaceTarget.GITHUB: pace})


def most_in_any_window(times: list[float], window: float) -> int:
    ordered, most, start = sorted(times), 0, 0
    for end, t in enumerate(ordered):
        while t - ordered[start] >= window:
            start += 1
        most = max(most, end - start + 1)
    return most


def test_two_hundred_approvals_drained_by_four_executors_never_exceed_the_pace(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    # GitHub's shape, time scaled down: 50 ms apart, a burst of 10, then 10 a second.
    pace = Pace(0.05, 10, 10.0)
    approved = [
        propose_and_approve(db, world, comment=f"Paced note {i}")[1].execution.id
        for i in range(200)
    ]
    executors = [make_executor(db, github_client, pace=paced(pace)) for _ in range(4)]
    deadline = time.monotonic() + 90

    def drain(executor) -> None:  # type: ignore[no-untyped-def]
        # A worker's loop: drain what is due, look again shortly (held slots come due).
        while time.monotonic() < deadline and fake_github.writes_applied < len(approved):
            executor.run_due([world.tenant.id])
            time.sleep(0.01)

    threads = [threading.Thread(target=drain, args=(e,)) for e in executors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    states = [execution_state(db, world, e).state for e in approved]
    assert states.count(ExecutionState.SENT) == 200
    assert fake_github.writes_received == 200 and fake_github.writes_applied == 200
    arrivals = [at for at, _login in fake_github.write_times]
    # The server's own clock: no window holds more than the pace allows in it, give or take
    # JITTER (a request leaves at its slot but may arrive late, next to the following one).
    for window in (0.25, 1.0, 3.0):
        assert most_in_any_window(arrivals, window) <= pace.most_in(window + JITTER)
    # Unpaced, four executors post 200 comments in about two seconds.
    assert most_in_any_window(arrivals, 2.0) < 40
    # It paced rather than stalled: 200 writes at 10/s after a burst of 10 take about 19 s.
    assert arrivals[-1] - arrivals[0] < 45
    # Queue order: a note approved well before another is posted before it.
    posted = [c["body"] for c in fake_github.comments(REPO, 1)]
    position = {
        int(m.group(1)): i for i, b in enumerate(posted) if (m := re.search(r"note (\d+)", b))
    }
    assert len(position) == 200
    assert all(position[i] < position[i + 20] for i in range(180))


def test_a_far_slot_gives_the_execution_back_holding_it_and_says_until_when(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    pace = Pace(1.0, 1, 1 / 3600)  # one write, then one an hour
    first = propose_and_approve(db, world, comment="first")[1].execution.id
    second = propose_and_approve(db, world, comment="second")[1].execution.id
    executor = make_executor(db, github_client, pace=paced(pace))
    executor.pacer.schedule = schedule_execute  # the worker's job at the slot's time
    assert executor.run_due() == 2  # one sent, one given back
    assert execution_state(db, world, first).state is ExecutionState.SENT
    waiting = execution_state(db, world, second)
    assert waiting.state is ExecutionState.PENDING
    assert re.fullmatch(
        r"waiting for GitHub's pace, next at \d\d:\d\d:\d\d UTC", waiting.detail or ""
    )
    assert waiting.pace_slot_at is not None and waiting.not_before == waiting.pace_slot_at
    assert waiting.detail.endswith(f"{waiting.pace_slot_at:%H:%M:%S} UTC")
    assert 3590 < seconds_until_due(superuser, second) <= 3600
    assert waiting.rate_limit_waits == 0  # pacing is not a rate-limit answer
    assert attempt_outcomes(db, world, second) == []  # nothing was attempted
    job = superuser.execute(
        "SELECT task_name, queueing_lock, scheduled_at FROM procrastinate_jobs "
        "WHERE queueing_lock = %s",
        [f"execute:{second}"],
    ).fetchone()
    assert job is not None and job[0] == "resolveflow.execute"
    assert abs(job[2] - waiting.pace_slot_at) < timedelta(seconds=2)
    event = superuser.execute(
        "SELECT details FROM audit_events WHERE subject_id = %s AND event = 'execution.deferred'",
        [str(second)],
    ).fetchone()
    assert event is not None and event[0]["reason"] == "pace"

    assert executor.run_due() == 0  # not before its slot
    bucket_before = superuser.execute("SELECT next_at FROM write_pace").fetchall()
    # The hour passes: the held slot is due, and is used (no second reservation).
    superuser.execute(
        "UPDATE executions SET pace_slot_at = clock_timestamp(), not_before = clock_timestamp() "
        "WHERE id = %s",
        [second],
    )
    assert executor.run_due() == 1
    assert execution_state(db, world, second).state is ExecutionState.SENT
    assert execution_state(db, world, second).pace_slot_at is None
    assert superuser.execute("SELECT next_at FROM write_pace").fetchall() == bucket_before
    assert fake_github.writes_applied == 2


def test_a_stale_held_slot_is_given_up_for_a_new_one(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    pace = Pace(1.0, 1, 1 / 3600)
    propose_and_approve(db, world, comment="first")
    second = propose_and_approve(db, world, comment="second")[1].execution.id
    executor = make_executor(db, github_client, pace=paced(pace))
    executor.run_due()
    # Its slot passed long ago (workers were down): going now could bunch writes together.
    superuser.execute(
        "UPDATE executions SET pace_slot_at = clock_timestamp() - interval '1 hour', "
        "not_before = clock_timestamp() WHERE id = %s",
        [second],
    )
    assert executor.run_due() == 1
    again = execution_state(db, world, second)
    assert again.state is ExecutionState.PENDING and fake_github.writes_applied == 1
    assert seconds_until_due(superuser, second) > 3000  # the next slot in the pace


def test_a_secondary_limit_that_still_comes_back_waits_for_retry_after(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(SecondaryRateLimit(retry_after=60))
    executor = make_executor(db, github_client, pace=paced(Pace(0.01, 5, 10.0)))
    executor.run_due()
    waiting = execution_state(db, world, approved.execution.id)
    assert waiting.state is ExecutionState.PENDING and waiting.rate_limit_waits == 1
    assert 55 < seconds_until_due(superuser, approved.execution.id) <= 60
    make_due(superuser, approved.execution.id)
    assert executor.run_due() == 1
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    assert fake_github.writes_applied == 1
