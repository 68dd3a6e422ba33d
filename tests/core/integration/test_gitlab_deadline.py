"""The GitLab client's total deadline: an answer trickled one byte at a time (each read well
within the per-read timeout) is cut at the request's wall-clock deadline. Through the gate the
write then ends unknown, is never sent again, and reconciliation finds the one issue."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from conftest import World, execution_state
from resolveflow.adapters.gitlab.client import PythonGitLabClient
from resolveflow.adapters.gitlab.protocol import GitLab
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.bootstrap.app import gate_settings
from resolveflow.bootstrap.gitlab import TenantGitLab
from resolveflow.config import ExecutorSettings, GitHubSettings, GitLabSettings, Settings
from resolveflow.domain.records import ExecutionState
from resolveflow.errors import ConfigError, ProviderOutcomeUnknown
from resolveflow.gate import approvals
from resolveflow.gate.executor import Executor
from resolveflow.gate.lease import GateSettings
from resolveflow.gate.reconcile import Reconciler
from resolveflow.policy_file import parse_policy
from resolveflow.sandbox.gitlab.server import FakeGitLabServer, Trickle
from resolveflow.store import gitlab_tokens
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher

TOKEN = "glpat-acme-bot"
CREATE = r"^/projects/42/issues$"
TIMEOUT, DEADLINE = 0.5, 1.5
INTERVAL = 0.02  # a created issue's JSON is over 1 KB: about 25 s in all, untouched
POLICY = """
[tenants.acme.projects.ops]
forge = "gitlab"
project = "group/ops"
labels = ["ops"]
"""


@pytest.fixture
def fake() -> Iterator[FakeGitLabServer]:
    with FakeGitLabServer() as server:
        server.state.add_user(7, "acme-bot", TOKEN)
        server.state.add_project(42, "group/ops", ["ops"], members=[7])
        yield server


def connect(url: str, token: str, timeout: float) -> GitLab:
    return PythonGitLabClient(url, token, timeout_seconds=timeout, deadline_seconds=DEADLINE)


@pytest.fixture
def gitlab(db: Database, world: World, fake: FakeGitLabServer) -> Iterator[TenantGitLab]:
    cipher = TokenCipher(TokenCipher.generate_key())
    with db.tenant(world.tenant.id) as conn:
        gitlab_tokens.save_gitlab_token(conn, cipher, world.tenant.id, "acme", TOKEN)
    settings = Settings(gitlab=GitLabSettings(url=fake.url, timeout_seconds=TIMEOUT))
    policy = parse_policy(POLICY)
    access = TenantGitLab(db, settings, lambda: policy, cipher, connect=connect)
    yield access
    access.close()


def test_a_trickled_create_is_cut_at_the_deadline_ends_unknown_and_is_never_resent(
    db: Database, world: World, fake: FakeGitLabServer, gitlab: TenantGitLab
) -> None:
    targets = IssueTargets(policy=gitlab.policy, gitlab=gitlab)
    view = prepare_issue(
        db, world.requester(db), targets, alias="ops", title="Disk full", body="Full.",
        labels=["ops"], assignees=[],
    )  # fmt: skip
    approved = approvals.approve(db, world.approver(db), view["id"], view["digest"], 3600)
    fake.inject(Trickle(INTERVAL), method="POST", path=CREATE)
    settings = GateSettings(lease_seconds=30.0)
    executor = Executor(db, None, settings, gitlab=gitlab)  # type: ignore[arg-type]

    started = time.monotonic()
    executor.run_due()
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE + 3 * TIMEOUT, elapsed  # the deadline and one read, not ~25 s
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.UNKNOWN, after.detail
    assert "deadline" in (after.detail or ""), after.detail

    assert executor.run_due() == 0  # unknown is never sent again
    reconciler = Reconciler(db, None, settings, gitlab=gitlab)  # type: ignore[arg-type]
    [settled] = reconciler.run()
    assert settled.state is ExecutionState.SENT
    assert fake.writes_received == 1 and len(fake.issues(42)) == 1


def test_a_trickled_read_is_cut_too(fake: FakeGitLabServer) -> None:
    fake.inject(Trickle(INTERVAL), method="GET", path=r"^/projects/42/labels$")
    with PythonGitLabClient(
        fake.url, TOKEN, timeout_seconds=TIMEOUT, deadline_seconds=0.3
    ) as client:
        started = time.monotonic()
        with pytest.raises(ProviderOutcomeUnknown, match="deadline"):
            client.project_labels(42)  # over 1 s of answer, untouched
        assert time.monotonic() - started < 0.3 + 3 * TIMEOUT
        assert client.project_labels(42) == ["ops"]  # the next call is fine


def test_the_gates_window_covers_the_longer_of_the_two_timeouts() -> None:
    """An attempt's in-flight window must cover a GitLab request's deadline too."""

    def settings(lease: float) -> Settings:
        return Settings(
            executor=ExecutorSettings(lease_seconds=lease),
            github=GitHubSettings(timeout_seconds=10),
            gitlab=GitLabSettings(url="http://127.0.0.1:9", timeout_seconds=30),
        )

    with pytest.raises(ConfigError, match="RESOLVEFLOW_GITLAB_TIMEOUT_SECONDS"):
        gate_settings(settings(100))
    gate = gate_settings(settings(150))
    assert (gate.send_slack_seconds, gate.request_deadline_seconds) == (30, 150)
