"""The forge's records: plain dataclasses for repositories, issues, pull requests and CI runs,
the parsed request the routes see, and the seeding helpers for timestamps, shas and enum values.

Nothing here locks or does I/O; ``state.ForgeState`` holds these records behind its lock.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Timestamp = str | datetime | None  # what seeding accepts: ISO 8601 text, a datetime, or "now"

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
class EventRecord:
    """One entry of an issue's history: who did ``event`` when, and to which label (if any).

    ``label`` and ``label_color`` are kept as they were at the time, as GitHub does: renaming or
    deleting the label later does not rewrite its events.
    """

    id: int
    event: str  # one of EVENT_KINDS
    actor: str  # login
    created_at: str
    label: str | None = None
    label_color: str | None = None
    rename: tuple[str, str] | None = None  # renamed: the title (from, to)
    state_reason: str | None = None  # closed: as the close said (completed, duplicate, ...)


EVENT_KINDS = frozenset({"labeled", "unlabeled", "closed", "reopened", "renamed"})


@dataclass
class ReactionRecord:
    id: int
    content: str  # one of REACTIONS
    user: str
    created_at: str


REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


@dataclass
class IssueRecord:
    id: int
    number: int
    title: str
    body: str | None  # None when an issue is created without one, as on GitHub
    state: str
    user: str
    is_pull_request: bool
    created_at: str
    updated_at: str = ""
    closed_at: str | None = None
    author_association: str = "CONTRIBUTOR"
    pull: PullRecord | None = None  # set by add_pull_request; plain is_pull_request has none
    labels: list[str] = field(default_factory=list)  # lower-cased keys into RepoRecord.labels
    assignees: list[str] = field(default_factory=list)  # logins
    comments: list[dict[str, Any]] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)  # in the order they were recorded
    state_reason: str | None = None  # as the last close or reopen said; None: GitHub's default
    closed_by: str | None = None  # login of who closed it last
    reactions: list[ReactionRecord] = field(default_factory=list)  # on the issue itself
    # on its comments, by comment id
    comment_reactions: dict[int, list[ReactionRecord]] = field(default_factory=dict)
    # the rationale and confidence a label was last applied with, by lower-cased name
    label_intents: dict[str, tuple[str, str | None]] = field(default_factory=dict)

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
    pushers: set[str] = field(default_factory=set)  # logins with push access to this repo only
    files: dict[str, bytes] = field(default_factory=dict)  # the default branch: path -> content


@dataclass
class FakeRequest:
    """One parsed HTTP request, as the routes and the write counters see it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    login: str | None
    logged: bool = False  # a write is logged once, whatever happens to it afterwards
    params: tuple[str, ...] = ()  # the route pattern's groups, URL-decoded
    if_match: str | None = None  # the If-Match header, when sent

    @property
    def args(self) -> dict[str, str]:
        """The query string's last value per name (GitHub ignores repeats the same way)."""
        return {key: values[-1] for key, values in self.query.items()}

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS


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
