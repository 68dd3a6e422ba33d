"""The forge's state: every repository, token and id in memory, behind one lock.

``ForgeState`` is plain data plus the small operations every route and seeding function shares:
look-ups that 404 like GitHub, the id and issue-number counters, who may push, storing an issue
or comment, putting labels on and off an issue with the event that records it, and turning records
into GitHub's JSON. Its methods expect the caller to hold
``lock``; the seeding functions (``issues``, ``repos``, ``ci``) take it, and the route table
(``routing.bind``) takes it around every handler.

Push access: ``maintainers`` may push to every repository (the server's default login is one, so
the tests' service token can set labels and assignees on the issues it creates); a repository's
``pushers`` may push to it alone. Without push access, GitHub silently drops the labels and
assignees of a new issue, and a login can be assigned only where it may push.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.model import (
    AUTHOR_ASSOCIATIONS,
    EVENT_KINDS,
    EventRecord,
    FakeRequest,
    IssueRecord,
    LabelRecord,
    PullRecord,
    RepoRecord,
    Timestamp,
    check_choice,
    timestamp,
)
from resolveflow.sandbox.loopback import Reply


@dataclass(eq=False)
class ForgeState:
    """Repositories, tokens and counters (see the module docstring); hold ``lock`` to use it."""

    default_login: str  # who a request with an unregistered token acts as
    lock: threading.Lock = field(default_factory=threading.Lock)
    repos: dict[str, RepoRecord] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)  # token -> login
    maintainers: set[str] = field(default_factory=set)  # push access to every repository
    last_id: int = 1_000_001
    base_url: str | None = None  # set when the server binds; every URL in a payload uses it
    # the object form of the issue update and suggestions (``suggestions.py``)
    refuse_object_form: bool = False
    honour_if_match: bool = False
    suggestions: list[Any] = field(default_factory=list)  # suggestions.SuggestionRecord

    def __post_init__(self) -> None:
        self.maintainers.add(self.default_login)

    @property
    def url(self) -> str:
        """Base URL such as ``http://127.0.0.1:54321`` (no trailing slash)."""
        if self.base_url is None:
            raise RuntimeError("FakeGitHubServer was never started; call start() first")
        return self.base_url

    # --- counters and look-ups -------------------------------------------------------------

    def new_id(self) -> int:
        self.last_id += 1
        return self.last_id

    def repo(self, full_name: str) -> RepoRecord:
        repo = self.repos.get(full_name)
        if repo is None:
            raise payloads.Rejected(404, payloads.not_found())
        return repo

    def issue(self, full_name: str, number: int) -> IssueRecord:
        issue = self.repo(full_name).issues.get(number)
        if issue is None:
            raise payloads.Rejected(404, payloads.not_found())
        return issue

    def next_number(self, repo: RepoRecord) -> int:
        """The number a new issue gets: issues and pull requests share one sequence."""
        return max(repo.issues, default=0) + 1

    # --- accounts --------------------------------------------------------------------------

    def login_for(self, authorization: str | None) -> str | None:
        """Who a request acts as; ``None`` when it carries no usable token."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() not in ("token", "bearer") or not token.strip():
            return None
        return self.tokens.get(token.strip(), self.default_login)

    def can_push(self, repo: RepoRecord, login: str | None) -> bool:
        return login is not None and (login in self.maintainers or login in repo.pushers)

    def association(self, repo: RepoRecord, login: str) -> str:
        """``author_association`` of a new issue's author, as GitHub derives it."""
        if login == repo.full_name.partition("/")[0]:
            return "OWNER"
        return "COLLABORATOR" if self.can_push(repo, login) else "NONE"

    # --- storing ---------------------------------------------------------------------------

    def ensure_label(self, repo: RepoRecord, name: str) -> LabelRecord:
        """The label called ``name`` (any case), created the way GitHub does if it is new."""
        existing = repo.labels.get(name.lower())
        if existing is None:
            existing = LabelRecord(self.new_id(), name, payloads.NEW_LABEL_COLOR, None)
            repo.labels[name.lower()] = existing
        return existing

    def store_issue(
        self,
        full_name: str,
        number: int,
        title: str,
        body: str | None,
        *,
        user: str,
        labels: Iterable[str] = (),
        assignees: Iterable[str] = (),
        state: str = "open",
        created_at: Timestamp = None,
        updated_at: Timestamp = None,
        closed_at: Timestamp = None,
        author_association: str = "CONTRIBUTOR",
        pull: PullRecord | None = None,
        is_pull_request: bool = False,
    ) -> IssueRecord:
        """Create or replace issue ``number``; unknown labels are created in the repo."""
        check_choice("state", state, frozenset({"open", "closed"}))
        check_choice("author_association", author_association, AUTHOR_ASSOCIATIONS)
        repo = self.repos.setdefault(full_name, RepoRecord(full_name))
        now = payloads.now_iso()
        created = timestamp(created_at, now) or now
        closed = timestamp(closed_at, now if state == "closed" else None)
        issue = IssueRecord(
            self.new_id(),
            number,
            title,
            body,
            state,
            user,
            is_pull_request or pull is not None,
            created,
            updated_at=timestamp(updated_at, max(now, created, closed or created)) or now,
            closed_at=closed,
            author_association=author_association,
            pull=pull,
        )
        for name in labels:  # each label arrives with its author, at creation, as on GitHub
            self.label_issue(repo, issue, name, user, created)
        issue.assignees = list(dict.fromkeys(assignees))
        repo.issues[number] = issue
        if pull is not None:
            repo.commits.add(pull.head_sha)
        return issue

    def record_event(
        self,
        issue: IssueRecord,
        event: str,
        actor: str,
        created_at: str,
        label: LabelRecord | None = None,
        *,
        rename: tuple[str, str] | None = None,
        state_reason: str | None = None,
    ) -> EventRecord:
        """Append one event to the issue's history; ids only grow (one counter for all ids)."""
        check_choice("event", event, EVENT_KINDS)
        if (label is None) == (event in ("labeled", "unlabeled")):
            raise ValueError(f"a {event!r} event {'needs' if label is None else 'takes no'} label")
        record = EventRecord(
            self.new_id(),
            event,
            actor,
            created_at,
            label.name if label is not None else None,
            label.color if label is not None else None,
            rename=rename,
            state_reason=state_reason,
        )
        issue.events.append(record)
        return record

    def label_issue(
        self, repo: RepoRecord, issue: IssueRecord, name: str, actor: str, at: str
    ) -> bool:
        """Put label ``name`` on the issue (creating it in the repository if it is new) and
        record ``labeled``; ``False``, with no event, when the issue already carries it."""
        label = self.ensure_label(repo, name)
        if label.name.lower() in issue.labels:
            return False
        issue.labels.append(label.name.lower())
        self.record_event(issue, "labeled", actor, at, label)
        return True

    def unlabel_issue(
        self, repo: RepoRecord, issue: IssueRecord, name: str, actor: str, at: str
    ) -> bool:
        """Take label ``name`` off the issue and record ``unlabeled``; ``False`` if absent."""
        label = repo.labels.get(name.lower())
        if label is None or label.name.lower() not in issue.labels:
            return False
        issue.labels.remove(label.name.lower())
        self.record_event(issue, "unlabeled", actor, at, label)
        return True

    def store_comment(
        self,
        issue: IssueRecord,
        full_name: str,
        body: str,
        login: str,
        *,
        author_association: str = "NONE",
        created_at: str | None = None,
    ) -> dict[str, Any]:
        stored = payloads.comment(
            self.url,
            self.url,
            full_name,
            number=issue.number,
            comment_id=self.new_id(),
            body=body,
            user=payloads.simple_user(self.url, self.url, login),
            author_association=author_association,
            created_at=created_at,
        )
        issue.comments.append(stored)
        return stored

    # --- GitHub's JSON ---------------------------------------------------------------------

    def label_payloads(self, full_name: str, keys: list[str]) -> list[dict[str, Any]]:
        labels = self.repo(full_name).labels
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

    def issue_payload(self, full_name: str, issue: IssueRecord) -> dict[str, Any]:
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
            labels=self.label_payloads(full_name, issue.labels),
            assignees=[payloads.simple_user(self.url, self.url, a) for a in issue.assignees],
            comment_count=len(issue.comments),
            is_pull_request=issue.is_pull_request,
            created_at=issue.created_at,
            updated_at=issue.updated_at,
            closed_at=issue.closed_at,
            author_association=issue.author_association,
            merged_at=issue.merged_at,
            state_reason=issue.state_reason,
            closed_by=(
                payloads.simple_user(self.url, self.url, issue.closed_by)
                if issue.closed_by
                else None
            ),
        )

    def paged(self, request: FakeRequest, items: list[dict[str, Any]]) -> Reply:
        """One page of ``items`` per ``per_page``/``page``, with GitHub's ``Link`` header."""
        page, link = payloads.paginate(
            items, base_url=self.url, path=request.path, query=request.query
        )
        return Reply(200, page, headers={"Link": link} if link else {})
