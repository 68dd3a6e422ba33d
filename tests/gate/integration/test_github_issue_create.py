"""``create_issue`` and ``list_issues_created_since`` of GitHubKitClient against FakeGitHubServer
over real loopback HTTP: no mocks.

As in ``test_github_adapter``, every fault test checks both the exception the executor will see
and what the forge says happened (``writes_received`` / ``writes_applied``): "rejected" must mean
no issue was opened and "outcome unknown" that one may have been.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from fixtures_github import REPO, SERVICE_LOGIN, SERVICE_TOKEN
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import CreatedIssue, RepoName
from resolveflow.errors import (
    InvalidInput,
    ProviderOutcomeUnknown,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)
from resolveflow.sandbox.forge.server import (
    Delay,
    DropAfterWrite,
    FakeGitHubServer,
    Malformed2xx,
    SecondaryRateLimit,
    Status,
)

ISSUES_PATH = r"^/repos/acme/widgets/issues$"
ISSUES_LIST = r"^/repos/acme/intake/issues\?"
INTAKE = RepoName("acme", "intake")
SINCE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def fast_client(fake_github: FakeGitHubServer) -> Iterator[GitHubKitClient]:
    """0.5 s timeout, so the timeout fault (a 1 s delay) finishes quickly."""
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=0.5) as client:
        yield client


def create(client: GitHubKitClient, title: str = "Widgets leak memory", **kwargs: object) -> object:
    arguments: dict[str, object] = {"body": "Seen on 2.1.", "labels": [], "assignees": []}
    arguments.update(kwargs)
    return client.create_issue(REPO, title=title, **arguments)  # type: ignore[arg-type]


def issues_opened(fake: FakeGitHubServer) -> list[int]:
    """Numbers of the issues on acme/widgets besides the fixture's #1."""
    return [issue["number"] for issue in fake.issues(REPO.full_name) if issue["number"] != 1]


# --- create_issue: success -----------------------------------------------------------------


def test_created_issue_is_what_github_stored(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.grant_push(REPO.full_name, "octocat")  # only those who may push can be assigned
    body = "## Steps\r\n\n1. start\n2. ünïcödé ✓ <!-- resolveflow:abc123 -->\n"

    created = github_client.create_issue(
        REPO,
        title="Widgets leak memory on reload",
        body=body,
        labels=["bug", "needs-triage"],
        assignees=["octocat"],
    )

    assert isinstance(created, CreatedIssue)
    assert created.number == 2  # the next number after the fixture's #1
    assert created.url.endswith("/acme/widgets/issues/2")
    assert (created.body, created.author) == (body, SERVICE_LOGIN)
    assert (created.labels, created.assignees) == (("bug", "needs-triage"), ("octocat",))
    stored = github_client.get_issue(REPO, created.number)
    assert (stored.title, stored.body, stored.is_pull_request) == (
        "Widgets leak memory on reload",
        body,
        False,
    )
    assert (stored.labels, stored.assignees) == (created.labels, created.assignees)
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)


def test_without_push_access_labels_and_assignees_are_dropped_like_github(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.register_token("alice-token", "alice")  # alice may open issues but not push
    fake_github.grant_push(REPO.full_name, "octocat")

    created = create(github_client, labels=["bug"], assignees=["octocat"], token="alice-token")

    assert isinstance(created, CreatedIssue)
    assert (created.author, created.labels, created.assignees) == ("alice", (), ())
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)


