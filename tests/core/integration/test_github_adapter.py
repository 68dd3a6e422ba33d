"""GitHubKitClient against FakeGitHubServer over real loopback HTTP: no mocks.

Every fault test checks two things: the exception the executor will see, and what the server says
actually happened (``writes_received`` / ``writes_applied``), because the executor's exactly-once
logic depends on "rejected" meaning nothing was written and "outcome unknown" meaning it may have.
"""

from __future__ import annotations

import email.utils
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpcore
import httpx
import pytest
from githubkit import GitHub
from githubkit.utils import UNSET
from githubkit_schemas.latest.models import IssuePropPullRequest

from fixtures_github import ISSUE_NUMBER, REPO, REPO_LABELS, SERVICE_LOGIN, SERVICE_TOKEN
from resolveflow.adapters.base import Call
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.errors import transport_error
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.errors import (
    InvalidInput,
    ProviderError,
    ProviderOutcomeUnknown,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)
from resolveflow.sandbox.forge.server import (
    Delay,
    DropAfterWrite,
    FakeGitHubServer,
    Fault,
    HangAfterWrite,
    Malformed2xx,
    PrimaryRateLimit,
    SecondaryRateLimit,
    Status,
    WriteRecord,
)

SECRET = "ghp_SuperSecretToken0123456789abcdef"
COMMENTS_PATH = r"/issues/1/comments"


@pytest.fixture
def fast_client(fake_github: FakeGitHubServer) -> Iterator[GitHubKitClient]:
    """0.5 s timeout, so the timeout faults (1 s delays) finish quickly."""
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=0.5) as client:
        yield client


