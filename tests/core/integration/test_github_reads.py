"""The read methods of GitHubKitClient against FakeGitHubServer over real loopback HTTP.

Success paths use realistic data (pull requests, check runs across pages, issue crawls with
``since``); the failure matrix checks that every malformed answer a read can get (a missing field,
a wrong type, an HTML page, 404, 410, a 502 page) becomes the right exception, with a message that
names the call and never contains the token.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from fixtures_github import (
    ISSUE_NUMBER,
    PR_HEAD_SHA,
    PR_NUMBER,
    REPO,
    SERVICE_LOGIN,
    SERVICE_TOKEN,
)
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import CheckRunData, IssueData, RepoName
from resolveflow.errors import (
    InvalidInput,
    ProviderError,
    ProviderOutcomeUnknown,
    ProviderRateLimited,
    ProviderRejected,
)
from resolveflow.sandbox.forge.server import (
    Delay,
    FakeGitHubServer,
    Fault,
    Malformed2xx,
    PrimaryRateLimit,
    Status,
    TamperedBody,
)

SECRET = "ghp_ReadPathSecretToken0123456789abcdef"
DAY0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
OTHER_SHA = "9c1185a5c5e9fc54612808977ee8f548b2258d31"


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def secret_client(fake_github_ci: FakeGitHubServer) -> Iterator[GitHubKitClient]:
    """A client whose service token is a realistic secret, to prove it never leaks."""
    fake_github_ci.register_token(SECRET, SERVICE_LOGIN)
    with GitHubKitClient(fake_github_ci.url, SECRET, timeout_seconds=1.0) as client:
        yield client


# --- issues and comments -------------------------------------------------------------------


def test_get_issue_returns_every_field(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.add_issue(
        REPO.full_name,
        7,
        "Crash when the config file is empty",
        "Steps:\n1. `touch widgets.toml`\n2. run `widgets`\n",
        labels=["bug", "needs-triage"],
        user="reporter",
        state="closed",
        created_at="2024-03-01T09:00:00Z",
        updated_at="2024-03-04T10:30:00Z",
        closed_at="2024-03-04T10:29:59Z",
        author_association="FIRST_TIME_CONTRIBUTOR",
    )

    issue = github_client.get_issue(REPO, 7)

    assert issue == IssueData(
        number=7,
        title="Crash when the config file is empty",
        body="Steps:\n1. `touch widgets.toml`\n2. run `widgets`\n",
        state="closed",
        author="reporter",
        author_association="FIRST_TIME_CONTRIBUTOR",
        labels=("bug", "needs-triage"),
        created_at=datetime(2024, 3, 1, 9, 0, tzinfo=UTC),
        updated_at=datetime(2024, 3, 4, 10, 30, tzinfo=UTC),
        closed_at=datetime(2024, 3, 4, 10, 29, 59, tzinfo=UTC),
        is_pull_request=False,
        url=f"{fake_github.url}/acme/widgets/issues/7",
        merged_at=None,
        state_reason="completed",  # a closed issue says why (a duplicate closes as "duplicate")
        issue_id=1000007,  # the forge's own id, which reactions and events name
    )


def test_get_issue_of_a_merged_pull_request(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.add_pull_request(
        REPO.full_name,
        8,
        "Handle empty config",
        head_sha=OTHER_SHA,
        created_at="2024-03-02T08:00:00Z",
        merged_at="2024-03-03T12:00:00Z",
        author_association="MEMBER",
    )

    pull = github_client.get_issue(REPO, 8)

    assert pull.is_pull_request
    assert pull.state == "closed"
    assert pull.merged_at == datetime(2024, 3, 3, 12, 0, tzinfo=UTC)
    assert pull.closed_at == pull.merged_at
    assert pull.author_association == "MEMBER"
    assert pull.url == f"{fake_github.url}/acme/widgets/pull/8"


def test_null_body_and_missing_author_association_have_defaults(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(
        TamperedBody(remove=("author_association",), replace={"body": None, "user": None}),
        method="GET",
        path=r"/issues/1$",
    )

    issue = github_client.get_issue(REPO, ISSUE_NUMBER)

    assert (issue.body, issue.author_association, issue.author) == ("", "NONE", "ghost")


def test_comments_carry_author_association_and_created_at(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.add_comment_directly(
        REPO.full_name,
        ISSUE_NUMBER,
        "Can reproduce on 2.1",
        "maintainer",
        author_association="OWNER",
        created_at="2024-03-02T10:00:00Z",
    )
    fake_github.add_comment_directly(REPO.full_name, ISSUE_NUMBER, "+1", "passer-by")

    first, second = github_client.list_issue_comments(REPO, ISSUE_NUMBER)

    assert (first.author, first.author_association) == ("maintainer", "OWNER")
    assert first.created_at == datetime(2024, 3, 2, 10, 0, tzinfo=UTC)
    assert (second.author_association, second.created_at is not None) == ("NONE", True)


# --- pull requests and checks --------------------------------------------------------------


def test_pull_request_head_sha_leads_to_its_check_runs(
    github_client: GitHubKitClient, fake_github_ci: FakeGitHubServer
) -> None:
    fake_github_ci.add_check_run(REPO.full_name, OTHER_SHA, "build")  # another commit

    sha = github_client.pull_request_head_sha(REPO, PR_NUMBER)
    runs = github_client.list_check_runs_for_ref(REPO, sha)

    assert sha == PR_HEAD_SHA
    assert [(r.name, r.status, r.conclusion) for r in runs] == [
        ("build", "completed", "failure"),
        ("lint", "completed", "success"),
    ]
    build = runs[0]
    assert build.kind == "check_run"
    assert build.head_sha == PR_HEAD_SHA
    assert build.summary == "Build failed\n\nProcess completed with exit code 1."
    assert re.fullmatch(rf"{re.escape(fake_github_ci.url)}/acme/widgets/runs/{build.id}", build.url)
    assert github_client.list_check_runs_for_ref(REPO, "fix/start-up") == runs  # branch name


def test_check_runs_are_collected_across_pages(
    github_client: GitHubKitClient, fake_github_ci: FakeGitHubServer
) -> None:
    for i in range(203):
        conclusion = "failure" if i % 50 == 0 else "success"
        fake_github_ci.add_check_run(
            REPO.full_name, OTHER_SHA, f"test ({i:03d})", conclusion=conclusion
        )
    before = fake_github_ci.requests_received

    runs = github_client.list_check_runs_for_ref(REPO, OTHER_SHA)

    assert [r.name for r in runs] == [f"test ({i:03d})" for i in range(203)]
    assert len({r.id for r in runs}) == 203
    assert [r.name for r in runs if r.conclusion == "failure"] == [
        "test (000)",
        "test (050)",
        "test (100)",
        "test (150)",
        "test (200)",
    ]
    assert fake_github_ci.requests_received - before == 3  # 100 + 100 + 3


def test_check_run_listing_stops_at_a_short_page_even_if_link_says_next(
    github_client: GitHubKitClient, fake_github_ci: FakeGitHubServer
) -> None:
    auth = {"Authorization": f"token {SERVICE_TOKEN}"}
    real = httpx.get(
        f"{fake_github_ci.url}/repos/acme/widgets/commits/{PR_HEAD_SHA}/check-runs", headers=auth
    ).json()
    link = f'<{fake_github_ci.url}/repos/acme/widgets/commits/{PR_HEAD_SHA}/check-runs?page=2>; rel="next"'
    fake_github_ci.inject(Status(200, body=real, headers={"Link": link}), method="GET")
    before = fake_github_ci.requests_received

    runs = github_client.list_check_runs_for_ref(REPO, PR_HEAD_SHA)

    assert [r.name for r in runs] == ["build", "lint"]
    assert fake_github_ci.requests_received - before == 1


def test_rerun_check_replaces_the_old_one_like_githubs_latest_filter(
    github_client: GitHubKitClient, fake_github_ci: FakeGitHubServer
) -> None:
    rerun = fake_github_ci.add_check_run(REPO.full_name, PR_HEAD_SHA, "build", status="in_progress")

    runs = {r.name: r for r in github_client.list_check_runs_for_ref(REPO, PR_HEAD_SHA)}

    assert (runs["build"].id, runs["build"].status, runs["build"].conclusion) == (
        rerun,
        "in_progress",
        None,
    )


def test_get_check_run(github_client: GitHubKitClient, fake_github: FakeGitHubServer) -> None:
    run_id = fake_github.add_check_run(
        REPO.full_name,
        OTHER_SHA,
        "integration-tests",
        conclusion="timed_out",
        summary="The job running on runner GitHub Actions 12 has exceeded the maximum execution time.",
    )

    run = github_client.get_check_run(REPO, run_id)

    assert run == CheckRunData(
        id=run_id,
        name="integration-tests",
        status="completed",
        conclusion="timed_out",
        url=f"{fake_github.url}/acme/widgets/runs/{run_id}",
        summary="The job running on runner GitHub Actions 12 has exceeded the maximum execution time.",
        head_sha=OTHER_SHA,
        kind="check_run",
    )


def test_get_workflow_run(github_client: GitHubKitClient, fake_github_ci: FakeGitHubServer) -> None:
    done = fake_github_ci.add_workflow_run(
        REPO.full_name, "Release", head_sha=OTHER_SHA, display_title="Bump version to 2.2"
    )
    running = fake_github_ci.add_workflow_run(REPO.full_name, "Nightly", status="in_progress")

    finished = github_client.get_workflow_run(REPO, done)
    in_progress = github_client.get_workflow_run(REPO, running)

    assert finished == CheckRunData(
        id=done,
        name="Release",
        status="completed",
        conclusion="failure",
        url=f"{fake_github_ci.url}/acme/widgets/actions/runs/{done}",
        summary="Bump version to 2.2",
        head_sha=OTHER_SHA,
        kind="workflow_run",
    )
    assert (in_progress.status, in_progress.conclusion, in_progress.summary) == (
        "in_progress",
        None,
        "Nightly",
    )
    link = re.search(r"/([\w.-]+)/([\w.-]+)/actions/runs/(\d+)", finished.url)
    assert link is not None and link.groups() == ("acme", "widgets", str(done))


def test_workflow_run_without_a_name_falls_back_to_display_title(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    run_id = fake_github.add_workflow_run(REPO.full_name, "CI", display_title="Fix the flaky test")
    fake_github.inject(TamperedBody(remove=("name",)), method="GET", path=r"/actions/runs/")

    assert github_client.get_workflow_run(REPO, run_id).name == "Fix the flaky test"


# --- issue crawl ---------------------------------------------------------------------------


@pytest.fixture
def crawlable(fake_github: FakeGitHubServer) -> FakeGitHubServer:
    """Issues #10..#34 updated one day apart (day 0..24), every 5th one a closed pull request."""
    for day in range(25):
        number = 10 + day
        stamp = iso(DAY0 + timedelta(days=day))
        created = iso(DAY0 - timedelta(days=30 - day))
        if day % 5 == 4:
            fake_github.add_pull_request(
                REPO.full_name,
                number,
                f"PR {number}",
                head_sha=f"{number:040x}",
                created_at=created,
                updated_at=stamp,
                merged_at=stamp,
            )
        else:
            state = "closed" if day % 3 == 0 else "open"
            fake_github.add_issue(
                REPO.full_name,
                number,
                f"Issue {number}",
                created_at=created,
                updated_at=stamp,
                state=state,
                closed_at=stamp if state == "closed" else None,
            )
    return fake_github


