"""Regressions for the findings of the gate review (each test failed before its fix)."""

from __future__ import annotations

from conftest import (
    World,
    attempt_outcomes,
    execution_state,
    expire_lease,
    make_due,
    make_executor,
    make_reconciler,
    propose_and_approve,
)
from resolveflow.domain.records import ExecutionState
from resolveflow.gate import executions as execution_service
from resolveflow.gate.store import executions
from resolveflow.sandbox.forge.server import Delay, FakeGitHubServer, SecondaryRateLimit, Status
from resolveflow.store import audit
from resolveflow.store.database import Database

REPO = "acme/widgets"


def test_refusal_after_the_comment_went_out_is_partial_not_failed(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    _, approved = propose_and_approve(db, world, labels=["bug"])
    fake_github.inject(SecondaryRateLimit(retry_after=60), method="PATCH", path=r"/issues/1$")
    executor = make_executor(db, github_client)
    executor.run_due()
    waiting = execution_state(db, world, approved.execution.id)
    assert waiting.state is ExecutionState.PENDING and waiting.comment_id is not None
    fake_github.remove_repo_label(REPO, "bug")
    make_due(superuser, approved.execution.id)  # Retry-After has passed
    executor.run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.PARTIAL
    assert "comment posted" in (execution.detail or "")
    assert len(fake_github.comments(REPO, 1)) == 1


def test_not_sent_after_the_comment_was_confirmed_becomes_partial(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world, labels=["bug"])
    fake_github.inject(Delay(seconds=2.0, apply_write=False), method="PATCH", path=r"/issues/1$")
    make_executor(db, github_client).run_due()
    unknown = execution_state(db, world, approved.execution.id)
    assert unknown.state is ExecutionState.UNKNOWN and unknown.comment_id is not None
    after = execution_service.resolve(
        db, world.approver(db), approved.execution.id, was_sent=False, note=None
    )
    assert after.state is ExecutionState.PARTIAL


def test_a_rate_limited_attempt_does_not_count_as_possibly_sent(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(SecondaryRateLimit(retry_after=60))
    make_executor(db, github_client).run_due()
    assert attempt_outcomes(db, world, approved.execution.id) == [("comment", "rate_limited")]
    make_due(superuser, approved.execution.id)  # Retry-After has passed
    with db.tenant(world.tenant.id) as conn:  # a worker claims it, then dies before any attempt
        assert executions.claim_by_id(conn, world.tenant.id, approved.execution.id, "dead", 30)
    expire_lease(superuser, approved.execution.id)
    [settled] = make_reconciler(db, github_client).run()
    assert settled.state is ExecutionState.PENDING
    assert fake_github.writes_applied == 0


def test_the_same_text_can_be_approved_again_after_a_failure_that_wrote_nothing(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, first = propose_and_approve(db, world, comment="same words")
    fake_github.inject(Status(404))
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, first.execution.id).state is ExecutionState.FAILED
    _, second = propose_and_approve(db, world, comment="same words")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, second.execution.id).state is ExecutionState.SENT
    assert len(fake_github.comments(REPO, 1)) == 1


def test_still_unknown_is_neither_rechecked_too_often_nor_re_audited(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(Delay(seconds=2.0, apply_write=False))
    make_executor(db, github_client).run_due()
    reconciler = make_reconciler(db, github_client)
    assert len(reconciler.run()) == 1
    reads_before = fake_github.requests_received
    assert reconciler.run(min_age_seconds=300) == []
    assert fake_github.requests_received == reads_before
    reconciler.run()
    with db.tenant(world.tenant.id) as conn:
        events = audit.events_for(conn, world.tenant.id, [str(approved.execution.id)])
    assert [e.event for e in events].count("execution.reconciled_unknown") == 1


def test_a_copy_of_the_exact_comment_from_another_account_does_not_count(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world, comment="exact words")
    fake_github.inject(Delay(seconds=2.0, apply_write=False))
    make_executor(db, github_client).run_due()
    from resolveflow.gate.domain.actions import body_with_marker

    copy = body_with_marker("exact words", str(approved.execution.id))
    fake_github.add_comment_directly(REPO, 1, copy, "insider")
    make_reconciler(db, github_client).run()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN
    fake_github.add_comment_directly(REPO, 1, copy, "resolveflow-bot")  # the service account
    make_reconciler(db, github_client).run()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
