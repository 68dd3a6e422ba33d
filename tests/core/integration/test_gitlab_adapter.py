"""The python-gitlab client against the sandbox GitLab: shapes, pages, and the error contract."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from resolveflow.adapters.gitlab.client import PythonGitLabClient
from resolveflow.errors import (
    ProviderOutcomeUnknown,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)
from resolveflow.sandbox.gitlab.server import (
    DropAfterWrite,
    FakeGitLabServer,
    HangAfterWrite,
    RateLimited,
    Status,
)

TOKEN = "glpat-service-token"
CREATE = r"^/projects/\d+/issues$"


@pytest.fixture
def fake() -> Iterator[FakeGitLabServer]:
    with FakeGitLabServer() as server:
        server.state.add_user(7, "resolveflow-bot", TOKEN)
        server.state.add_user(12, "alice")
        server.state.add_project(42, "group/ops", ["bug", "ops"], members=[7])
        yield server


@pytest.fixture
def client(fake: FakeGitLabServer) -> Iterator[PythonGitLabClient]:
    # Generous: a loaded CI machine must not turn an ordinary answer into a timeout.
    with PythonGitLabClient(fake.url, TOKEN, timeout_seconds=10) as gitlab_client:
        yield gitlab_client


def create(client: PythonGitLabClient) -> object:
    return client.create_issue(
        42, title="Disk full", description="It is full.", labels=["bug"], assignee_ids=[12]
    )


def test_reads_and_one_write_through_python_gitlab(
    client: PythonGitLabClient, fake: FakeGitLabServer
) -> None:
    assert client.project("group/ops").id == 42
    assert client.project(42).path == "group/ops"
    assert sorted(client.project_labels(42)) == ["bug", "ops"]
    assert client.user_id("alice") == 12
    assert client.user_id("nobody") is None
    assert client.current_user() == (7, "resolveflow-bot")
    issue = client.create_issue(
        42, title="Disk full", description="It is full.", labels=["bug"], assignee_ids=[12]
    )
    assert (issue.iid, issue.labels, issue.assignee_ids, issue.author) == (
        1, ("bug",), (12,), "resolveflow-bot",
    )  # fmt: skip
    assert issue.url == f"{fake.url}/group/ops/-/issues/1"
    assert (fake.writes_received, fake.writes_applied) == (1, 1)


def test_issues_created_since_reads_every_page(
    client: PythonGitLabClient, fake: FakeGitLabServer
) -> None:
    for n in range(230):  # three pages of 100
        fake.state.add_issue(42, title=f"old {n}", description="", author_id=12)
    found = client.issues_created_since(42, datetime.now(UTC) - timedelta(minutes=5))
    assert len(found) == 230
    assert found[0].title == "old 229"  # newest first
    pages = [path for method, path in fake.requests if path == "/projects/42/issues"]
    assert len(pages) == 3
    assert client.issues_created_since(42, datetime.now(UTC) + timedelta(minutes=5)) == []


def test_a_dropped_answer_after_the_write_is_outcome_unknown(
    client: PythonGitLabClient, fake: FakeGitLabServer
) -> None:
    fake.inject(DropAfterWrite(), method="POST", path=CREATE)
    with pytest.raises(ProviderOutcomeUnknown, match="may have been applied"):
        create(client)
    assert (fake.writes_received, fake.writes_applied) == (1, 1)


def test_a_hang_past_the_timeout_is_outcome_unknown(fake: FakeGitLabServer) -> None:
    fake.inject(HangAfterWrite(), method="POST", path=CREATE)
    with (
        PythonGitLabClient(fake.url, TOKEN, timeout_seconds=0.5) as hasty,
        pytest.raises(ProviderOutcomeUnknown, match="no answer in time"),
    ):
        create(hasty)
    assert fake.writes_applied == 1


def test_500_is_unknown_429_is_rate_limited_and_4xx_is_rejected(
    client: PythonGitLabClient, fake: FakeGitLabServer
) -> None:
    fake.inject(Status(500), method="POST", path=CREATE)
    with pytest.raises(ProviderOutcomeUnknown):
        create(client)
    fake.inject(RateLimited(retry_after=30), method="POST", path=CREATE)
    with pytest.raises(ProviderRateLimited) as limited:
        create(client)  # python-gitlab would sleep 30 s here; the hook stops it
    assert limited.value.retry_after_seconds == 30
    fake.inject(Status(403), method="POST", path=CREATE)
    with pytest.raises(ProviderRejected):
        create(client)
    assert (fake.writes_received, fake.writes_applied) == (3, 0)


def test_an_unreachable_gitlab_is_unavailable() -> None:
    with FakeGitLabServer() as server:
        url = server.url
    with (
        PythonGitLabClient(url, TOKEN, timeout_seconds=0.5) as client,
        pytest.raises(ProviderUnavailable),
    ):
        create(client)
