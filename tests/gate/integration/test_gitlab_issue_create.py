"""``gitlab.issue_create`` through the whole gate, with python-gitlab against the sandbox GitLab:
prepared from the tenant's aliases, approved by a person, created once, faults reconciled."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conftest import World, execution_state, make_due
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.bootstrap.gitlab import TenantGitLab
from resolveflow.config import GitLabSettings, Settings
from resolveflow.domain.records import ExecutionState
from resolveflow.errors import InvalidInput
from resolveflow.gate import approvals
from resolveflow.gate.domain.actions import execution_marker
from resolveflow.gate.executor import Executor
from resolveflow.gate.lease import GateSettings
from resolveflow.gate.reconcile import Reconciler
from resolveflow.policy_file import parse_policy
from resolveflow.sandbox.gitlab.server import (
    DropAfterWrite,
    FakeGitLabServer,
    HangAfterWrite,
    RateLimited,
    Status,
)
from resolveflow.store import gitlab_tokens
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher

TOKEN = "glpat-acme-bot"
CREATE = r"^/projects/42/issues$"
DESCRIPTION = "The disk on ops-3 is full.\n\nSteps: `df -h`."
POLICY = """
[tenants.acme.projects.ops]
forge = "gitlab"
project = "group/ops"
labels = ["bug", "ops"]
assignees = { alice = 12, bob = "bob" }
"""


@pytest.fixture
def fake() -> Iterator[FakeGitLabServer]:
    with FakeGitLabServer() as server:
        server.state.add_user(7, "acme-bot", TOKEN)
        server.state.add_user(9, "stranger", "stranger-token")
        server.state.add_user(12, "alice")
        server.state.add_user(13, "bob")
        server.state.add_project(42, "group/ops", ["bug", "ops", "secret"], members=[7, 9])
        server.state.add_project(43, "group/other", ["bug"], members=[7])
        yield server


@pytest.fixture
def gitlab(db: Database, world: World, fake: FakeGitLabServer) -> Iterator[TenantGitLab]:
    cipher = TokenCipher(TokenCipher.generate_key())
    with db.tenant(world.tenant.id) as conn:
        gitlab_tokens.save_gitlab_token(conn, cipher, world.tenant.id, "acme", TOKEN)
    settings = Settings(gitlab=GitLabSettings(url=fake.url, timeout_seconds=0.5))
    policy = parse_policy(POLICY)
    access = TenantGitLab(db, settings, lambda: policy, cipher)
    yield access
    access.close()


def prepare(db: Database, world: World, gitlab: TenantGitLab, **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "alias": "ops",
        "title": "Disk full on ops-3",
        "body": DESCRIPTION,
        "labels": ["ops"],
        "assignees": ["alice", "bob"],
        **overrides,
    }
    targets = IssueTargets(policy=gitlab.policy, gitlab=gitlab)
    return prepare_issue(db, world.requester(db), targets, **values)


def approve(db: Database, world: World, view: dict[str, Any]) -> Any:
    return approvals.approve(db, world.approver(db), view["id"], view["digest"], 3600)


def make_executor(db: Database, gitlab: TenantGitLab) -> Executor:
    # No GitHub client: a GitLab action never touches GitHub.
    return Executor(db, None, GateSettings(lease_seconds=30.0), gitlab=gitlab)  # type: ignore[arg-type]


def make_reconciler(db: Database, gitlab: TenantGitLab) -> Reconciler:
    return Reconciler(db, None, GateSettings(lease_seconds=30.0), gitlab=gitlab)  # type: ignore[arg-type]


def run(db: Database, gitlab: TenantGitLab) -> None:
    make_executor(db, gitlab).run_due()


def test_created_exactly_once_after_approval_and_never_before(
    db: Database, world: World, fake: FakeGitLabServer, gitlab: TenantGitLab
) -> None:
    view = prepare(db, world, gitlab)
    assert view["kind"] == "gitlab.issue_create"
    assert view["action"]["target"] == {"project_id": 42, "project": "group/ops"}
    assert view["action"]["assignees"] == [{"id": 12, "name": "alice"}, {"id": 13, "name": "bob"}]
    run(db, gitlab)  # nothing approved: nothing is written
    assert fake.writes_received == 0 and fake.issues(42) == []

    approved = approve(db, world, view)
    run(db, gitlab)
    run(db, gitlab)  # nothing left to do
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.SENT, after.detail
    [issue] = fake.issues(42)
    assert issue["description"] == f"{DESCRIPTION}\n\n{execution_marker(str(after.id))}"
    assert issue["labels"] == ["ops"]
    assert [person["id"] for person in issue["assignees"]] == [12, 13]
    assert issue["author"]["username"] == "acme-bot"
    assert (after.result_ref, after.result_url) == ("1", issue["web_url"])
    assert (fake.writes_received, fake.writes_applied) == (1, 1)


def test_a_dropped_response_is_unknown_then_reconciled_as_sent_with_one_issue(
    db: Database, world: World, fake: FakeGitLabServer, gitlab: TenantGitLab
) -> None:
    approved = approve(db, world, prepare(db, world, gitlab))
    fake.inject(DropAfterWrite(), method="POST", path=CREATE)
    run(db, gitlab)
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN
    for _ in range(230):  # the real one is on the last of three pages, oldest first
        fake.state.add_issue(42, title="noise", description="x", author_id=9)
    [settled] = make_reconciler(db, gitlab).run()
    assert settled.state is ExecutionState.SENT
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.SENT and after.result_ref == "1"
    run(db, gitlab)
    assert fake.writes_received == 1
    assert len([i for i in fake.issues(42) if i["title"] == "Disk full on ops-3"]) == 1


def test_500_and_a_hang_are_unknown_and_never_resent(
    db: Database, world: World, fake: FakeGitLabServer, gitlab: TenantGitLab
) -> None:
    first = approve(db, world, prepare(db, world, gitlab))
    fake.inject(Status(500), method="POST", path=CREATE)
    run(db, gitlab)
    assert execution_state(db, world, first.execution.id).state is ExecutionState.UNKNOWN
    second = approve(db, world, prepare(db, world, gitlab, title="Disk full on ops-4"))
    fake.inject(HangAfterWrite(), method="POST", path=CREATE)
    run(db, gitlab)
    assert execution_state(db, world, second.execution.id).state is ExecutionState.UNKNOWN
    run(db, gitlab)
    make_reconciler(db, gitlab).run()
    assert execution_state(db, world, first.execution.id).state is ExecutionState.UNKNOWN
    assert execution_state(db, world, second.execution.id).state is ExecutionState.SENT
    assert fake.writes_received == 2  # neither was sent again
    assert len(fake.issues(42)) == 1


def test_429_waits_for_retry_after_then_creates_once(
    db: Database, world: World, fake: FakeGitLabServer, gitlab: TenantGitLab, superuser: Any
) -> None:
    approved = approve(db, world, prepare(db, world, gitlab))
    fake.inject(RateLimited(retry_after=60), method="POST", path=CREATE)
    executor = make_executor(db, gitlab)
    executor.run_due()
    waiting = execution_state(db, world, approved.execution.id)
    assert waiting.state is ExecutionState.PENDING and waiting.rate_limit_waits == 1
    assert executor.run_due() == 0  # not due before Retry-After
    make_due(superuser, approved.execution.id)
    assert executor.run_due() == 1
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    assert (fake.writes_received, fake.writes_applied, len(fake.issues(42))) == (2, 1, 1)


def test_reconciliation_refuses_a_strangers_copy_and_an_altered_description(
    db: Database, world: World, fake: FakeGitLabServer, gitlab: TenantGitLab
) -> None:
    approved = approve(db, world, prepare(db, world, gitlab))
    fake.inject(Status(502), method="POST", path=CREATE)
    run(db, gitlab)
    marked = f"{DESCRIPTION}\n\n{execution_marker(str(approved.execution.id))}"
    fake.state.add_issue(42, title="Disk full on ops-3", description=marked, author_id=9)
    fake.state.add_issue(42, title="Disk full on ops-3", description=marked + ".", author_id=7)
    [settled] = make_reconciler(db, gitlab).run()
    assert settled.state is ExecutionState.UNKNOWN
    fake.state.add_issue(42, title="Disk full on ops-3", description=marked, author_id=7)
    [settled] = make_reconciler(db, gitlab).run()
    # Ours at last, but without the approved labels and assignees: partial, and says so.
    assert settled.state is ExecutionState.PARTIAL
    assert settled.detail.endswith("GitLab dropped labels ops, assignees alice, bob")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"alias": "group/other"}, "unknown project alias 'group/other' for tenant acme"),
        ({"labels": ["secret"]}, "label 'secret' is not allowed for project ops"),
        ({"assignees": ["mallory"]}, "unknown assignee 'mallory' for project ops"),
    ],
)
def test_prepare_refuses_what_the_tenant_did_not_configure(
    db: Database,
    world: World,
    fake: FakeGitLabServer,
    gitlab: TenantGitLab,
    overrides: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(InvalidInput, match=message):
        prepare(db, world, gitlab, **overrides)
    assert fake.writes_received == 0
