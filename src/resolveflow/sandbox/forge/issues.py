"""Issues and their comments: the seeding functions tests call, and the REST routes over them.

Routes (``ROUTES``):

- ``GET /repos/{o}/{r}/issues``: issues and pull requests; ``state`` (default open), ``since``
  (``updated_at >= since``, as GitHub filters), ``labels`` (all of them), ``creator``,
  ``assignee`` (a login, ``none`` or ``*``), ``sort`` (created, updated, comments; default
  created) and ``direction`` (default desc), paginated with ``Link`` like every list.
- ``POST /repos/{o}/{r}/issues``: a new issue, numbered after the last issue or pull request,
  authored by the token's login. Labels and assignees are silently dropped unless that login may
  push (see ``state``), assignees who may not push are dropped too, and unknown labels are created.
- ``GET /repos/{o}/{r}/issues/{n}``, ``GET``/``POST /repos/{o}/{r}/issues/{n}/comments``.

Timestamps are stored, not invented per response: ``updated_at`` is set when an issue is seeded
and moves forward when a comment or label is added over HTTP (as on GitHub), so ``since`` crawls
behave like the real thing. Seeding a comment directly does not touch the issue's ``updated_at``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.model import (
    FakeRequest,
    IssueRecord,
    PullRecord,
    Timestamp,
    fake_sha,
    timestamp,
)
from resolveflow.sandbox.forge.routing import REPO, Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.forge.suggestions import etag
from resolveflow.sandbox.loopback import Reply

ISSUE_SORTS = ("created", "updated", "comments")
# GitHub documents ``since`` as ``YYYY-MM-DDTHH:MM:SSZ`` and refuses other shapes with this
# message; an offset instead of the ``Z`` is accepted too. Note that githubkit 0.16 sends a
# ``datetime`` as ``str(datetime)`` ("2026-03-01 17:00:00+00:00"): callers must pass the text.
SINCE_FORMAT_MESSAGE = "The since parameter needs to be in ISO 8601 format: YYYY-MM-DDTHH:MM:SSZ"
_ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


# --- seeding and inspection (each takes the lock) ------------------------------------------


def add_issue(
    forge: ForgeState,
    full_name: str,
    number: int,
    title: str = "",
    body: str = "",
    *,
    labels: Iterable[str] = (),
    assignees: Iterable[str] = (),
    user: str = "octocat",
    is_pull_request: bool = False,
    state: str = "open",
    created_at: Timestamp = None,
    updated_at: Timestamp = None,
    closed_at: Timestamp = None,
    author_association: str = "CONTRIBUTOR",
    merged_at: Timestamp = None,
) -> None:
    """Seed an issue (or pull request); unknown labels are created in the repo.

    Timestamps are ISO 8601 strings (or datetimes): ``created_at`` and ``updated_at`` default
    to now, ``closed_at`` to now for a closed issue. A pull request seeded here gets a
    generated head sha and branch (use ``add_pull_request`` to choose them); ``merged_at``
    applies to pull requests only. Assignees are stored as given (no push check).
    """
    if merged_at is not None and not is_pull_request:
        raise ValueError("merged_at is only meaningful for a pull request")
    with forge.lock:
        pull = None
        if is_pull_request:
            head_sha = fake_sha(full_name, "pull", number)
            pull = PullRecord(
                forge.new_id(), head_sha, f"patch-{number}", "main", timestamp(merged_at)
            )
        forge.store_issue(
            full_name,
            number,
            title,
            body,
            labels=labels,
            assignees=assignees,
            user=user,
            state=state,
            created_at=created_at,
            updated_at=updated_at,
            closed_at=closed_at,
            author_association=author_association,
            is_pull_request=is_pull_request,
            pull=pull,
        )


def add_comment_directly(
    forge: ForgeState,
    full_name: str,
    number: int,
    body: str,
    user: str = "octocat",
    *,
    author_association: str = "NONE",
    created_at: Timestamp = None,
) -> dict[str, Any]:
    """Seed an existing comment without going through HTTP (not counted as a write).

    Leaves the issue's ``updated_at`` alone, so seeded timestamps stay as given.
    """
    with forge.lock:
        issue = forge.issue(full_name, number)
        return forge.store_comment(
            issue,
            full_name,
            body,
            user,
            author_association=author_association,
            created_at=timestamp(created_at),
        )


def comments(forge: ForgeState, full_name: str, number: int) -> list[dict[str, Any]]:
    with forge.lock:
        return [dict(c) for c in forge.issue(full_name, number).comments]


def issues(forge: ForgeState, full_name: str) -> list[dict[str, Any]]:
    """Every issue and pull request of the repository as GitHub's JSON, by number."""
    with forge.lock:
        records = sorted(forge.repo(full_name).issues.values(), key=lambda i: i.number)
        return [forge.issue_payload(full_name, issue) for issue in records]