def wait_until(predicate: Callable[[], bool], timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def post(client: GitHubKitClient, body: str = "hello", **kwargs: str) -> object:
    return client.post_comment(REPO, ISSUE_NUMBER, body, **kwargs)


# --- success paths -------------------------------------------------------------------------


def test_posted_comment_is_exactly_the_body(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    body = "## Triage\n\n- CI failed on `main`\r\n- ünïcödé ✓ <!-- resolveflow:abc123 -->\n"
    posted = github_client.post_comment(REPO, ISSUE_NUMBER, body)

    stored = fake_github.comments(REPO.full_name, ISSUE_NUMBER)
    assert posted.body == body
    assert [c["body"] for c in stored] == [body]
    assert posted.id == stored[0]["id"]
    assert posted.url == stored[0]["html_url"]
    assert stored[0]["user"]["login"] == SERVICE_LOGIN
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)


def test_lists_250_comments_across_pages_in_order(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    for i in range(250):
        fake_github.add_comment_directly(REPO.full_name, ISSUE_NUMBER, f"comment {i}", f"user{i}")
    before = fake_github.requests_received

    comments = github_client.list_issue_comments(REPO, ISSUE_NUMBER)

    assert [c.body for c in comments] == [f"comment {i}" for i in range(250)]
    assert [c.author for c in comments] == [f"user{i}" for i in range(250)]
    assert [c.id for c in comments] == sorted(c.id for c in comments)
    assert fake_github.requests_received - before == 3  # per_page=100: 100 + 100 + 50


def test_lists_repository_labels_across_pages(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    extra = [f"area/{i:03d}" for i in range(230)]
    fake_github.add_repo(REPO.full_name, extra)

    assert github_client.list_repository_labels(REPO) == REPO_LABELS + extra


def test_add_labels_returns_issue_labels_and_creates_unknown_ones_like_github(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    assert github_client.list_issue_labels(REPO, ISSUE_NUMBER) == []

    after = github_client.add_labels(REPO, ISSUE_NUMBER, ["bug", "brand-new"])
    again = github_client.add_labels(REPO, ISSUE_NUMBER, ["BUG"])  # labels are case-insensitive

    assert after == ["bug", "brand-new"]
    assert again == ["bug", "brand-new"]
    assert github_client.list_issue_labels(REPO, ISSUE_NUMBER) == ["bug", "brand-new"]
    assert "brand-new" in github_client.list_repository_labels(REPO)


def test_removed_repo_label_disappears_from_listings(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    github_client.add_labels(REPO, ISSUE_NUMBER, ["question", "bug"])
    fake_github.remove_repo_label(REPO.full_name, "question")

    assert github_client.list_issue_labels(REPO, ISSUE_NUMBER) == ["bug"]
    assert "question" not in github_client.list_repository_labels(REPO)


def test_token_override_writes_as_that_user(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.register_token("alice-token", "alice")

    github_client.post_comment(REPO, ISSUE_NUMBER, "as alice", token="alice-token")
    github_client.post_comment(REPO, ISSUE_NUMBER, "as the service")
    github_client.add_labels(REPO, ISSUE_NUMBER, ["bug"], token="alice-token")

    authors = [c["user"]["login"] for c in fake_github.comments(REPO.full_name, ISSUE_NUMBER)]
    assert authors == ["alice", SERVICE_LOGIN]
    assert [(r.login, r.applied) for r in fake_github.write_log] == [
        ("alice", True),
        (SERVICE_LOGIN, True),
        ("alice", True),
    ]
    listed = github_client.list_issue_comments(REPO, ISSUE_NUMBER, token="alice-token")
    assert [c.author for c in listed] == ["alice", SERVICE_LOGIN]


def test_connections_are_kept_alive_across_calls_and_threads(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    for i in range(20):
        github_client.post_comment(REPO, ISSUE_NUMBER, f"sequential {i}")
    assert fake_github.connections_opened == 1

    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(25):
                github_client.post_comment(REPO, ISSUE_NUMBER, f"thread {n} #{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(fake_github.comments(REPO.full_name, ISSUE_NUMBER)) == 20 + 8 * 25
    assert fake_github.writes_received == fake_github.writes_applied == 220
    assert fake_github.connections_opened <= 9  # at most one per concurrent thread


def test_fake_payloads_validate_against_githubkit_models(fake_github: FakeGitHubServer) -> None:
    """The endpoints the adapter does not wrap still return schema-valid objects."""
    fake_github.add_issue(REPO.full_name, 2, "A PR", labels=["ci-failure"], is_pull_request=True)
    gh = GitHub(SERVICE_TOKEN, base_url=fake_github.url, auto_retry=False, http_cache=False)

    issue = gh.rest.issues.get(REPO.owner, REPO.name, ISSUE_NUMBER).parsed_data
    pull = gh.rest.issues.get(REPO.owner, REPO.name, 2).parsed_data
    user = gh.rest.users.get_authenticated().parsed_data

    assert (issue.number, issue.title, issue.pull_request) == (1, "Widget crashes on start", UNSET)
    assert isinstance(pull.pull_request, IssuePropPullRequest)
    assert pull.pull_request.url
    assert [getattr(lab, "name", lab) for lab in pull.labels] == ["ci-failure"]
    assert user.login == SERVICE_LOGIN


def test_fake_sends_link_and_rate_limit_headers(fake_github: FakeGitHubServer) -> None:
    for i in range(45):
        fake_github.add_comment_directly(REPO.full_name, ISSUE_NUMBER, f"c{i}")
    url = f"{fake_github.url}/repos/acme/widgets/issues/1/comments?page=2"
    auth = {"Authorization": f"token {SERVICE_TOKEN}"}

    response = httpx.get(url, headers=auth)

    assert len(response.json()) == 15  # default per_page is 30
    links = response.headers["link"]
    for rel in ("prev", "first"):
        assert f'rel="{rel}"' in links
    assert 'rel="next"' not in links
    for name in ("limit", "remaining", "reset", "used", "resource"):
        assert f"x-ratelimit-{name}" in response.headers
    assert httpx.get(url).status_code == 401  # no Authorization header


def test_fake_rejects_empty_comment_body_with_422(fake_github: FakeGitHubServer) -> None:
    url = f"{fake_github.url}/repos/acme/widgets/issues/1/comments"
    response = httpx.post(url, json={"body": ""}, headers={"Authorization": "token x"})

    assert response.status_code == 422
    assert response.json()["message"] == "Validation Failed"
    assert fake_github.write_log == [
        WriteRecord("POST", "/repos/acme/widgets/issues/1/comments", SERVICE_LOGIN, False)
    ]


# --- faults: outcome unknown (a write may have happened) -----------------------------------


def test_read_timeout_is_outcome_unknown_and_the_late_write_still_lands(
    fast_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(Delay(1.0))

    with pytest.raises(ProviderOutcomeUnknown, match="ReadTimeout"):
        post(fast_client)

    assert fake_github.writes_received == 1
    assert fake_github.writes_applied == 0  # GitHub has not acted yet...
    assert wait_until(lambda: fake_github.writes_applied == 1)  # ...but then it does


def test_delay_without_apply_loses_the_request(
    fast_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(Delay(1.0, apply_write=False))

    with pytest.raises(ProviderOutcomeUnknown):
        post(fast_client)

    assert wait_until(lambda: len(fake_github.write_log) == 1)
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)


def test_connection_dropped_after_write_is_outcome_unknown(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(DropAfterWrite())

    with pytest.raises(ProviderOutcomeUnknown, match="RemoteProtocolError"):
        post(github_client)

    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)
    assert len(fake_github.comments(REPO.full_name, ISSUE_NUMBER)) == 1


def test_hang_after_write_is_outcome_unknown(
    fast_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(HangAfterWrite())

    with pytest.raises(ProviderOutcomeUnknown, match="ReadTimeout"):
        post(fast_client)

    assert fake_github.write_accepted.is_set()
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)
    post(fast_client, "the next call uses a fresh connection")
    assert fake_github.writes_applied == 2


@pytest.mark.parametrize("apply_write", [False, True])
def test_500_is_outcome_unknown_and_never_retried(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer, apply_write: bool
) -> None:
    fake_github.inject(Status(500, apply_write=apply_write))

    with pytest.raises(ProviderOutcomeUnknown, match="500"):
        post(github_client)

    assert fake_github.writes_received == 1  # githubkit's default would have retried 3 times
    assert fake_github.writes_applied == int(apply_write)


def test_502_html_error_page_is_outcome_unknown(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
    fake_github.inject(Status(502, body=page, content_type="text/html"))

    with pytest.raises(ProviderOutcomeUnknown, match=r"502.*text/html"):
        github_client.add_labels(REPO, ISSUE_NUMBER, ["bug"])

    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)


@pytest.mark.parametrize("invalid_json", [False, True])
def test_malformed_2xx_on_a_write_is_outcome_unknown(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer, invalid_json: bool
) -> None:
    fake_github.inject(Malformed2xx(invalid_json=invalid_json))

    expected = "not valid JSON" if invalid_json else "fails schema validation"
    with pytest.raises(ProviderOutcomeUnknown, match=expected):
        post(github_client)

    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)


def test_malformed_2xx_on_a_read_is_a_plain_provider_error(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(Malformed2xx(), method="GET", path="/labels")

    with pytest.raises(ProviderError, match="fails schema validation") as caught:
        github_client.list_repository_labels(REPO)

    assert type(caught.value) is ProviderError


def test_failure_on_a_later_page_fails_the_whole_listing(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    for i in range(150):
        fake_github.add_comment_directly(REPO.full_name, ISSUE_NUMBER, f"c{i}")
    fake_github.inject(Status(503), method="GET", path=r"comments\?.*page=2")

    with pytest.raises(ProviderOutcomeUnknown, match="503"):
        github_client.list_issue_comments(REPO, ISSUE_NUMBER)


# --- faults: definitely not written --------------------------------------------------------


def test_secondary_rate_limit(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(SecondaryRateLimit(retry_after=7))

    with pytest.raises(ProviderRateLimited, match="secondary rate limit") as caught:
        post(github_client)

    assert caught.value.retry_after_seconds == 7
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)


def test_primary_rate_limit_waits_until_reset(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(PrimaryRateLimit(reset_in=30))

    with pytest.raises(ProviderRateLimited) as caught:
        github_client.add_labels(REPO, ISSUE_NUMBER, ["bug"])

    assert 27 <= caught.value.retry_after_seconds <= 30
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)


def test_primary_rate_limit_with_reset_in_the_past_waits_zero(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(PrimaryRateLimit(reset_in=-100))

    with pytest.raises(ProviderRateLimited) as caught:
        post(github_client)

    assert caught.value.retry_after_seconds == 0


@pytest.mark.parametrize(
    ("fault", "expected_wait"),
    [
        (Status(429), 60.0),  # 429 without headers: GitHub says wait at least a minute
        (Status(403, body={"message": "You have exceeded a secondary rate limit."}), 60.0),
        (Status(429, headers={"Retry-After": "12"}), 12.0),
        (Status(403, headers={"Retry-After": "soon"}), 60.0),  # unparsable: still rate limited
    ],
)
def test_other_rate_limit_shapes(
    github_client: GitHubKitClient,
    fake_github: FakeGitHubServer,
    fault: Status,
    expected_wait: float,
) -> None:
    fake_github.inject(fault)

    with pytest.raises(ProviderRateLimited) as caught:
        post(github_client)

    assert caught.value.retry_after_seconds == expected_wait
    assert fake_github.writes_applied == 0


def test_retry_after_as_http_date(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    fake_github.inject(Status(403, headers={"Retry-After": when}))

    with pytest.raises(ProviderRateLimited) as caught:
        post(github_client)

    assert 17 <= caught.value.retry_after_seconds <= 20


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (403, "Resource not accessible by integration"),
        (404, "Not Found"),
        (410, "Issues are disabled for this repo"),
        (422, "Validation Failed"),
    ],
)
def test_client_errors_are_rejected_with_githubs_message(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer, code: int, message: str
) -> None:
    fake_github.inject(Status(code, body={"message": message, "documentation_url": "x"}))

    with pytest.raises(ProviderRejected, match=message) as caught:
        post(github_client)

    assert caught.value.status == code
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)


def test_unknown_repository_and_issue_are_rejected_404(github_client: GitHubKitClient) -> None:
    with pytest.raises(ProviderRejected, match="Not Found") as caught:
        github_client.post_comment(RepoName("acme", "nope"), 1, "x")
    assert caught.value.status == 404

    with pytest.raises(ProviderRejected) as caught:
        github_client.list_issue_comments(REPO, 999)
    assert caught.value.status == 404


def test_missing_token_is_rejected_401(fake_github: FakeGitHubServer) -> None:
    anonymous = GitHubKitClient(fake_github.url, None, timeout_seconds=1.0)
    with anonymous, pytest.raises(ProviderRejected) as caught:
        post(anonymous)

    assert caught.value.status == 401
    assert fake_github.writes_applied == 0


def test_invalid_input_is_refused_before_anything_is_sent(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    with pytest.raises(InvalidInput):
        github_client.post_comment(RepoName.parse("acme/widgets/../../user"), 1, "x")
    with pytest.raises(InvalidInput):
        github_client.post_comment(REPO, 0, "x")
    with pytest.raises(InvalidInput):
        github_client.post_comment(REPO, ISSUE_NUMBER, "")
    with pytest.raises(InvalidInput):
        github_client.add_labels(REPO, ISSUE_NUMBER, [])

    assert fake_github.requests_received == 0


# --- faults: never sent --------------------------------------------------------------------


def test_closed_port_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with GitHubKitClient(f"http://127.0.0.1:{port}", SECRET, timeout_seconds=0.5) as client:
        with pytest.raises(ProviderUnavailable, match="ConnectError") as caught:
            post(client)
        with pytest.raises(ProviderUnavailable):
            client.list_issue_labels(REPO, ISSUE_NUMBER)

    assert SECRET not in str(caught.value)


def test_transport_exception_classification() -> None:
    """Exceptions we cannot provoke reliably on loopback, classified directly."""
    call = Call("post_comment", "POST", "/repos/acme/widgets/issues/1/comments", write=True)
    request = httpx.Request("POST", "http://127.0.0.1/")
    not_sent: list[Exception] = [
        httpx.ConnectTimeout("t"),
        httpx.PoolTimeout("t"),
        httpx.ConnectError("refused"),
    ]
    maybe_sent: list[Exception] = [
        httpx.ReadTimeout("t", request=request),
        httpx.WriteTimeout("t"),
        httpx.ReadError("reset"),
        httpx.WriteError("broken pipe"),
        httpx.RemoteProtocolError("Server disconnected"),
        httpx.LocalProtocolError("bad"),
        httpcore.ReadError("raw"),
        RuntimeError("unexpected"),
    ]
    for exc in not_sent:
        assert type(transport_error(call, exc)) is ProviderUnavailable, exc
    for exc in maybe_sent:
        assert type(transport_error(call, exc)) is ProviderOutcomeUnknown, exc


# --- secrets -------------------------------------------------------------------------------


def test_token_never_appears_in_errors_or_logs(
    fake_github: FakeGitHubServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_github.register_token(SECRET, "secret-user")
    echo = {"message": f"Bad credentials for token {SECRET}", "documentation_url": "x"}
    faults: list[Fault] = [
        Status(401, body=echo),
        Status(500, body=echo),
        Status(403, body=echo),
        SecondaryRateLimit(),
        PrimaryRateLimit(),
        Malformed2xx(),
        Malformed2xx(invalid_json=True),
        DropAfterWrite(),
        Delay(1.0),
    ]
    caplog.set_level(logging.DEBUG)
    raised: list[ProviderError] = []
    with GitHubKitClient(fake_github.url, "service-token", timeout_seconds=0.5) as client:
        for fault in faults:
            fake_github.inject(fault)
            with pytest.raises(ProviderError) as caught:
                post(client, token=SECRET)
            raised.append(caught.value)

    assert len(raised) == len(faults)
    for error in raised:
        for text in (str(error), repr(error), error.message, repr(error.context)):
            assert SECRET not in text
    assert "***" in raised[0].message  # GitHub's echo was scrubbed, not dropped
    assert SECRET not in caplog.text
    for record in caplog.records:
        assert SECRET not in repr(record.__dict__)
    assert SECRET not in repr(GitHubKitClient(fake_github.url, SECRET, 1.0))