def test_issue_pages_follow_since_and_report_has_next(
    github_client: GitHubKitClient, crawlable: FakeGitHubServer
) -> None:
    since = DAY0 + timedelta(days=5)  # inclusive: issue #15 was updated exactly then
    pages = [
        github_client.list_issues_page(REPO, since=since, page=page, per_page=8)
        for page in (1, 2, 3)
    ]

    assert [p.has_next for p in pages] == [True, True, False]
    numbers = [i.number for p in pages for i in p.items]
    assert numbers == [*range(15, 35), ISSUE_NUMBER]  # oldest update first; #1 was updated now
    updated = [i.updated_at for p in pages for i in p.items]
    assert updated == sorted(updated)
    assert all(i.updated_at >= since for p in pages for i in p.items)
    pulls = [i.number for p in pages for i in p.items if i.is_pull_request]
    assert pulls == [19, 24, 29, 34]
    assert all(i.merged_at == i.updated_at for p in pages for i in p.items if i.is_pull_request)


def test_issue_listing_includes_the_fixture_issue_updated_now(
    github_client: GitHubKitClient, crawlable: FakeGitHubServer
) -> None:
    page = github_client.list_issues_page(REPO, since=DAY0 + timedelta(days=24))

    assert [i.number for i in page.items] == [34, ISSUE_NUMBER]
    assert not page.has_next


