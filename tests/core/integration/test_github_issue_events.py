"""An issue's events (``GET /repos/{o}/{r}/issues/{n}/events``): the sandbox forge records and
serves them, and ``GitHubKitClient.list_issue_events`` reads them, over real loopback HTTP.

Labels carry no marker, so the events are how the product can learn who put a label on an issue
and when. The forge's payloads are checked against githubkit's own models (its typed
``issues.list_events`` validates every item); the adapter is checked for every page, actors and
times, the events githubkit's union has no member for, and the read error contract.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from githubkit import GitHub
from githubkit_schemas.latest.models import LabeledIssueEvent, UnlabeledIssueEvent

from fixtures_github import ISSUE_NUMBER, REPO, SERVICE_LOGIN, SERVICE_TOKEN
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import IssueEvent, RepoName
from resolveflow.errors import InvalidInput, ProviderError, ProviderOutcomeUnknown, ProviderRejected
from resolveflow.sandbox.forge.server import FakeGitHubServer, Status, TamperedBody

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EVENTS_PATH = rf"/issues/{ISSUE_NUMBER}/events"


@pytest.fixture
def gh(fake_github: FakeGitHubServer) -> Iterator[GitHub[Any]]:
    """githubkit as the product configures it: no retries, no cache, a short timeout."""
    client: GitHub[Any] = GitHub(
        SERVICE_TOKEN, base_url=fake_github.url, auto_retry=False, http_cache=False, timeout=2.0
    )
    with client:
        yield client


def summary(events: list[IssueEvent]) -> list[tuple[str, str, str | None, datetime]]:
    return [(e.event, e.actor, e.label, e.created_at) for e in events]


# --- the forge's endpoint, through githubkit's typed method --------------------------------


def test_label_writes_record_events_that_githubkit_validates_page_by_page(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    fake_github.add_issue_event(
        REPO.full_name, ISSUE_NUMBER, "labeled", actor="alice", label="bug", created_at=T0
    )
    before = datetime.now(UTC).replace(microsecond=0)
    gh.rest.issues.add_labels(REPO.owner, REPO.name, ISSUE_NUMBER, labels=["bug", "question"])
    gh.rest.issues.remove_label(REPO.owner, REPO.name, ISSUE_NUMBER, "bug")
    after = datetime.now(UTC)

    pages = []
    for page in (1, 2):
        response = gh.rest.issues.list_events(
            REPO.owner, REPO.name, ISSUE_NUMBER, per_page=2, page=page
        )
        pages.append((response.parsed_data, response.headers.get("link", "")))

    (first, link1), (second, link2) = pages
    assert 'rel="next"' in link1 and "page=2" in link1 and 'rel="next"' not in link2
    events = [*first, *second]
    # "bug" was already on the issue: adding it again records nothing, as on GitHub.
    assert [type(e) for e in events] == [LabeledIssueEvent, LabeledIssueEvent, UnlabeledIssueEvent]
    assert [(e.event, e.actor.login, e.label.name) for e in events] == [
        ("labeled", "alice", "bug"),
        ("labeled", SERVICE_LOGIN, "question"),
        ("unlabeled", SERVICE_LOGIN, "bug"),
    ]
    assert events[0].created_at == "2026-03-01T12:00:00Z"
    for event in events[1:]:
        assert before <= datetime.fromisoformat(event.created_at) <= after
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert fake_github.issue_labels(REPO.full_name, ISSUE_NUMBER) == ["question"]


def test_issue_creation_records_a_labeled_event_per_label_by_its_author(
    gh: GitHub[Any], fake_github: FakeGitHubServer
) -> None:
    fake_github.register_token("outsider-token", "outsider")
    created = gh.rest.issues.create(
        REPO.owner, REPO.name, title="Leak", labels=["bug", "Memory"]
    ).parsed_data
    outsider = httpx.post(
        f"{fake_github.url}/repos/{REPO.full_name}/issues",
        json={"title": "Also a leak", "labels": ["bug"]},
        headers={"Authorization": "token outsider-token"},
        timeout=2.0,
    ).json()

    events = fake_github.issue_events(REPO.full_name, created.number)
    assert [(e["event"], e["actor"]["login"], e["label"]["name"]) for e in events] == [
        ("labeled", SERVICE_LOGIN, "bug"),
        ("labeled", SERVICE_LOGIN, "Memory"),
    ]
    assert {e["created_at"] for e in events} == {created.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")}
    # Without push access GitHub drops the labels, so nothing is labelled and nothing recorded.
    assert fake_github.issue_events(REPO.full_name, outsider["number"]) == []


def test_removing_a_label_the_issue_does_not_carry_is_404_and_records_nothing(
    fake_github: FakeGitHubServer,
) -> None:
    response = httpx.delete(
        f"{fake_github.url}/repos/{REPO.full_name}/issues/{ISSUE_NUMBER}/labels/bug",
        headers={"Authorization": f"token {SERVICE_TOKEN}"},
        timeout=2.0,
    )

    assert response.status_code == 404
    assert response.json()["message"] == "Label does not exist"
    assert fake_github.issue_events(REPO.full_name, ISSUE_NUMBER) == []


def test_seeding_refuses_events_that_could_not_happen(fake_github: FakeGitHubServer) -> None:
    add = fake_github.add_issue_event
    add(REPO.full_name, ISSUE_NUMBER, "labeled", label="bug")
    impossible: list[tuple[str, str | None]] = [
        ("labeled", "bug"),  # already carried
        ("unlabeled", "question"),  # not carried
        ("reopened", None),  # already open
        ("labeled", None),  # names no label
        ("closed", "bug"),  # names one
        ("commented", None),  # not an event the forge knows
    ]
    for event, label in impossible:
        with pytest.raises(ValueError):
            add(REPO.full_name, ISSUE_NUMBER, event, label=label)

    assert len(fake_github.issue_events(REPO.full_name, ISSUE_NUMBER)) == 1


# --- GitHubKitClient.list_issue_events -----------------------------------------------------


def test_list_issue_events_returns_every_page_with_actor_and_time(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    # 130 seeded events (two pages of 100), recorded out of time order on purpose.
    for i in reversed(range(65)):
        at = T0 + timedelta(minutes=2 * i)
        fake_github.add_issue_event(
            REPO.full_name, ISSUE_NUMBER, "labeled", actor=f"user{i}", label=f"l{i}", created_at=at
        )
        fake_github.add_issue_event(
            REPO.full_name,
            ISSUE_NUMBER,
            "unlabeled",
            actor="bob",
            label=f"l{i}",
            created_at=at + timedelta(minutes=1),
        )
    before = fake_github.requests_received
    started = datetime.now(UTC).replace(microsecond=0)
    github_client.add_labels(REPO, ISSUE_NUMBER, ["needs-triage"])

    events = github_client.list_issue_events(REPO, ISSUE_NUMBER)

    assert fake_github.requests_received - before == 1 + 2  # the write, then two pages
    assert len(events) == 131
    assert summary(events[:3]) == [
        ("labeled", "user0", "l0", T0),
        ("unlabeled", "bob", "l0", T0 + timedelta(minutes=1)),
        ("labeled", "user1", "l1", T0 + timedelta(minutes=2)),
    ]
    assert [e.created_at for e in events] == sorted(e.created_at for e in events)
    last = events[-1]
    assert (last.event, last.actor, last.label) == ("labeled", SERVICE_LOGIN, "needs-triage")
    assert started <= last.created_at <= datetime.now(UTC)
    assert len({e.id for e in events}) == 131


def test_events_githubkits_union_lacks_are_read_not_refused(
    gh: GitHub[Any], github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    """GitHub lists ``closed``/``reopened`` here too; githubkit 0.16's union for this endpoint has
    no member for them, so its typed method fails the whole page. The adapter does not."""
    add = fake_github.add_issue_event
    add(REPO.full_name, ISSUE_NUMBER, "labeled", actor="alice", label="bug", created_at=T0)
    add(REPO.full_name, ISSUE_NUMBER, "closed", actor="bob", created_at=T0 + timedelta(hours=1))
    add(REPO.full_name, ISSUE_NUMBER, "reopened", actor="carol", created_at=T0 + timedelta(hours=2))

    with pytest.raises(ValueError, match="validation error"):
        _ = gh.rest.issues.list_events(REPO.owner, REPO.name, ISSUE_NUMBER).parsed_data

    events = github_client.list_issue_events(REPO, ISSUE_NUMBER)
    assert summary(events) == [
        ("labeled", "alice", "bug", T0),
        ("closed", "bob", None, T0 + timedelta(hours=1)),
        ("reopened", "carol", None, T0 + timedelta(hours=2)),
    ]
    assert github_client.get_issue(REPO, ISSUE_NUMBER).state == "open"


def test_an_issue_without_events_has_an_empty_history(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    assert github_client.list_issue_events(REPO, ISSUE_NUMBER) == []
    assert fake_github.requests_received == 1


# --- the read error contract ---------------------------------------------------------------

BAD_ANSWERS = [
    pytest.param(
        TamperedBody(remove=("0.label",)),
        ProviderError,
        r"labeled event \(id \d+\) that names no label",
        id="labeled without label",
    ),
    pytest.param(
        TamperedBody(replace={"0.created_at": "yesterday"}),
        ProviderError,
        r"fails schema validation",
        id="bad created_at",
    ),
    pytest.param(
        TamperedBody(remove=("0.actor",)), ProviderError, r"fails schema validation", id="no actor"
    ),
    pytest.param(Status(410), ProviderRejected, r"refused \(410\)", id="410"),
    pytest.param(
        Status(502, body="<html>bad gateway</html>", content_type="text/html"),
        ProviderOutcomeUnknown,
        r"failed \(502\)",
        id="502",
    ),
]


@pytest.mark.parametrize(("fault", "error_type", "pattern"), BAD_ANSWERS)
def test_bad_answers_follow_the_read_error_contract(
    github_client: GitHubKitClient,
    fake_github: FakeGitHubServer,
    fault: TamperedBody | Status,
    error_type: type[ProviderError],
    pattern: str,
) -> None:
    fake_github.add_issue_event(REPO.full_name, ISSUE_NUMBER, "labeled", label="bug")
    fake_github.inject(fault, method="GET", path=EVENTS_PATH)

    with pytest.raises(ProviderError) as caught:
        github_client.list_issue_events(REPO, ISSUE_NUMBER)

    assert type(caught.value) is error_type, caught.value
    message = caught.value.message
    assert message.startswith(
        f"list_issue_events (GET /repos/{REPO.full_name}/issues/{ISSUE_NUMBER}/events)"
    ), message
    assert re.search(pattern, message), message
    assert SERVICE_TOKEN not in message and fake_github.pending_faults == 0


def test_unknown_issue_is_rejected_and_bad_arguments_send_nothing(
    github_client: GitHubKitClient, fake_github: FakeGitHubServer
) -> None:
    with pytest.raises(ProviderRejected) as missing:
        github_client.list_issue_events(REPO, 404)
    assert missing.value.status == 404
    sent = fake_github.requests_received

    for repo, number in ((RepoName.parse("acme/../x"), 1), (REPO, 0), (REPO, -3)):
        with pytest.raises(InvalidInput):
            github_client.list_issue_events(repo, number)
    assert fake_github.requests_received == sent