def test_token_override_opens_the_issue_as_that_user(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.register_token("alice-token", "alice")

    created = github_client.create_issue(
        REPO, title="As alice", body="", labels=[], assignees=[], token="alice-token"
    )

    assert (created.author, created.body) == ("alice", "")
    assert [(r.login, r.applied) for r in fake_github.write_log] == [("alice", True)]


def test_limits_are_inclusive(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    created = create(github_client, "t" * 256, body="b" * 65536)

    assert isinstance(created, CreatedIssue)
    assert len(created.body) == 65536


# --- create_issue: faults ------------------------------------------------------------------


def test_dropped_response_after_the_issue_was_opened_is_outcome_unknown(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(DropAfterWrite(), path=ISSUES_PATH)

    with pytest.raises(ProviderOutcomeUnknown, match=r"create_issue.*a write may have been"):
        create(github_client)

    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)
    assert issues_opened(fake_github) == [2]


@pytest.mark.parametrize(
    "fault",
    [Status(500), Status(502, apply_write=True), Malformed2xx(), Delay(1.0)],
    ids=["500", "502-applied", "malformed-2xx", "read-timeout"],
)
def test_other_maybe_written_faults_are_outcome_unknown_and_never_retried(
    fast_client: GitHubKitClient,
    fake_github: FakeGitHubServer,
    fault: Status | Malformed2xx | Delay,
) -> None:
    fake_github.inject(fault, path=ISSUES_PATH)

    with pytest.raises(ProviderOutcomeUnknown):
        create(fast_client)

    assert fake_github.writes_received == 1  # githubkit's default would have retried


def test_422_is_rejected_and_nothing_was_opened(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    validation = {
        "message": "Validation Failed",
        "errors": [{"resource": "Issue", "field": "assignees", "code": "invalid"}],
        "documentation_url": "https://docs.github.com/rest/issues/issues#create-an-issue",
    }
    fake_github.inject(Status(422, body=validation), path=ISSUES_PATH)

    with pytest.raises(ProviderRejected, match=r"Validation Failed.*assignees invalid") as caught:
        create(github_client, assignees=["octocat"])

    assert caught.value.status == 422
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)
    assert issues_opened(fake_github) == []


def test_secondary_rate_limit_is_rate_limited_and_nothing_was_opened(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(SecondaryRateLimit(retry_after=7), path=ISSUES_PATH)

    with pytest.raises(ProviderRateLimited, match="secondary rate limit") as caught:
        create(github_client)

    assert caught.value.retry_after_seconds == 7
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)
    assert issues_opened(fake_github) == []


def test_unknown_repository_is_rejected_404(github_client: GitHubKitClient) -> None:
    with pytest.raises(ProviderRejected) as caught:
        github_client.create_issue(
            RepoName("acme", "nope"), title="x", body="", labels=[], assignees=[]
        )

    assert caught.value.status == 404


def test_refused_connection_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = GitHubKitClient(f"http://127.0.0.1:{port}", SERVICE_TOKEN, timeout_seconds=0.5)
    with client, pytest.raises(ProviderUnavailable, match=r"create_issue.*ConnectError"):
        create(client)


@pytest.mark.parametrize(
    ("title", "extra"),
    [
        ("", {}),
        ("   ", {}),
        ("two\nlines", {}),
        ("trailing newline\n", {}),
        ("carriage\rreturn", {}),
        ("t" * 257, {}),
        ("ok", {"body": "b" * 65537}),
        ("ok", {"labels": [""]}),
        ("ok", {"labels": "bug"}),
        ("ok", {"assignees": [None]}),
    ],
    ids=[
        "empty",
        "blank",
        "newline",
        "trailing-newline",
        "carriage-return",
        "title-257",
        "body-65537",
        "empty-label",
        "labels-not-a-list",
        "assignee-not-a-string",
    ],
)
def test_unusable_arguments_are_refused_before_anything_is_sent(
    github_client: GitHubKitClient,
    fake_github: FakeGitHubServer,
    title: str,
    extra: dict[str, object],
) -> None:
    with pytest.raises(InvalidInput):
        create(github_client, title, **extra)

    assert fake_github.requests_received == 0


def test_path_like_repository_is_refused_before_anything_is_sent(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    with pytest.raises(InvalidInput):
        github_client.create_issue(
            RepoName.parse("acme/widgets/../../user"), title="x", body="", labels=[], assignees=[]
        )

    assert fake_github.requests_received == 0


# --- list_issues_created_since -------------------------------------------------------------


def at(minutes: int) -> str:
    return (SINCE + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def intake(fake_github: FakeGitHubServer) -> FakeGitHubServer:
    """``acme/intake``: #1..#230 created one minute apart from ``SINCE`` on (#1 exactly at it),
    every tenth a pull request; #231..#380 created before ``SINCE`` but updated after it (so
    GitHub's ``since`` lets them through); #381..#390 created and last updated before it."""
    fake_github.add_repo(INTAKE.full_name)
    for n in range(1, 231):
        fake_github.add_issue(
            INTAKE.full_name,
            n,
            f"New {n}",
            created_at=at(n - 1),
            updated_at=at(n + 500),
            is_pull_request=n % 10 == 0,
        )
    for n in range(231, 391):
        created = at(-(n - 230))
        updated = at(1000) if n <= 380 else created
        fake_github.add_issue(
            INTAKE.full_name, n, f"Old {n}", created_at=created, updated_at=updated
        )
    return fake_github


def test_lists_only_issues_created_at_or_after_since_newest_first_and_stops_early(
    github_client: GitHubKitClient, intake: FakeGitHubServer
) -> None:
    before = intake.requests_received

    found = github_client.list_issues_created_since(INTAKE, SINCE)

    expected = [n for n in range(230, 0, -1) if n % 10 != 0]
    assert [i.number for i in found] == expected
    assert found[-1].created_at == SINCE  # inclusive
    assert all(not i.is_pull_request and i.created_at >= SINCE for i in found)
    # 380 items pass GitHub's since: pages of 100 hold #230..#131, #130..#31 and #30..#1 followed
    # by the first old ones, so the third page reaches before SINCE and the fourth is never asked.
    assert intake.requests_received - before == 3


def test_since_within_the_first_page_asks_for_one_page(
    github_client: GitHubKitClient, intake: FakeGitHubServer
) -> None:
    before = intake.requests_received

    found = github_client.list_issues_created_since(INTAKE, SINCE + timedelta(minutes=225))

    assert [i.number for i in found] == [229, 228, 227, 226]
    assert intake.requests_received - before == 1


def test_a_repository_with_nothing_new_returns_nothing(
    github_client: GitHubKitClient, intake: FakeGitHubServer
) -> None:
    assert github_client.list_issues_created_since(INTAKE, SINCE + timedelta(days=1)) == []


def test_since_is_sent_as_a_pre_filter_and_sorted_by_creation(
    github_client: GitHubKitClient, intake: FakeGitHubServer
) -> None:
    query = r"state=all.*sort=created.*direction=desc.*since=2024-05-01T12%3A00%3A00Z"
    intake.inject(Status(418), method="GET", path=ISSUES_LIST + ".*" + query)

    with pytest.raises(ProviderRejected) as caught:
        github_client.list_issues_created_since(INTAKE, SINCE + timedelta(microseconds=999))

    assert caught.value.status == 418  # the fault matched, so the query was exactly that


def test_a_failure_on_a_later_page_fails_the_listing(
    github_client: GitHubKitClient, intake: FakeGitHubServer
) -> None:
    intake.inject(Status(503), method="GET", path=ISSUES_LIST + ".*page=2")

    with pytest.raises(ProviderOutcomeUnknown, match="503"):
        github_client.list_issues_created_since(INTAKE, SINCE)


def test_naive_since_is_refused_before_anything_is_sent(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    with pytest.raises(InvalidInput, match="timezone-aware"):
        github_client.list_issues_created_since(INTAKE, datetime(2024, 5, 1))

    assert fake_github.requests_received == 0
