"""The sandbox forge's issue creation and listing, over real loopback HTTP.

Driven with githubkit (the library the product uses, which validates every response against
GitHub's schema) and plain httpx where the raw status, headers or a dropped connection matter.
Each test also checks what the forge says happened: how many issues exist and what it counted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from githubkit import GitHub
from githubkit.exception import RequestError, RequestFailed
from githubkit_schemas.latest.models import Issue

from fixtures_github import ISSUE_NUMBER, REPO, REPO_LABELS, SERVICE_LOGIN, SERVICE_TOKEN
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
    TamperedBody,
    Trickle,
    WriteRecord,
)

ISSUES_PATH = f"/repos/{REPO.full_name}/issues"
OUTSIDER, OUTSIDER_TOKEN = "outsider", "outsider-token"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def gh(fake_github: FakeGitHubServer) -> Iterator[GitHub[Any]]:
    """githubkit as the product configures it: no retries, no cache, a short timeout."""
    client: GitHub[Any] = GitHub(
        SERVICE_TOKEN, base_url=fake_github.url, auto_retry=False, http_cache=False, timeout=0.5
    )
    with client:
        yield client


def auth(token: str = SERVICE_TOKEN) -> dict[str, str]:
    return {"Authorization": f"token {token}"}


def create(
    fake: FakeGitHubServer, payload: Any, token: str | None = SERVICE_TOKEN
) -> httpx.Response:
    headers = auth(token) if token else {}
    return httpx.post(f"{fake.url}{ISSUES_PATH}", json=payload, headers=headers, timeout=2.0)


def numbers(fake: FakeGitHubServer) -> list[int]:
    return [issue["number"] for issue in fake.issues(REPO.full_name)]


# --- creating an issue ---------------------------------------------------------------------


def test_create_answers_201_with_an_issue_githubkit_accepts(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    response = gh.rest.issues.create(
        REPO.owner,
        REPO.name,
        title="Widget leaks memory",
        body="After an hour it uses 4 GB.",
        labels=["bug", "Memory"],  # "Memory" does not exist yet: GitHub creates it
        assignees=[SERVICE_LOGIN],
    )
    issue = response.parsed_data  # githubkit has validated the body against its Issue model

    assert response.status_code == 201
    assert (issue.number, issue.title, issue.body, issue.state) == (
        2,
        "Widget leaks memory",
        "After an hour it uses 4 GB.",
        "open",
    )
    assert issue.user is not None and issue.user.login == SERVICE_LOGIN
    assert [getattr(lab, "name", lab) for lab in issue.labels] == ["bug", "Memory"]
    assert [user.login for user in issue.assignees or []] == [SERVICE_LOGIN]
    assert issue.author_association == "COLLABORATOR"
    assert response.headers["location"] == issue.url
    assert fake_github.repo_labels(REPO.full_name) == [*REPO_LABELS, "Memory"]
    # The forge keeps it: the same issue comes back from a read, and it was one applied write.
    again = gh.rest.issues.get(REPO.owner, REPO.name, 2).parsed_data
    assert (again.id, again.created_at, again.updated_at) == (
        issue.id,
        issue.created_at,
        issue.updated_at,
    )
    assert numbers(fake_github) == [ISSUE_NUMBER, 2]
    assert fake_github.write_log == [WriteRecord("POST", ISSUES_PATH, SERVICE_LOGIN, True)]
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)


def test_a_title_alone_gives_a_null_body_and_the_shape_still_validates(
    fake_github: FakeGitHubServer,
) -> None:
    response = create(fake_github, {"title": 42})  # the schema allows a number

    assert response.status_code == 201
    issue = Issue.model_validate(response.json())
    assert (issue.title, issue.body, issue.labels, issue.assignees) == ("42", None, [], [])
    assert response.json()["assignee"] is None


def test_issue_numbers_continue_after_pull_requests(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    fake_github.add_pull_request(REPO.full_name, 7, "A fix", head_sha="a" * 40)

    first = gh.rest.issues.create(REPO.owner, REPO.name, title="one").parsed_data
    second = gh.rest.issues.create(REPO.owner, REPO.name, title="two").parsed_data

    assert (first.number, second.number) == (8, 9)
    assert numbers(fake_github) == [ISSUE_NUMBER, 7, 8, 9]


def test_labels_and_assignees_are_dropped_without_push_access(
    fake_github: FakeGitHubServer,
) -> None:
    fake_github.register_token(OUTSIDER_TOKEN, OUTSIDER)
    wanted = {"title": "Please look", "labels": ["bug", "urgent"], "assignees": [SERVICE_LOGIN]}

    response = create(fake_github, wanted, token=OUTSIDER_TOKEN)

    assert response.status_code == 201
    issue = Issue.model_validate(response.json())
    assert issue.user is not None and issue.user.login == OUTSIDER
    assert (issue.labels, issue.assignees, issue.author_association) == ([], [], "NONE")
    assert fake_github.repo_labels(REPO.full_name) == REPO_LABELS  # "urgent" was not created

    fake_github.grant_push(REPO.full_name, OUTSIDER)
    granted = Issue.model_validate(create(fake_github, wanted, token=OUTSIDER_TOKEN).json())
    assert [getattr(lab, "name", lab) for lab in granted.labels] == ["bug", "urgent"]
    assert [user.login for user in granted.assignees or []] == [SERVICE_LOGIN]


def test_assignees_who_may_not_push_are_dropped(fake_github: FakeGitHubServer) -> None:
    fake_github.add_repo(REPO.full_name, pushers=["alice"])
    payload = {"title": "Triage me", "assignees": ["alice", "stranger"], "assignee": "bob"}

    response = create(fake_github, payload)

    assert response.status_code == 201
    assert [user["login"] for user in response.json()["assignees"]] == ["alice"]
    assert response.json()["assignee"]["login"] == "alice"


@pytest.mark.parametrize(
    ("payload", "token", "path", "status"),
    [
        ({"title": "no token"}, None, ISSUES_PATH, 401),
        ({"title": "unknown repo"}, SERVICE_TOKEN, "/repos/acme/nothing/issues", 404),
        ({"body": "no title"}, SERVICE_TOKEN, ISSUES_PATH, 422),
        ({"title": "  "}, SERVICE_TOKEN, ISSUES_PATH, 422),
        ({"title": "bad labels", "labels": "bug"}, SERVICE_TOKEN, ISSUES_PATH, 422),
        ({"title": "bad assignees", "assignees": [7]}, SERVICE_TOKEN, ISSUES_PATH, 422),
    ],
    ids=["401", "404", "422-missing-title", "422-blank-title", "422-labels", "422-assignees"],
)
def test_refused_creations_create_nothing(
    fake_github: FakeGitHubServer,
    payload: dict[str, Any],
    token: str | None,
    path: str,
    status: int,
) -> None:
    headers = auth(token) if token else {}

    response = httpx.post(f"{fake_github.url}{path}", json=payload, headers=headers)

    assert response.status_code == status
    assert response.json()["message"] in (
        "Requires authentication",
        "Not Found",
        "Validation Failed",
    )
    assert numbers(fake_github) == [ISSUE_NUMBER]
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 0)
    assert [record.applied for record in fake_github.write_log] == [False]


def test_githubkit_reads_a_422_as_a_validation_error(gh: GitHub[Any]) -> None:
    with pytest.raises(RequestFailed) as caught:
        gh.rest.issues.create(REPO.owner, REPO.name, title="")

    assert caught.value.response.status_code == 422
    assert caught.value.response.json()["errors"][0]["field"] == "title"


# --- faults on creation ----------------------------------------------------------------------


def test_drop_after_write_creates_the_issue_once_and_never_answers(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    fake_github.inject(DropAfterWrite(), method="POST", path=ISSUES_PATH)

    with pytest.raises(RequestError) as caught:
        gh.rest.issues.create(REPO.owner, REPO.name, title="Lost answer")

    assert isinstance(caught.value.exc, httpx.RemoteProtocolError)  # no response at all
    assert numbers(fake_github) == [ISSUE_NUMBER, 2]
    assert fake_github.issues(REPO.full_name)[1]["title"] == "Lost answer"
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, 1)
    assert fake_github.pending_faults == 0


@pytest.mark.parametrize(
    ("fault", "status", "created"),
    [
        (Status(500), 500, False),
        (Status(502, apply_write=True), 502, True),
        (SecondaryRateLimit(retry_after=5), 403, False),
        (PrimaryRateLimit(reset_in=30), 403, False),
        (Malformed2xx(), 201, True),
        (TamperedBody(remove=("number",)), 201, True),
    ],
    ids=[
        "500",
        "502-applied",
        "secondary-rate-limit",
        "primary-rate-limit",
        "malformed",
        "tampered",
    ],
)
def test_answering_faults_work_on_create(
    fake_github: FakeGitHubServer, fault: Fault, status: int, created: bool
) -> None:
    fake_github.inject(fault, method="POST", path=ISSUES_PATH)

    response = create(fake_github, {"title": "Faulty"})

    assert response.status_code == status
    assert numbers(fake_github) == ([ISSUE_NUMBER, 2] if created else [ISSUE_NUMBER])
    assert (fake_github.writes_received, fake_github.writes_applied) == (1, int(created))
    if status == 201:  # the answer is not an issue githubkit would accept
        with pytest.raises(ValueError, match="validation error"):
            Issue.model_validate(response.json())


def test_hang_after_write_creates_the_issue_and_never_answers(
    fake_github: FakeGitHubServer,
) -> None:
    fake_github.inject(HangAfterWrite(), method="POST", path=ISSUES_PATH)

    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{fake_github.url}{ISSUES_PATH}", json={"title": "Hung"}, headers=auth(), timeout=0.3
        )

    assert fake_github.write_accepted.is_set()
    assert numbers(fake_github) == [ISSUE_NUMBER, 2]


def test_delay_without_the_write_times_out_and_creates_nothing(
    fake_github: FakeGitHubServer,
) -> None:
    fake_github.inject(Delay(30.0, apply_write=False), method="POST", path=ISSUES_PATH)

    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{fake_github.url}{ISSUES_PATH}", json={"title": "Slow"}, headers=auth(), timeout=0.3
        )

    fake_github.stop()  # releases the delayed request, which is then dropped unapplied
    assert numbers(fake_github) == [ISSUE_NUMBER]
    assert fake_github.write_log == [WriteRecord("POST", ISSUES_PATH, SERVICE_LOGIN, False)]


# --- listing -------------------------------------------------------------------------------


def seed_timeline(fake: FakeGitHubServer) -> None:
    """Issues 2..6 created an hour apart after issue #1; #3 was updated last of all."""
    fake.add_issue(REPO.full_name, ISSUE_NUMBER, "first", created_at=T0, updated_at=T0)
    for number in range(2, 7):
        created = T0 + timedelta(hours=number)
        updated = T0 + timedelta(days=2) if number == 3 else created
        fake.add_issue(
            REPO.full_name, number, f"issue {number}", created_at=created, updated_at=updated
        )