def test_issue_listing_filters_state(
    github_client: GitHubKitClient, crawlable: FakeGitHubServer
) -> None:
    closed = github_client.list_issues_page(REPO, state="closed", per_page=100)
    opened = github_client.list_issues_page(REPO, state="open", per_page=100)
    everything = github_client.list_issues_page(REPO, per_page=100)

    assert all(i.state == "closed" and i.closed_at is not None for i in closed.items)
    assert all(i.state == "open" and i.closed_at is None for i in opened.items)
    assert len(closed.items) + len(opened.items) == len(everything.items) == 26


def test_interrupted_crawl_resumes_from_the_last_updated_at(
    github_client: GitHubKitClient, crawlable: FakeGitHubServer
) -> None:
    first = github_client.list_issues_page(REPO, per_page=10)
    seen = {i.number: i for i in first.items}
    cursor = max(i.updated_at for i in first.items)

    page, resumed = 1, True
    while resumed:
        batch = github_client.list_issues_page(REPO, since=cursor, page=page, per_page=10)
        seen.update({i.number: i for i in batch.items})
        page, resumed = page + 1, batch.has_next

    assert sorted(seen) == [ISSUE_NUMBER, *range(10, 35)]


def test_since_is_sent_in_githubs_format(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    paris = datetime(2024, 3, 1, 10, 0, 0, 999_999, tzinfo=UTC).astimezone(ZoneInfo("Europe/Paris"))
    fake_github.inject(Status(418), method="GET", path=r"since=2024-03-01T10%3A00%3A00Z")

    with pytest.raises(ProviderRejected) as caught:
        github_client.list_issues_page(REPO, since=paris)

    assert caught.value.status == 418  # the fault matched, so the query was exactly that


def test_fake_issue_listing_behaves_like_github(fake_github: FakeGitHubServer) -> None:
    fake_github.add_issue(REPO.full_name, 2, "Closed one", state="closed")
    fake_github.add_issue(REPO.full_name, 3, "A PR", is_pull_request=True)
    url = f"{fake_github.url}/repos/acme/widgets/issues"
    auth = {"Authorization": f"token {SERVICE_TOKEN}"}

    default = httpx.get(url, headers=auth).json()
    bad_since = httpx.get(url, params={"since": "yesterday"}, headers=auth)
    bad_state = httpx.get(url, params={"state": "merged"}, headers=auth)

    assert [i["number"] for i in default] == [3, 1]  # open only, newest first
    assert "pull_request" in default[0] and "pull_request" not in default[1]
    assert (bad_since.status_code, bad_state.status_code) == (422, 422)


# --- inputs are checked before anything is sent --------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.list_check_runs_for_ref(REPO, "../../user"),
        lambda c: c.list_check_runs_for_ref(REPO, "main..other"),
        lambda c: c.list_check_runs_for_ref(REPO, "-x"),
        lambda c: c.list_check_runs_for_ref(REPO, "feature/.hidden"),
        lambda c: c.list_check_runs_for_ref(REPO, "topic.lock"),
        lambda c: c.list_check_runs_for_ref(REPO, "a?b=c"),
        lambda c: c.list_check_runs_for_ref(REPO, "sha#frag"),
        lambda c: c.list_check_runs_for_ref(REPO, ""),
        lambda c: c.list_check_runs_for_ref(REPO, "main\n"),
        lambda c: c.list_check_runs_for_ref(REPO, "topic/"),
        lambda c: c.get_issue(RepoName("acme", "widgets\n"), 1),
        lambda c: c.list_check_runs_for_ref(RepoName("acme", ".."), PR_HEAD_SHA),
        lambda c: c.get_check_run(REPO, 0),
        lambda c: c.get_check_run(REPO, True),
        lambda c: c.get_workflow_run(REPO, -5),
        lambda c: c.get_issue(REPO, 0),
        lambda c: c.pull_request_head_sha(RepoName.parse("acme/widgets/../x"), 1),
        lambda c: c.list_issues_page(REPO, state="merged"),
        lambda c: c.list_issues_page(REPO, per_page=101),
        lambda c: c.list_issues_page(REPO, page=0),
        lambda c: c.list_issues_page(REPO, since=datetime(2024, 3, 1)),  # naive
    ],
)
def test_invalid_read_arguments_are_refused_before_sending(
    github_client: GitHubKitClient,
    fake_github: FakeGitHubServer,
    call: Callable[[GitHubKitClient], object],
) -> None:
    with pytest.raises(InvalidInput):
        call(github_client)
    assert fake_github.requests_received == 0


