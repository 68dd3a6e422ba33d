"""Issue 11's gate findings: a stalled request, background work that must go on, the account
reconciliation reads with, and a reconciler that lost its lease."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from conftest import (
    World,
    attempt_outcomes,
    execution_state,
    expire_lease,
    make_executor,
    make_reconciler,
    pass_deadlines,
    propose_and_approve,
)
from fixtures_github import SERVICE_TOKEN
from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import IssueComment, PostedComment, RepoName
from resolveflow.domain.records import ExecutionState, Role
from resolveflow.errors import Forbidden
from resolveflow.gate import approvals, proposals
from resolveflow.gate import executions as execution_service
from resolveflow.gate.executor import Executor
from resolveflow.gate.lease import GateSettings
from resolveflow.gate.reconcile import Reconciler
from resolveflow.sandbox.forge.faults import Trickle
from resolveflow.sandbox.forge.server import DropAfterWrite, FakeGitHubServer, Status
from resolveflow.store.database import Database

REPO = "acme/widgets"


class Hooked(GitHubKitClient):
    """The real client, with a test's hook run at a chosen moment (a stall, a stolen lease)."""

    before_post: Callable[[], None] | None = None
    before_listing: Callable[[], None] | None = None

    def post_comment(  # type: ignore[override]
        self, repo: RepoName, issue_number: int, body: str, *, token: str | None = None
    ) -> PostedComment:
        if self.before_post is not None:
            hook, self.before_post = self.before_post, None
            hook()
        return super().post_comment(repo, issue_number, body, token=token)

    def list_issue_comments(  # type: ignore[override]
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueComment]:
        if self.before_listing is not None:
            hook, self.before_listing = self.before_listing, None
            hook()
        return super().list_issue_comments(repo, issue_number, token=token)


