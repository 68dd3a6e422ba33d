"""The records behind ``FakeGitHubServer`` and the base class that owns them.

``FakeData`` holds the lock, the repositories and the id counter, plus the helpers every route
needs (look-ups that 404 like GitHub, label payloads, pagination). The routes and seeding methods
are layered on top of it: CI objects in ``github_fake_ci``, issues, comments, labels and accounts
in ``github_fake_state``, HTTP and faults in ``github_fake``. Methods marked "lock held" expect the
caller to hold ``_lock``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from resolveflow.sandbox.forge import payloads

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

AUTHOR_ASSOCIATIONS = frozenset(
    {
        "COLLABORATOR",
        "CONTRIBUTOR",
        "FIRST_TIMER",
        "FIRST_TIME_CONTRIBUTOR",
        "MANNEQUIN",
        "MEMBER",
        "NONE",
        "OWNER",
    }
)


@dataclass
class LabelRecord:
    id: int
    name: str
    color: str
    description: str | None


@dataclass
class PullRecord:
    """What a pull request has beyond its issue: its own id, the branches and head commit."""

    id: int
    head_sha: str
    head_ref: str
    base_ref: str
    merged_at: str | None = None
    draft: bool = False


@dataclass
class IssueRecord:
    id: int
    number: int
    title: str
    body: str
    state: str
    user: str
    is_pull_request: bool
    created_at: str
    updated_at: str = ""
    closed_at: str | None = None
    author_association: str = "CONTRIBUTOR"
    pull: PullRecord | None = None  # set by add_pull_request; plain is_pull_request has none
    labels: list[str] = field(default_factory=list)  # lower-cased keys into RepoRecord.labels
    comments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def merged_at(self) -> str | None:
        return self.pull.merged_at if self.pull is not None else None


@dataclass
class CheckRunRecord:
    id: int
    head_sha: str
    name: str
    status: str
    conclusion: str | None
    title: str | None
    summary: str | None
    details_url: str | None
    started_at: str
    completed_at: str | None
    check_suite_id: int


@dataclass
class WorkflowRunRecord:
    id: int
    name: str
    head_sha: str
    head_branch: str
    status: str
    conclusion: str | None
    display_title: str
    event: str
    path: str
    run_number: int
    workflow_id: int
    created_at: str
    updated_at: str
    actor: str


@dataclass
class RepoRecord:
    full_name: str
    labels: dict[str, LabelRecord] = field(default_factory=dict)  # key: lower-cased name
    issues: dict[int, IssueRecord] = field(default_factory=dict)
    check_runs: dict[int, CheckRunRecord] = field(default_factory=dict)
    workflow_runs: dict[int, WorkflowRunRecord] = field(default_factory=dict)
    commits: set[str] = field(default_factory=set)  # every head sha seeded, for ref look-ups


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


def timestamp(value: str | datetime | None, default: str | None = None) -> str | None:
    """A seeding timestamp in GitHub's format (UTC, seconds, ``Z``); ``None`` gives ``default``.

    Accepts ISO 8601 strings (``Z`` or an offset; naive means UTC) and datetimes.
    """
    if value is None:
        return default
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fake_sha(*parts: object) -> str:
    """A stable 40-hex commit sha for seeded objects that were given none."""
    return hashlib.sha1("/".join(map(str, parts)).encode(), usedforsecurity=False).hexdigest()


def check_choice(name: str, value: str | None, allowed: frozenset[str]) -> None:
    """Seeding guard: refuse values GitHub's schema would reject, so payloads stay valid."""
    if value is not None and value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, not {value!r}")


class FakeData:
    """The lock, the repositories and the helpers every route uses (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._repos: dict[str, RepoRecord] = {}
        self._next_id = 1_000_001
        self._url: str | None = None

    @property
    def url(self) -> str:
        """Base URL such as ``http://127.0.0.1:54321`` (no trailing slash)."""
        if self._url is None:
            raise RuntimeError("FakeGitHubServer was never started; call start() first")
        return self._url

    # --- helpers (lock held) ---------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _repo(self, full_name: str) -> RepoRecord:
        repo = self._repos.get(full_name)
        if repo is None:
            raise payloads.Rejected(404, payloads.not_found())
        return repo

    def _issue(self, full_name: str, number: int) -> IssueRecord:
        issue = self._repo(full_name).issues.get(number)
        if issue is None:
            raise payloads.Rejected(404, payloads.not_found())
        return issue

    def _ensure_label(self, repo: RepoRecord, name: str) -> LabelRecord:
        existing = repo.labels.get(name.lower())
        if existing is None:
            existing = LabelRecord(self._new_id(), name, payloads.NEW_LABEL_COLOR, None)
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

    def _issue_payload(self, full_name: str, issue: IssueRecord) -> dict[str, Any]:
        return payloads.issue(
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
            updated_at=issue.updated_at,
            closed_at=issue.closed_at,
            author_association=issue.author_association,
            merged_at=issue.merged_at,
        )

    def _store_issue(
        self,
        full_name: str,
        number: int,
        title: str,
        body: str,
        *,
        labels: Iterable[str],
        user: str,
        state: str,
        created_at: str | datetime | None,
        updated_at: str | datetime | None,
        closed_at: str | datetime | None,
        author_association: str,
        is_pull_request: bool,
        pull: PullRecord | None = None,
    ) -> IssueRecord:
        """Create or replace issue ``number``; unknown labels are created in the repo."""
        check_choice("state", state, frozenset({"open", "closed"}))
        check_choice("author_association", author_association, AUTHOR_ASSOCIATIONS)
        repo = self._repos.setdefault(full_name, RepoRecord(full_name))
        now = payloads.now_iso()
        created = timestamp(created_at, now) or now
        closed = timestamp(closed_at, now if state == "closed" else None)
        issue = IssueRecord(
            self._new_id(),
            number,
            title,
            body,
            state,
            user,
            is_pull_request,
            created,
            updated_at=timestamp(updated_at, max(now, created, closed or created)) or now,
            closed_at=closed,
            author_association=author_association,
            pull=pull,
        )
        issue.labels = [self._ensure_label(repo, name).name.lower() for name in labels]
        repo.issues[number] = issue
        if pull is not None:
            repo.commits.add(pull.head_sha)
        return issue

    def _paged(self, request: FakeRequest, items: list[dict[str, Any]]) -> FakeReply:
        page, link = payloads.paginate(
            items, base_url=self.url, path=request.path, query=request.query
        )
        return FakeReply(200, page, headers={"Link": link} if link else {})
