"""The executor gate against a real Postgres and the fake GitHub over HTTP."""

from __future__ import annotations

import threading

import pytest

from conftest import (
    World,
    attempt_outcomes,
    execution_state,
    make_executor,
    make_world,
    propose_and_approve,
)
from resolveflow.accounts import admin
from resolveflow.domain.records import ExecutionState, Role
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import body_with_marker
from resolveflow.sandbox.forge.server import FakeGitHubServer, Status
from resolveflow.store.database import Database

REPO = "acme/widgets"


def test_approved_comment_is_posted_exactly_as_approved_with_the_marker(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    text = "Thanks! Ünïcode, `code`, and\nmultiple lines."
    _, approved = propose_and_approve(db, world, comment=text, labels=["bug"])
    assert make_executor(db, github_client).run_due() == 1

    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.SENT
    [posted] = fake_github.comments(REPO, 1)
    assert posted["body"] == body_with_marker(text, str(execution.id))
    assert posted["id"] == execution.comment_id
    assert fake_github.issue_labels(REPO, 1) == ["bug"]
    assert execution.labels_done
    assert attempt_outcomes(db, world, execution.id) == [("comment", "sent"), ("labels", "sent")]


def test_comment_is_posted_with_the_approvers_own_token(
    db: Database, fake_github: FakeGitHubServer, github_client
) -> None:
    from resolveflow.accounts.auth import authenticate
    from resolveflow.bootstrap.app import App
    from resolveflow.config import Settings, WebSettings
    from resolveflow.store.token_cipher import TokenCipher

    fake_github.register_token("alex-own-token", "alex-on-github")
    world = make_world(db)
    key = TokenCipher.generate_key()
    app = App(
        settings=Settings(web=WebSettings(token_encryption_key=key)), db=db, _github=github_client
    )
    own = admin.add_principal(
        db, "acme", "olga", [Role.APPROVER], "alex-own-token", app.token_cipher()
    )
    proposal = proposals.create_proposal(
        db, world.requester(db), repository=REPO, issue=1, comment="hi", labels=[]
    )
    approvals.approve(db, authenticate(db, own.token), proposal.id, proposal.digest, 3600)
    app.executor().run_due()
    assert [c["user"]["login"] for c in fake_github.comments(REPO, 1)] == ["alex-on-github"]


def test_retry_after_success_does_not_post_twice(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    executor = make_executor(db, github_client)
    first = executor.execute_one(world.tenant.id, approved.execution.id)
    again = executor.execute_one(world.tenant.id, approved.execution.id)
    other = make_executor(db, github_client).execute_one(world.tenant.id, approved.execution.id)
    assert executor.run_due() == 0
    assert first.state is again.state is other.state is ExecutionState.SENT
    assert fake_github.writes_received == 1
    assert len(fake_github.comments(REPO, 1)) == 1


def test_sixteen_concurrent_executors_post_once_repeated_fifty_times(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    executors = [make_executor(db, github_client) for _ in range(16)]
    for round_number in range(50):
        _, approved = propose_and_approve(db, world, comment=f"round {round_number}")
        barrier = threading.Barrier(len(executors))
        errors: list[BaseException] = []

        def race(executor, execution_id=approved.execution.id, barrier=barrier) -> None:
            try:
                barrier.wait()
                executor.execute_one(world.tenant.id, execution_id)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=race, args=(e,)) for e in executors]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not errors
        assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
        bodies = [c["body"] for c in fake_github.comments(REPO, 1)]
        assert sum(body.startswith(f"round {round_number}\n") for body in bodies) == 1
    assert fake_github.writes_received == 50


def test_a_label_that_fails_after_the_comment_is_partial_and_never_resends_the_comment(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world, labels=["bug"])
    fake_github.inject(Status(422), method="PATCH", path=r"/issues/\d+$")
    executor = make_executor(db, github_client)
    executor.run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.PARTIAL
    assert execution.comment_id is not None
    executor.run_due()
    executor.execute_one(world.tenant.id, approved.execution.id)
    assert len(fake_github.comments(REPO, 1)) == 1
    assert attempt_outcomes(db, world, execution.id) == [
        ("comment", "sent"),
        ("labels", "rejected"),
    ]


def test_definite_rejection_fails_without_retry(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(Status(404))
    executor = make_executor(db, github_client)
    executor.run_due()
    executor.run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.FAILED
    assert "404" in (execution.detail or "")
    assert fake_github.writes_received == 1
    assert fake_github.writes_applied == 0


@pytest.mark.parametrize("change", ["repository removed", "label deleted"])
def test_policy_change_between_approval_and_execution_fails_closed(
    change: str, db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world, labels=["bug"])
    if change == "repository removed":
        admin.remove_repository(db, "acme", REPO)
    else:
        fake_github.remove_repo_label(REPO, "bug")
    make_executor(db, github_client).run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.FAILED
    assert "refused before sending" in (execution.detail or "")
    assert fake_github.writes_received == 0
    assert attempt_outcomes(db, world, execution.id) == []


def test_what_a_signed_in_approver_approved_is_posted_with_their_own_token(
    db: Database, fake_github: FakeGitHubServer, github_client
) -> None:
    from resolveflow.bootstrap.app import App
    from resolveflow.config import Settings, WebSettings
    from resolveflow.store import tenants as tenant_store
    from resolveflow.store.token_cipher import TokenCipher

    key = TokenCipher.generate_key()
    fake_github.register_token("gho_alex_from_oauth", "alex-on-github")
    world = make_world(db)
    approver = world.approver(db)
    with db.tenant(world.tenant.id) as conn:
        tenant_store.save_github_token(
            conn, TokenCipher(key), approver, "gho_alex_from_oauth", github_login="alex-on-github"
        )
    app = App(
        settings=Settings(web=WebSettings(token_encryption_key=key)), db=db, _github=github_client
    )
    _, approved = propose_and_approve(db, world, comment="posted as alex")
    app.executor().run_due()
    [posted] = fake_github.comments(REPO, 1)
    assert posted["user"]["login"] == "alex-on-github"
    assert attempt_outcomes(db, world, approved.execution.id) == [("comment", "sent")]