# --- routes (lock held) --------------------------------------------------------------------


def get_issue(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    issue = forge.issue(full_name, int(number))
    return Reply(200, forge.issue_payload(full_name, issue), headers={"ETag": etag(issue)})


def create_issue(forge: ForgeState, request: FakeRequest) -> Reply:
    (full_name,) = request.params
    assert request.login is not None  # the dispatcher answers 401 first
    repo = forge.repo(full_name)
    new = payloads.new_issue(payloads.json_body(request.body))
    pusher = forge.can_push(repo, request.login)
    issue = forge.store_issue(
        full_name,
        forge.next_number(repo),
        new.title,
        new.body,
        user=request.login,
        labels=new.labels if pusher else (),
        assignees=[a for a in new.assignees if forge.can_push(repo, a)] if pusher else (),
        author_association=forge.association(repo, request.login),
    )
    payload = forge.issue_payload(full_name, issue)
    return Reply(201, payload, headers={"Location": payload["url"]})


def list_issues(forge: ForgeState, request: FakeRequest) -> Reply:
    (full_name,) = request.params
    query = request.args
    sort = query.get("sort", "created")
    direction = query.get("direction", "desc")
    wanted = _filters(query)
    records = [i for i in forge.repo(full_name).issues.values() if all(f(i) for f in wanted)]
    records.sort(key=_sort_key(sort), reverse=direction == "desc")
    return forge.paged(request, [forge.issue_payload(full_name, i) for i in records])


def list_comments(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    return forge.paged(request, forge.issue(full_name, int(number)).comments)


def create_comment(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    assert request.login is not None  # the dispatcher answers 401 first
    issue = forge.issue(full_name, int(number))
    body = payloads.comment_body(payloads.json_body(request.body))
    stored = forge.store_comment(issue, full_name, body, request.login)
    issue.updated_at = max(issue.updated_at, stored["created_at"])
    return Reply(201, stored, headers={"Location": stored["url"]})


ROUTES: list[Route[ForgeState]] = [
    route("GET", rf"{REPO}/issues/(\d+)/comments", list_comments),
    route("POST", rf"{REPO}/issues/(\d+)/comments", create_comment),
    route("GET", rf"{REPO}/issues/(\d+)", get_issue),
    route("GET", rf"{REPO}/issues", list_issues),
    route("POST", rf"{REPO}/issues", create_issue),
]


# --- list filters and orderings ------------------------------------------------------------

IssueTest = Callable[[IssueRecord], bool]


def _filters(query: dict[str, str]) -> list[IssueTest]:
    """The tests an issue must pass to be listed; a malformed parameter is GitHub's 422."""
    state = query.get("state", "open")
    for name, value, allowed in (
        ("state", state, ("open", "closed", "all")),
        ("sort", query.get("sort", "created"), ISSUE_SORTS),
        ("direction", query.get("direction", "desc"), ("asc", "desc")),
    ):
        if value not in allowed:
            raise payloads.Rejected(422, payloads.validation_failed("Issue", name, "invalid"))
    tests: list[IssueTest] = [lambda i: state in ("all", i.state)]
    since = query.get("since")
    if since is not None:
        if not _ISO_8601.match(since):  # e.g. str(datetime), with a space for the "T"
            raise payloads.Rejected(422, payloads.error(SINCE_FORMAT_MESSAGE, status=422))
        tests.append(lambda i: _moment(i.updated_at) >= _moment(since))
    labels = [name.strip().lower() for name in query.get("labels", "").split(",") if name]
    tests.append(lambda i: all(name in i.labels for name in labels))
    if "creator" in query:
        tests.append(lambda i: i.user == query["creator"])
    assignee = query.get("assignee", "*")
    if assignee == "none":
        tests.append(lambda i: not i.assignees)
    elif assignee != "*":
        tests.append(lambda i: assignee in i.assignees)
    return tests


def _moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _sort_key(sort: str) -> Callable[[IssueRecord], tuple[Any, int]]:
    """GitHub's issue orderings; the number breaks ties so pages never overlap."""
    if sort == "updated":
        return lambda issue: (_moment(issue.updated_at), issue.number)
    if sort == "comments":
        return lambda issue: (len(issue.comments), issue.number)
    return lambda issue: (_moment(issue.created_at), issue.number)