def test_a_stalled_request_never_lands_twice(
    db: Database, world: World, fake_github: FakeGitHubServer, superuser: psycopg.Connection[Any]
) -> None:
    """The reported sequence: the executor stalls after recording its attempt, a reconciler marks
    the execution unknown, a person says "not sent", the stalled request lands, and the same text
    is approved again. The second execution finds the first one's comment and posts nothing."""
    _, first = propose_and_approve(db, world)
    reconciled: list[Any] = []

    def stall() -> None:
        expire_lease(superuser, first.execution.id)  # the lease ran out during the stall ...
        superuser.execute(  # ... but the request's deadline has not
            "UPDATE execution_attempts SET deadline_at = now() + interval '1 hour'"
            " WHERE execution_id = %s",
            [first.execution.id],
        )
        reconciled.extend(make_reconciler(db, client).run())  # must not take over
        pass_deadlines(superuser, first.execution.id)
        reconciled.extend(make_reconciler(db, client).run())  # now it may: no marker yet
        execution_service.resolve(
            db, world.approver(db), first.execution.id, was_sent=False, note="nothing there"
        )

    with Hooked(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as client:
        client.before_post = stall
        make_executor(db, client).run_due()  # the stalled request lands after all
        assert [settled.state for settled in reconciled] == [ExecutionState.UNKNOWN]
        assert execution_state(db, world, first.execution.id).state is ExecutionState.NOT_SENT
        assert len(fake_github.comments(REPO, 1)) == 1

        _, second = propose_and_approve(db, world)  # the same text, approved again
        make_executor(db, client).run_due()
    after = execution_state(db, world, second.execution.id)
    assert after.state is ExecutionState.SENT
    assert after.detail == f"not written again: earlier execution {first.execution.id} delivered it"
    [comment] = fake_github.comments(REPO, 1)
    assert after.comment_id == comment["id"]
    assert attempt_outcomes(db, world, second.execution.id) == []


def test_an_executor_that_stalled_past_its_time_to_start_sends_nothing(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    _, approved = propose_and_approve(db, world)
    # The claim reads the clock once; the next reading, right before the request, is an hour on.
    clock = itertools.chain([0.0], itertools.repeat(3600.0)).__next__
    executor = Executor(db, github_client, GateSettings(lease_seconds=30.0), clock=clock)
    executor.run_due()
    assert fake_github.requests_received == 0
    assert attempt_outcomes(db, world, approved.execution.id) == [("comment", "unavailable")]
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.PENDING


def test_one_unreadable_token_does_not_stop_the_other_executions(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    bea = admin.add_principal(db, "acme", "bea", [Role.APPROVER])
    fake_github.register_token("alex-token", "alex-on-github")
    fake_github.register_token("bea-token", "bea-on-github")
    alex_id = world.approver(db).id
    tokens = {alex_id: "alex-token", authenticate(db, bea.token).id: "bea-token"}

    def sign_in_store(conn: Any, tenant_id: uuid.UUID, principal_id: uuid.UUID) -> str | None:
        return tokens.get(principal_id)

    _, by_alex = propose_and_approve(db, world, issue=1)
    proposal = proposals.create_proposal(
        db, world.requester(db), repository=REPO, issue=1, comment="Another reply", labels=[]
    )
    by_bea = approvals.approve(db, authenticate(db, bea.token), proposal.id, proposal.digest, 60)
    fake_github.inject(DropAfterWrite())
    fake_github.inject(DropAfterWrite())
    settings = GateSettings(lease_seconds=30.0)
    Executor(db, github_client, settings, token_lookup=sign_in_store).run_due()
    assert {c["user"]["login"] for c in fake_github.comments(REPO, 1)} == {
        "alex-on-github",
        "bea-on-github",
    }

    def unreadable(conn: Any, tenant_id: uuid.UUID, principal_id: uuid.UUID) -> str | None:
        if principal_id == alex_id:
            raise Forbidden("alex's GitHub token cannot be decrypted")
        return tokens[principal_id]

    settled = Reconciler(db, github_client, settings, token_lookup=unreadable).run()
    assert [(s.execution_id, s.state) for s in settled] == [
        (by_bea.execution.id, ExecutionState.SENT)
    ]
    assert execution_state(db, world, by_alex.execution.id).state is ExecutionState.UNKNOWN
    timeline = execution_service.show_execution(db, world.approver(db), by_alex.execution.id)
    assert "execution.reconcile_failed" in [event["event"] for event in timeline["timeline"]]


def test_reconciliation_reads_with_the_credential_the_comment_was_sent_with(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    fake_github.register_token("alex-old", "alex-on-github")
    fake_github.register_token("alex-new", "alex-second-account")
    current = {"token": "alex-old"}

    def sign_in_store(conn: Any, tenant_id: uuid.UUID, principal_id: uuid.UUID) -> str | None:
        return current["token"]

    _, approved = propose_and_approve(db, world)
    fake_github.inject(DropAfterWrite())
    settings = GateSettings(lease_seconds=30.0)
    Executor(db, github_client, settings, token_lookup=sign_in_store).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN

    current["token"] = "alex-new"  # the approver signed in again with another account
    [settled] = Reconciler(db, github_client, settings, token_lookup=sign_in_store).run()
    assert settled.state is ExecutionState.SENT


def test_a_reconciler_that_lost_its_lease_reports_nothing(
    db: Database, world: World, fake_github: FakeGitHubServer, superuser: psycopg.Connection[Any]
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(DropAfterWrite())
    with Hooked(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as client:
        make_executor(db, client).run_due()

        def steal() -> None:
            superuser.execute(
                "UPDATE executions SET lease_owner = 'someone-else',"
                " lease_expires_at = now() + interval '1 hour' WHERE id = %s",
                [approved.execution.id],
            )

        client.before_listing = steal
        assert make_reconciler(db, client).run() == []
    after = execution_state(db, world, approved.execution.id)
    assert (after.state, after.lease_owner) == (ExecutionState.UNKNOWN, "someone-else")


def test_a_trickled_answer_is_cut_at_the_request_deadline(
    db: Database, world: World, fake_github: FakeGitHubServer
) -> None:
    """httpx's timeouts restart with every byte; only the wall-clock deadline bounds a request."""
    _, approved = propose_and_approve(db, world)
    fake_github.inject(Trickle(interval=0.02), method="POST")  # ~1.5 KB: about 30 s in all
    with GitHubKitClient(
        fake_github.url, SERVICE_TOKEN, timeout_seconds=0.5, deadline_seconds=1.5
    ) as client:
        started = time.monotonic()
        make_executor(db, client).run_due()
        elapsed = time.monotonic() - started
        assert elapsed < 5, elapsed  # the deadline (1.5 s) plus one read, not the whole answer
        after = execution_state(db, world, approved.execution.id)
        assert after.state is ExecutionState.UNKNOWN
        assert "deadline" in (after.detail or "")
        [settled] = make_reconciler(db, client).run()
    assert settled.state is ExecutionState.SENT
    assert len(fake_github.comments(REPO, 1)) == 1


def test_labels_are_confirmed_by_who_added_them_not_by_their_presence(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    # Ours: the labels request was applied but its answer lost; the history shows the bot.
    _, ours = propose_and_approve(db, world, labels=["bug"])
    fake_github.inject(DropAfterWrite(), method="PATCH", path=f"/repos/{REPO}/issues/1$")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, ours.execution.id).state is ExecutionState.UNKNOWN
    [settled] = make_reconciler(db, github_client).run()
    assert settled.state is ExecutionState.SENT

    # Not ours: the request failed unapplied, then someone else added the same label. Presence
    # proves nothing, so the labels step is sent again; it reads the issue first and, the label
    # being there already, writes nothing.
    fake_github.add_issue(REPO, 2, "Another", "Body", user="octocat")
    _, theirs = propose_and_approve(db, world, labels=["question"], issue=2)
    fake_github.inject(Status(502), method="PATCH", path=f"/repos/{REPO}/issues/2$")
    make_executor(db, github_client).run_due()
    fake_github.add_issue_event(REPO, 2, "labeled", actor="stranger", label="question")
    assert fake_github.issue_labels(REPO, 2) == ["question"]
    [settled] = make_reconciler(db, github_client).run()
    assert (settled.execution_id, settled.state) == (theirs.execution.id, ExecutionState.PENDING)
    assert "labels not confirmed by the issue's history (question)" in settled.detail
    labels_requests = fake_github.writes_received
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, theirs.execution.id)
    assert (after.state, after.labels_done) == (ExecutionState.SENT, True)
    assert fake_github.writes_received == labels_requests  # the label was on the issue
    assert len(fake_github.comments(REPO, 2)) == 1


class _Killed(Exception):
    """Stands in for the process dying at this line."""


def test_a_labels_request_that_never_left_is_sent_again_after_reconciliation(
    db: Database, world: World, fake_github: FakeGitHubServer, superuser: psycopg.Connection[Any]
) -> None:
    """Killed after the labels attempt row was committed, before the request: the history shows
    no label added, so the labels step goes back to the queue and converges."""
    _, approved = propose_and_approve(db, world, labels=["bug"])

    class DiesBeforeLabels(GitHubKitClient):
        def set_issue_labels(  # type: ignore[override]
            self, repo: RepoName, issue_number: int, labels: object, **_: object
        ) -> list[str]:
            raise _Killed

    with (
        DiesBeforeLabels(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as dying,
        pytest.raises(_Killed),
    ):
        make_executor(db, dying).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENDING
    expire_lease(superuser, approved.execution.id)
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as client:
        [settled] = make_reconciler(db, client).run()
        assert settled.state is ExecutionState.PENDING
        make_executor(db, client).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert (after.state, after.labels_done) == (ExecutionState.SENT, True)
    assert len(fake_github.comments(REPO, 1)) == 1
    assert fake_github.issue_labels(REPO, 1) == ["bug"]
