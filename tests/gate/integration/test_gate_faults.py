"""Uncertain outcomes: timeouts, lost responses, rate limits and crashes."""

from __future__ import annotations

from conftest import (
    World,
    attempt_outcomes,
    execution_state,
    make_due,
    make_executor,
    make_reconciler,
    propose_and_approve,
    seconds_until_due,
)
from resolveflow.domain.records import ExecutionState
from resolveflow.gate import executions as execution_service
from resolveflow.sandbox.forge.server import (
    Delay,
    DropAfterWrite,
    FakeGitHubServer,
    Malformed2xx,
    PrimaryRateLimit,
    SecondaryRateLimit,
    Status,
)
from resolveflow.store.database import Database

REPO = "acme/widgets"


def test_timeout_gives_unknown_and_no_resend_then_a_person_resolves_it(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(Delay(seconds=2.0, apply_write=False))
    executor = make_executor(db, github_client)
    executor.run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN

    executor.run_due()
    executor.execute_one(world.tenant.id, approved.execution.id)
    make_reconciler(db, github_client).run()  # no marker on the issue: stays unknown
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN
    assert fake_github.writes_received == 1

    after = execution_service.resolve(
        db, world.approver(db), approved.execution.id, was_sent=False, note="checked the issue"
    )
    assert after.state is ExecutionState.NOT_SENT
    executor.run_due()
    assert fake_github.writes_received == 1
    assert fake_github.comments(REPO, 1) == []


def test_a_person_can_confirm_an_unknown_as_sent(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(
        Status(502, body="<html><body>Bad gateway</body></html>", content_type="text/html")
    )
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN
    after = execution_service.resolve(
        db, world.approver(db), approved.execution.id, was_sent=True, note=None
    )
    assert after.state is ExecutionState.SENT


def test_lost_response_after_the_write_is_found_by_reconciliation(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    for n in range(250):  # the marker lands on the third page of comments
        fake_github.add_comment_directly(REPO, 1, f"earlier comment {n}")
    _, approved = propose_and_approve(db, world, labels=["bug"])
    fake_github.inject(DropAfterWrite())
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN

    settled = make_reconciler(db, github_client).run()
    # The comment is found; labels were never tried, so the execution goes back for labels only.
    assert [s.state for s in settled] == [ExecutionState.PENDING]
    make_executor(db, github_client).run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.SENT
    ours = [c for c in fake_github.comments(REPO, 1) if "resolveflow:action" in c["body"]]
    assert len(ours) == 1 and ours[0]["id"] == execution.comment_id
    assert fake_github.issue_labels(REPO, 1) == ["bug"]
    assert fake_github.writes_applied == 2


def test_malformed_success_body_is_unknown_and_reconciled_to_sent(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(Malformed2xx())
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN
    make_reconciler(db, github_client).run()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    assert len(fake_github.comments(REPO, 1)) == 1


def test_a_stranger_quoting_the_marker_does_not_count_as_delivery(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(Delay(seconds=2.0, apply_write=False))
    make_executor(db, github_client).run_due()
    marker = f"<!-- resolveflow:action={approved.execution.id} -->"
    fake_github.add_comment_directly(REPO, 1, f"something else entirely\n\n{marker}", "mallory")
    make_reconciler(db, github_client).run()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN


def test_secondary_rate_limit_waits_then_posts_once_and_is_never_unknown(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(SecondaryRateLimit(retry_after=60))
    executor = make_executor(db, github_client)
    executor.run_due()
    waiting = execution_state(db, world, approved.execution.id)
    assert waiting.state is ExecutionState.PENDING
    assert waiting.rate_limit_waits == 1
    assert 55 < seconds_until_due(superuser, approved.execution.id) <= 60
    assert executor.run_due() == 0  # not due before Retry-After
    make_due(superuser, approved.execution.id)  # the minute has passed
    assert executor.run_due() == 1
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    assert fake_github.writes_applied == 1
    assert len(fake_github.comments(REPO, 1)) == 1
    assert attempt_outcomes(db, world, approved.execution.id) == [
        ("comment", "rate_limited"),
        ("comment", "sent"),
    ]


def test_primary_rate_limit_waits_until_the_reset_time(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(PrimaryRateLimit(reset_in=60))  # x-ratelimit-reset: whole seconds
    executor = make_executor(db, github_client)
    executor.run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.PENDING
    assert 55 < seconds_until_due(superuser, approved.execution.id) <= 60
    assert executor.run_due() == 0  # not due before the reset
    make_due(superuser, approved.execution.id)  # the reset time has come
    assert executor.run_due() == 1
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    assert fake_github.writes_applied == 1


def test_rate_limit_retries_are_bounded(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(SecondaryRateLimit(retry_after=0), times=5)
    executor = make_executor(db, github_client, rate_limit_max_waits=2)
    for _ in range(5):  # Retry-After: 0, so each retry is due at once
        executor.run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.FAILED
    assert "gave up" in (execution.detail or "")
    assert fake_github.writes_applied == 0
    assert fake_github.writes_received == 3


def test_unreachable_github_is_retried_later_not_unknown(
    db: Database, world: World, fake_github: FakeGitHubServer
) -> None:
    from resolveflow.adapters.github.client import GitHubKitClient

    _, approved = propose_and_approve(db, world)
    closed = GitHubKitClient("http://127.0.0.1:9", "t", 0.5)
    make_executor(db, closed).run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.PENDING
    assert attempt_outcomes(db, world, approved.execution.id) == [("comment", "unavailable")]