def test_ref_names_git_allows_are_accepted(
    github_client: GitHubKitClient, fake_github_ci: FakeGitHubServer
) -> None:
    fake_github_ci.add_pull_request(
        REPO.full_name, 9, head_sha=OTHER_SHA, head_ref="release/2.1.x_hotfix-1"
    )
    fake_github_ci.add_check_run(REPO.full_name, OTHER_SHA, "build")

    assert len(github_client.list_check_runs_for_ref(REPO, "release/2.1.x_hotfix-1")) == 1
    assert len(github_client.list_check_runs_for_ref(REPO, PR_HEAD_SHA[:12])) == 2  # short sha


# --- malformed and refused answers ---------------------------------------------------------

Read = Callable[[GitHubKitClient, FakeGitHubServer], Any]


def _comments(client: GitHubKitClient, fake: FakeGitHubServer) -> Any:
    fake.add_comment_directly(REPO.full_name, ISSUE_NUMBER, "a comment")
    return client.list_issue_comments(REPO, ISSUE_NUMBER)


def _check_run(client: GitHubKitClient, fake: FakeGitHubServer) -> Any:
    return client.get_check_run(REPO, fake.add_check_run(REPO.full_name, PR_HEAD_SHA, "docs"))


def _workflow_run(client: GitHubKitClient, fake: FakeGitHubServer) -> Any:
    return client.get_workflow_run(REPO, fake.add_workflow_run(REPO.full_name, "Docs"))


