"""The in-memory GitHub behind ``FakeGitHubServer``: repositories, issues, labels, comments.

``FakeGitHubState`` adds tokens and per-login rate-limit usage, the issue/comment/label seeding and
inspection methods tests call directly, and the REST routes the HTTP handler dispatches to. It
builds on ``FakeCiState`` (pull requests, check runs, workflow runs; ``github_fake_ci``) and
``FakeData`` (records, lock, look-ups; ``github_fake_model``). ``FakeGitHubServer`` (in
``github_fake``) extends it with the HTTP server, fault injection and request counters. One lock
guards everything: the public methods here take it, and the methods marked "lock held" expect the
caller to hold it.

Timestamps are stored, not invented per response: ``updated_at`` is set when an issue is seeded
and moves forward when a comment or label is added over HTTP (as on GitHub), so
``GET /repos/{o}/{r}/issues?since=`` crawls behave like the real thing. Seeding a comment directly
does not touch the issue's ``updated_at``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.ci import CI_ROUTES, FakeCiState, Timestamp
from resolveflow.sandbox.forge.model import (
    WRITE_METHODS,
    FakeReply,
    FakeRequest,
    IssueRecord,
    PullRecord,
    RepoRecord,
    fake_sha,
    timestamp,
)

__all__ = ["WRITE_METHODS", "FakeGitHubState", "FakeReply", "FakeRequest"]

RATE_LIMIT_WINDOW_SECONDS = 3600
ISSUE_SORTS = ("created", "updated", "comments")
# GitHub documents ``since`` as ``YYYY-MM-DDTHH:MM:SSZ``; an offset is accepted too.
_ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$"), "_list_comments"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$"), "_create_comment"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/labels$"), "_list_issue_labels"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/labels$"), "_add_labels"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)$"), "_get_issue"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues$"), "_list_issues"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/labels$"), "_list_repo_labels"),
    ("GET", re.compile(r"^/user$"), "_get_user"),
    *CI_ROUTES,
]


class FakeGitHubState(FakeCiState):
    """Repositories, issues, labels and comments in memory, plus the REST routes over them."""

    def __init__(self, *, default_login: str, rate_limit: int) -> None:
        super().__init__()  # the lock, repositories and id counter
        self._default_login = default_login
        self._rate_limit = rate_limit
        self._tokens: dict[str, str] = {}
        self._used: dict[str, int] = {}
        self._window_reset = int(time.time()) + RATE_LIMIT_WINDOW_SECONDS

    # --- seeding and inspection ------------------------------------------------------------

    def register_token(self, token: str, login: str) -> None:
        """Requests bearing ``token`` act as ``login`` (unknown tokens act as the default login)."""
        with self._lock:
            self._tokens[token] = login

    def add_repo(self, full_name: str, labels: Iterable[str] = ()) -> None:
        with self._lock:
            repo = self._repos.setdefault(full_name, RepoRecord(full_name))
            for name in labels:
                self._ensure_label(repo, name)

    def remove_repo_label(self, full_name: str, name: str) -> None:
        """Delete a label from the repository and from every issue carrying it."""
        with self._lock:
            repo = self._repo(full_name)
            repo.labels.pop(name.lower(), None)
            for issue in repo.issues.values():
                issue.labels = [key for key in issue.labels if key != name.lower()]

    def add_issue(
        self,
        full_name: str,
        number: int,
        title: str = "",
        body: str = "",
        *,
        labels: Iterable[str] = (),
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
        applies to pull requests only.
        """
        if merged_at is not None and not is_pull_request:
            raise ValueError("merged_at is only meaningful for a pull request")
        with self._lock:
            pull = None
            if is_pull_request:
                head_sha = fake_sha(full_name, "pull", number)
                pull = PullRecord(
                    self._new_id(), head_sha, f"patch-{number}", "main", timestamp(merged_at)
                )
            self._store_issue(
                full_name,
                number,
                title,
                body,
                labels=labels,
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
        self,
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
        with self._lock:
            issue = self._issue(full_name, number)
            return self._store_comment(
                issue,
                full_name,
                body,
                user,
                author_association=author_association,
                created_at=timestamp(created_at),
            )

    def comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._issue(full_name, number).comments]

    def issue_labels(self, full_name: str, number: int) -> list[str]:
        with self._lock:
            repo = self._repo(full_name)
            return [repo.labels[key].name for key in self._issue(full_name, number).labels]

    def repo_labels(self, full_name: str) -> list[str]:
        with self._lock:
            return [lab.name for lab in self._repo(full_name).labels.values()]

    # --- accounts and rate limits ----------------------------------------------------------

    def _rate_headers(self, login: str | None) -> dict[str, str]:
        with self._lock:
            now = int(time.time())
            if now >= self._window_reset:
                self._used.clear()
                self._window_reset = now + RATE_LIMIT_WINDOW_SECONDS
            key = login or ""
            used = self._used[key] = self._used.get(key, 0) + 1
            return {
                "x-ratelimit-limit": str(self._rate_limit),
                "x-ratelimit-remaining": str(max(0, self._rate_limit - used)),
                "x-ratelimit-reset": str(self._window_reset),
                "x-ratelimit-used": str(used),
                "x-ratelimit-resource": "core",
            }

    def _login_for(self, authorization: str | None) -> str | None:
        """Who a request acts as (lock held); ``None`` when it carries no usable token."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() not in ("token", "bearer") or not token.strip():
            return None
        return self._tokens.get(token.strip(), self._default_login)

    # --- routes (called with the lock held) ------------------------------------------------

    def _route(self, request: FakeRequest) -> FakeReply:
        for method, pattern, handler_name in _ROUTES:
            match = pattern.match(request.path)
            if match and method == request.method:
                handler: Callable[..., FakeReply] = getattr(self, handler_name)
                try:
                    return handler(request, *(unquote(g) for g in match.groups()))
                except payloads.Rejected as exc:
                    return FakeReply(exc.status, exc.payload)
        return FakeReply(404, payloads.not_found())

    def _list_comments(self, request: FakeRequest, full_name: str, number: str) -> FakeReply:
        return self._paged(request, self._issue(full_name, int(number)).comments)

    def _create_comment(self, request: FakeRequest, full_name: str, number: str) -> FakeReply:
        issue = self._issue(full_name, int(number))
        body = payloads.comment_body(payloads.json_body(request.body))
        assert request.login is not None
        stored = self._store_comment(issue, full_name, body, request.login)
        issue.updated_at = max(issue.updated_at, stored["created_at"])
        return FakeReply(201, stored, headers={"Location": stored["url"]})

    def _list_issue_labels(self, request: FakeRequest, full_name: str, number: str) -> FakeReply:
        issue = self._issue(full_name, int(number))
        return self._paged(request, self._label_payloads(full_name, issue.labels))

    def _add_labels(self, request: FakeRequest, full_name: str, number: str) -> FakeReply:
        issue = self._issue(full_name, int(number))
        names = payloads.label_names(payloads.json_body(request.body))
        repo = self._repo(full_name)
        for name in names:  # GitHub creates labels that do not exist yet
            key = self._ensure_label(repo, name).name.lower()
            if key not in issue.labels:
                issue.labels.append(key)
                issue.updated_at = max(issue.updated_at, payloads.now_iso())
        return FakeReply(200, self._label_payloads(full_name, issue.labels))

    def _get_issue(self, request: FakeRequest, full_name: str, number: str) -> FakeReply:
        issue = self._issue(full_name, int(number))
        return FakeReply(200, self._issue_payload(full_name, issue))

    def _list_issues(self, request: FakeRequest, full_name: str) -> FakeReply:
        """Issues and pull requests; ``state`` (default open), ``since`` (on ``updated_at``,
        inclusive), ``labels`` (all of them), ``sort`` (default created) and ``direction``
        (default desc), paginated with ``Link`` like every list."""
        query = {key: values[-1] for key, values in request.query.items()}
        state = query.get("state", "open")
        sort = query.get("sort", "created")
        direction = query.get("direction", "desc")
        since = query.get("since")
        for name, value, allowed in (
            ("state", state, ("open", "closed", "all")),
            ("sort", sort, ISSUE_SORTS),
            ("direction", direction, ("asc", "desc")),
        ):
            if value not in allowed:
                raise payloads.Rejected(422, payloads.validation_failed("Issue", name, "invalid"))
        if since is not None and not _ISO_8601.match(since):
            raise payloads.Rejected(422, payloads.validation_failed("Issue", "since", "invalid"))
        wanted = [name.strip().lower() for name in query.get("labels", "").split(",") if name]
        issues = [
            issue
            for issue in self._repo(full_name).issues.values()
            if state in ("all", issue.state)
            and (since is None or _moment(issue.updated_at) >= _moment(since))
            and all(name in issue.labels for name in wanted)
        ]
        issues.sort(key=_sort_key(sort), reverse=direction == "desc")
        return self._paged(request, [self._issue_payload(full_name, i) for i in issues])

    def _list_repo_labels(self, request: FakeRequest, full_name: str) -> FakeReply:
        keys = list(self._repo(full_name).labels)
        return self._paged(request, self._label_payloads(full_name, keys))

    def _get_user(self, request: FakeRequest) -> FakeReply:
        assert request.login is not None
        return FakeReply(200, payloads.private_user(self.url, self.url, request.login))

    # --- helpers (lock held) ---------------------------------------------------------------

    def _store_comment(
        self,
        issue: IssueRecord,
        full_name: str,
        body: str,
        login: str,
        *,
        author_association: str = "NONE",
        created_at: str | None = None,
    ) -> dict[str, Any]:
        user = payloads.simple_user(self.url, self.url, login)
        stored = payloads.comment(
            self.url,
            self.url,
            full_name,
            number=issue.number,
            comment_id=self._new_id(),
            body=body,
            user=user,
            author_association=author_association,
            created_at=created_at,
        )
        issue.comments.append(stored)
        return stored


def _moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _sort_key(sort: str) -> Callable[[IssueRecord], tuple[Any, int]]:
    """GitHub's issue orderings; the number breaks ties so pages never overlap."""
    if sort == "updated":
        return lambda issue: (_moment(issue.updated_at), issue.number)
    if sort == "comments":
        return lambda issue: (len(issue.comments), issue.number)
    return lambda issue: (_moment(issue.created_at), issue.number)
