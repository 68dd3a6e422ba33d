"""The in-memory GitHub behind ``FakeGitHubServer``: repositories, issues, labels, comments.

``FakeGitHubState`` holds the data (plus tokens and per-login rate-limit usage), the seeding and
inspection methods tests call directly, and the REST routes the HTTP handler dispatches to.
``FakeGitHubServer`` (in ``github_fake``) extends it with the HTTP server, fault injection and
request counters. One lock guards everything: the public methods here take it, and the methods
marked "lock held" expect the caller to hold it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from resolveflow.adapters import github_fake_payloads as payloads

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
RATE_LIMIT_WINDOW_SECONDS = 3600


@dataclass
class _Label:
    id: int
    name: str
    color: str
    description: str | None


@dataclass
class _Issue:
    id: int
    number: int
    title: str
    body: str
    state: str
    user: str
    is_pull_request: bool
    created_at: str
    labels: list[str] = field(default_factory=list)  # lower-cased keys into _Repo.labels
    comments: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Repo:
    full_name: str
    labels: dict[str, _Label] = field(default_factory=dict)  # key: lower-cased name
    issues: dict[int, _Issue] = field(default_factory=dict)


@dataclass
class FakeRequest:
    """One parsed HTTP request, as the routes and the write counters see it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    login: str | None
    logged: bool = False

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS


@dataclass
class FakeReply:
    """What to answer: a JSON ``payload`` or ``raw`` bytes, plus extra headers."""

    status: int
    payload: Any = None
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        return self.raw if self.raw is not None else json.dumps(self.payload).encode()


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$"), "_list_comments"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$"), "_create_comment"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/labels$"), "_list_issue_labels"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/labels$"), "_add_labels"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)$"), "_get_issue"),
    ("GET", re.compile(r"^/repos/([^/]+/[^/]+)/labels$"), "_list_repo_labels"),
    ("GET", re.compile(r"^/user$"), "_get_user"),
]


class FakeGitHubState:
    """Repositories, issues, labels and comments in memory, plus the REST routes over them."""

    def __init__(self, *, default_login: str, rate_limit: int) -> None:
        self._default_login = default_login
        self._rate_limit = rate_limit
        self._lock = threading.Lock()
        self._repos: dict[str, _Repo] = {}
        self._tokens: dict[str, str] = {}
        self._next_id = 1_000_001
        self._used: dict[str, int] = {}
        self._window_reset = int(time.time()) + RATE_LIMIT_WINDOW_SECONDS
        self._url: str | None = None

    @property
    def url(self) -> str:
        """Base URL such as ``http://127.0.0.1:54321`` (no trailing slash)."""
        if self._url is None:
            raise RuntimeError("FakeGitHubServer was never started; call start() first")
        return self._url

    # --- seeding and inspection ------------------------------------------------------------

    def register_token(self, token: str, login: str) -> None:
        """Requests bearing ``token`` act as ``login`` (unknown tokens act as the default login)."""
        with self._lock:
            self._tokens[token] = login

    def add_repo(self, full_name: str, labels: Iterable[str] = ()) -> None:
        with self._lock:
            repo = self._repos.setdefault(full_name, _Repo(full_name))
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
    ) -> None:
        """Seed an issue (or pull request); unknown labels are created in the repo."""
        with self._lock:
            repo = self._repos.setdefault(full_name, _Repo(full_name))
            created_at = payloads.now_iso()
            issue = _Issue(
                self._new_id(), number, title, body, state, user, is_pull_request, created_at
            )
            issue.labels = [self._ensure_label(repo, name).name.lower() for name in labels]
            repo.issues[number] = issue

    def add_comment_directly(
        self, full_name: str, number: int, body: str, user: str = "octocat"
    ) -> dict[str, Any]:
        """Seed an existing comment without going through HTTP (not counted as a write)."""
        with self._lock:
            return self._store_comment(self._issue(full_name, number), full_name, body, user)

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
        return FakeReply(200, self._label_payloads(full_name, issue.labels))

    def _get_issue(self, request: FakeRequest, full_name: str, number: str) -> FakeReply:
        issue = self._issue(full_name, int(number))
        payload = payloads.issue(
            self.url,
            self.url,
            full_name,
            issue_id=issue.id,
            number=issue.number,
            title=issue.title,
            body=issue.body,
            state=issue.state,
            user=payloads.simple_user(self.url, self.url, issue.user),
            labels=self._label_payloads(full_name, issue.labels),
            comment_count=len(issue.comments),
            is_pull_request=issue.is_pull_request,
            created_at=issue.created_at,
        )
        return FakeReply(200, payload)

    def _list_repo_labels(self, request: FakeRequest, full_name: str) -> FakeReply:
        keys = list(self._repo(full_name).labels)
        return self._paged(request, self._label_payloads(full_name, keys))

    def _get_user(self, request: FakeRequest) -> FakeReply:
        assert request.login is not None
        return FakeReply(200, payloads.private_user(self.url, self.url, request.login))

    # --- helpers (lock held) ---------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _repo(self, full_name: str) -> _Repo:
        repo = self._repos.get(full_name)
        if repo is None:
            raise payloads.Rejected(404, payloads.not_found())
        return repo

    def _issue(self, full_name: str, number: int) -> _Issue:
        issue = self._repo(full_name).issues.get(number)
        if issue is None:
            raise payloads.Rejected(404, payloads.not_found())
        return issue

    def _ensure_label(self, repo: _Repo, name: str) -> _Label:
        existing = repo.labels.get(name.lower())
        if existing is None:
            existing = _Label(self._new_id(), name, payloads.NEW_LABEL_COLOR, None)
            repo.labels[name.lower()] = existing
        return existing

    def _label_payloads(self, full_name: str, keys: list[str]) -> list[dict[str, Any]]:
        labels = self._repo(full_name).labels
        return [
            payloads.label(
                self.url,
                full_name,
                label_id=lab.id,
                name=lab.name,
                color=lab.color,
                description=lab.description,
            )
            for lab in (labels[key] for key in keys if key in labels)
        ]

    def _store_comment(
        self, issue: _Issue, full_name: str, body: str, login: str
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
        )
        issue.comments.append(stored)
        return stored

    def _paged(self, request: FakeRequest, items: list[dict[str, Any]]) -> FakeReply:
        page, link = payloads.paginate(
            items, base_url=self.url, path=request.path, query=request.query
        )
        return FakeReply(200, page, headers={"Link": link} if link else {})