# Each read: (operation, how to call it, path regex, a required field, a wrong-typed field).
READS: list[tuple[str, Read, str, str, dict[str, Any]]] = [
    ("get_issue", lambda c, f: c.get_issue(REPO, 1), r"/issues/1$", "title", {"number": "seven"}),
    ("list_issue_comments", _comments, r"/issues/1/comments", "*.created_at", {"*.user": "x"}),
    (
        "pull_request_head_sha",
        lambda c, f: c.pull_request_head_sha(REPO, PR_NUMBER),
        r"/pulls/2$",
        "head.sha",
        {"head": "3f786850"},
    ),
    (
        "list_check_runs_for_ref",
        lambda c, f: c.list_check_runs_for_ref(REPO, PR_HEAD_SHA),
        r"/check-runs\?",
        "check_runs.0.status",
        {"total_count": "many"},
    ),
    ("get_check_run", _check_run, r"/check-runs/\d+$", "output", {"id": "1000004a"}),
    ("get_workflow_run", _workflow_run, r"/actions/runs/", "display_title", {"run_number": [1]}),
    (
        "list_issues_page",
        lambda c, f: c.list_issues_page(REPO),
        r"/issues\?",
        "*.updated_at",
        {"*.labels": "bug"},
    ),
]
HTML = (
    "<!DOCTYPE html><html><body><h1>Unicorn!</h1><p>This page is taking too long.</p></body></html>"
)


def _answer(kind: str, missing: str, wrong: dict[str, Any]) -> Fault:
    echo = {"message": f"Not Found (token {SECRET})", "documentation_url": "x"}
    return {
        "missing field": TamperedBody(remove=(missing,)),
        "wrong type": TamperedBody(replace=wrong),
        "html 200": Status(200, body=HTML, content_type="text/html; charset=utf-8"),
        "not the shape": Malformed2xx(apply_write=False),
        "404": Status(404, body=echo),
        "410": Status(410, body={"message": "Issues are disabled", "documentation_url": "x"}),
        "502 html": Status(502, body=HTML, content_type="text/html"),
    }[kind]


EXPECTED: dict[str, tuple[type[ProviderError], str]] = {
    "missing field": (ProviderError, r"fails schema validation \(\d+ errors?, first: .* missing\)"),
    "wrong type": (ProviderError, r"fails schema validation"),
    "html 200": (ProviderError, r"answered 200 with a body that is not valid JSON \(text/html\)"),
    "not the shape": (ProviderError, r"fails schema validation"),
    "404": (ProviderRejected, r"refused \(404\): Not Found \(token \*\*\*\)"),
    "410": (ProviderRejected, r"refused \(410\): Issues are disabled"),
    "502 html": (
        ProviderOutcomeUnknown,
        r"failed \(502\): non-JSON body \(text/html, \d+ bytes\)\.$",
    ),
}