def test_listing_newest_first_pages_with_link_headers(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    seed_timeline(fake_github)

    pages = [
        gh.rest.issues.list_for_repo(
            REPO.owner, REPO.name, sort="created", direction="desc", per_page=2, page=page
        )
        for page in (1, 2, 3)
    ]

    assert [[i.number for i in page.parsed_data] for page in pages] == [[6, 5], [4, 3], [2, 1]]
    assert 'rel="next"' in pages[0].headers["link"] and 'rel="last"' in pages[0].headers["link"]
    assert 'rel="next"' not in pages[2].headers["link"]
    oldest_first = gh.rest.issues.list_for_repo(REPO.owner, REPO.name, direction="asc")
    assert [i.number for i in oldest_first.parsed_data] == [1, 2, 3, 4, 5, 6]
    by_update = gh.rest.issues.list_for_repo(REPO.owner, REPO.name, sort="updated")
    assert [i.number for i in by_update.parsed_data] == [3, 6, 5, 4, 2, 1]


def test_since_keeps_issues_updated_at_or_after_it(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    seed_timeline(fake_github)
    since = "2026-03-01T17:00:00Z"  # T0 + 5 h: exactly when #5 was created and last updated

    listed = gh.rest.issues.list_for_repo(REPO.owner, REPO.name, since=since).parsed_data  # type: ignore[arg-type]

    # #3 was created before ``since`` but updated after it: GitHub's ``since`` is on updated_at.
    assert [i.number for i in listed] == [6, 5, 3]
    with_offset = httpx.get(
        f"{fake_github.url}{ISSUES_PATH}",
        params={"since": "2026-03-01T18:00:00+01:00"},
        headers=auth(),
    )
    assert [i["number"] for i in with_offset.json()] == [6, 5, 3]


def test_since_in_another_shape_is_refused_like_github_does(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    # githubkit 0.16 sends a datetime as str(datetime), "2026-03-01 17:00:00+00:00": not the
    # documented shape, so a client has to format ``since`` itself.
    with pytest.raises(RequestFailed) as caught:
        gh.rest.issues.list_for_repo(REPO.owner, REPO.name, since=T0)

    assert caught.value.response.status_code == 422
    assert "YYYY-MM-DDTHH:MM:SSZ" in caught.value.response.json()["message"]
    bad = httpx.get(f"{fake_github.url}{ISSUES_PATH}?since=yesterday", headers=auth())
    assert bad.status_code == 422


def test_list_filters_by_state_creator_and_assignee(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    fake_github.add_issue(REPO.full_name, 2, "assigned", assignees=["alice"], user="alice")
    fake_github.add_issue(REPO.full_name, 3, "closed", state="closed")

    def listed(**query: str) -> list[int]:
        return [
            i.number
            for i in gh.rest.issues.list_for_repo(REPO.owner, REPO.name, **query).parsed_data
        ]  # type: ignore[arg-type]

    assert listed() == [2, 1]
    assert listed(state="all") == [3, 2, 1]
    assert listed(state="closed") == [3]
    assert listed(creator="alice") == [2]
    assert listed(assignee="alice") == [2]
    assert listed(assignee="none") == [1]
    [assigned] = gh.rest.issues.list_for_repo(REPO.owner, REPO.name, assignee="*").parsed_data[:1]
    assert [user.login for user in assigned.assignees or []] == ["alice"]


# --- who can be assigned -------------------------------------------------------------------


def test_assignees_endpoint_answers_204_for_pushers_and_404_otherwise(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    fake_github.add_repo(REPO.full_name, pushers=["alice"])

    assert (
        gh.rest.issues.check_user_can_be_assigned(REPO.owner, REPO.name, "alice").status_code == 204
    )
    assert (
        gh.rest.issues.check_user_can_be_assigned(REPO.owner, REPO.name, SERVICE_LOGIN).status_code
        == 204
    )
    for owner, name, login in ((REPO.owner, REPO.name, "stranger"), ("acme", "nothing", "alice")):
        with pytest.raises(RequestFailed) as caught:
            gh.rest.issues.check_user_can_be_assigned(owner, name, login)
        assert caught.value.response.status_code == 404
    fake_github.revoke_push(REPO.full_name, "alice")
    with pytest.raises(RequestFailed):
        gh.rest.issues.check_user_can_be_assigned(REPO.owner, REPO.name, "alice")


# --- a trickled answer ---------------------------------------------------------------------


def test_a_trickled_answer_outlasts_per_phase_timeouts_and_arrives_complete(
    fake_github: FakeGitHubServer,
) -> None:
    """httpx's timeouts bound each socket operation, not the request: a body sent one byte at a
    time keeps every read well inside 1 s while the whole answer takes 4 s."""
    url = f"{fake_github.url}/repos/{REPO.full_name}/issues/{ISSUE_NUMBER}"
    with httpx.Client(timeout=1.0, headers=auth()) as client:
        expected = client.get(url).content
        fake_github.inject(Trickle(4.0 / len(expected)), method="GET", path=r"/issues/1$")
        started = time.monotonic()
        arrivals: list[float] = []
        with client.stream("GET", url) as response:
            headers_after = time.monotonic() - started
            body = b""
            for chunk in response.iter_raw():
                body += chunk
                arrivals.append(time.monotonic())
        elapsed = time.monotonic() - started

    assert response.status_code == 200 and body == expected
    assert headers_after < 2.0  # status and headers long before the 4 s body ends
    gaps = [later - earlier for earlier, later in zip([started, *arrivals], arrivals, strict=False)]
    # Never idle as long as the 1 s read timeout (or the read would have failed), yet four
    # times the timeout in all. Only lower bounds on the whole: a busy machine only adds time.
    assert len(arrivals) > 100 and max(gaps) < 1.0
    assert elapsed >= 3.9


def test_a_trickled_answer_ends_promptly_when_the_server_stops(
    fake_github: FakeGitHubServer,
) -> None:
    fake_github.inject(Trickle(30.0), method="GET", path=r"/issues/1$")
    url = f"{fake_github.url}/repos/{REPO.full_name}/issues/{ISSUE_NUMBER}"
    idle = set(_handler_threads())

    with (
        httpx.Client(timeout=60.0, headers=auth()) as client,
        client.stream("GET", url) as response,
    ):
        assert response.status_code == 200
        trickling = set(_handler_threads()) - idle  # the thread sending this body
        started = time.monotonic()
        fake_github.stop()
        stopped_after = time.monotonic() - started
        with pytest.raises(httpx.RemoteProtocolError):  # cut off in the middle of the body
            response.read()
        failed_after = time.monotonic() - started
    for thread in trickling:
        thread.join(timeout=1.0)

    assert stopped_after < 1.0 and failed_after < 1.5
    assert len(trickling) == 1 and not any(t.is_alive() for t in trickling)  # not asleep for 30 s


def _handler_threads() -> list[threading.Thread]:
    """The loopback server's per-connection threads (``ThreadingMixIn`` names them so)."""
    return [t for t in threading.enumerate() if "process_request_thread" in t.name]


@pytest.mark.parametrize(("apply", "status"), [(True, 201), (False, 502)], ids=["applied", "not"])
def test_a_trickled_write_is_applied_only_when_asked(
    fake_github: FakeGitHubServer, apply: bool, status: int
) -> None:
    fake_github.inject(Trickle(0.0001, apply_write=apply), method="POST", path=ISSUES_PATH)

    response = create(fake_github, {"title": "Slowly answered"})

    assert response.status_code == status
    if apply:
        assert Issue.model_validate(response.json()).title == "Slowly answered"
    else:
        assert response.json()["message"] == "Bad Gateway"
    assert numbers(fake_github) == ([ISSUE_NUMBER, 2] if apply else [ISSUE_NUMBER])
    assert fake_github.write_log == [WriteRecord("POST", ISSUES_PATH, SERVICE_LOGIN, apply)]


# --- the forge as HTML (issue 12, item 1) ---------------------------------------------------


def _html(url: str) -> httpx.Response:
    """A browser's request: no token."""
    response = httpx.get(url, headers={"Accept": "text/html"}, timeout=5)
    assert response.headers["content-type"].startswith("text/html"), response.text[:200]
    assert "Sandbox forge, not GitHub" in response.text
    return response


def test_every_html_url_the_json_hands_out_is_a_public_html_page(
    fake_github_ci: FakeGitHubServer,
) -> None:
    fake = fake_github_ci
    hostile = "<script>alert(1)</script>"
    fake.add_issue(REPO.full_name, 7, f"Title {hostile}", f"Body {hostile}", labels=["bug"])
    fake.add_comment_directly(REPO.full_name, 7, "first", user="rita")
    posted = httpx.post(
        f"{fake.url}{ISSUES_PATH}/7/comments", json={"body": f"second {hostile}"}, headers=auth()
    )
    assert posted.status_code == 201
    requests = fake.requests_received
    issue = httpx.get(f"{fake.url}{ISSUES_PATH}/7", headers=auth()).json()
    page = _html(issue["html_url"])
    assert page.status_code == 200
    text = page.text
    assert hostile not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert text.index("first") < text.index("second")  # in order, with their authors
    assert ">rita<" in text and f">{SERVICE_LOGIN}<" in text and ">bug<" in text
    assert f"id='issuecomment-{posted.json()['id']}'" in text  # the comment's html_url anchor
    assert ">open<" in text
    pull = httpx.get(f"{fake.url}{ISSUES_PATH}/2", headers=auth()).json()
    assert _html(pull["html_url"]).status_code == 200
    checks = httpx.get(
        f"{fake.url}/repos/{REPO.full_name}/commits/{pull_sha(fake)}/check-runs", headers=auth()
    ).json()["check_runs"]
    for check in checks:
        shown = _html(check["html_url"])
        assert shown.status_code == 200 and check["name"] in shown.text
    repo = _html(f"{fake.url}/{REPO.full_name}")
    assert repo.status_code == 200 and "Title &lt;script&gt;" in repo.text
    assert _html(f"{fake.url}/{REPO.full_name}/issues/999").status_code == 404
    assert fake.requests_received == requests + 4  # the four API calls above; pages are not
    # The API still answers JSON, and still wants a token.
    anonymous = httpx.get(f"{fake.url}{ISSUES_PATH}/7")
    assert anonymous.status_code == 401 and anonymous.json()["message"]


def pull_sha(fake: FakeGitHubServer) -> str:
    pull = httpx.get(f"{fake.url}/repos/{REPO.full_name}/pulls/2", headers=auth()).json()
    sha: str = pull["head"]["sha"]
    return sha