@pytest.mark.parametrize("kind", list(EXPECTED))
@pytest.mark.parametrize("read", READS, ids=[r[0] for r in READS])
def test_every_bad_answer_to_a_read_is_a_clear_error(
    secret_client: GitHubKitClient,
    fake_github_ci: FakeGitHubServer,
    caplog: pytest.LogCaptureFixture,
    read: tuple[str, Read, str, str, dict[str, Any]],
    kind: str,
) -> None:
    operation, call, path, missing, wrong = read
    error_type, pattern = EXPECTED[kind]
    fake_github_ci.inject(_answer(kind, missing, wrong), method="GET", path=path)
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ProviderError) as caught:
        call(secret_client, fake_github_ci)

    error = caught.value
    assert type(error) is error_type, error
    assert re.search(pattern, error.message), error.message
    assert error.message.startswith(f"{operation} (GET /repos/acme/widgets/"), error.message
    assert fake_github_ci.pending_faults == 0
    for text in (str(error), repr(error), repr(error.context), caplog.text):
        assert SECRET not in text
        assert "pydantic" not in text.lower() and "Traceback" not in text
    if isinstance(error, ProviderRejected):
        assert error.status == int(kind[:3])
    assert "a write may have been applied" not in error.message


def test_unknown_objects_are_rejected_404_and_unknown_commits_422(
    github_client: GitHubKitClient, fake_github_ci: FakeGitHubServer
) -> None:
    calls: list[Callable[[], object]] = [
        lambda: github_client.get_issue(REPO, 404),
        lambda: github_client.pull_request_head_sha(REPO, ISSUE_NUMBER),  # an issue, not a PR
        lambda: github_client.get_check_run(REPO, 123),
        lambda: github_client.get_workflow_run(REPO, 123),
        lambda: github_client.list_issues_page(RepoName("acme", "gone")),
    ]
    for call in calls:
        with pytest.raises(ProviderRejected) as caught:
            call()
        assert caught.value.status == 404

    with pytest.raises(ProviderRejected, match="No commit found for SHA") as unknown:
        github_client.list_check_runs_for_ref(REPO, OTHER_SHA)
    assert unknown.value.status == 422


def test_reads_report_rate_limits_timeouts_and_later_page_failures(
    fake_github_ci: FakeGitHubServer,
) -> None:
    for i in range(150):
        fake_github_ci.add_check_run(REPO.full_name, OTHER_SHA, f"shard {i}")
    # Only the timeout needs a short client timeout: a 150-run page read with 0.3 s timed out on
    # a loaded CI machine before the tampered second page was ever asked for.
    with GitHubKitClient(fake_github_ci.url, SERVICE_TOKEN, timeout_seconds=0.3) as hasty:
        fake_github_ci.inject(Delay(0.6), method="GET", path="/actions/runs/")
        with pytest.raises(ProviderOutcomeUnknown, match=r"get_workflow_run .*ReadTimeout"):
            hasty.get_workflow_run(REPO, 1)

    with GitHubKitClient(fake_github_ci.url, SERVICE_TOKEN, timeout_seconds=30) as client:
        fake_github_ci.inject(PrimaryRateLimit(reset_in=30), method="GET", path="/pulls/")
        with pytest.raises(ProviderRateLimited) as limited:
            client.pull_request_head_sha(REPO, PR_NUMBER)
        assert 27 <= limited.value.retry_after_seconds <= 30

        fake_github_ci.inject(TamperedBody(remove=("check_runs",)), method="GET", path="page=2")
        with pytest.raises(ProviderError, match="check_runs missing") as later:
            client.list_check_runs_for_ref(REPO, OTHER_SHA)
        assert type(later.value) is ProviderError


def test_tampering_a_path_that_does_not_exist_is_a_500(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(TamperedBody(remove=("no.such.field",)), method="GET")

    with pytest.raises(ProviderOutcomeUnknown, match="500"):
        github_client.get_issue(REPO, ISSUE_NUMBER)
