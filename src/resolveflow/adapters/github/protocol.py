"""The GitHub protocol the rest of ResolveFlow depends on.

Implementations: ``adapters.github.client.GitHubKitClient`` (real HTTP through githubkit) and, for
tests, the same client pointed at ``sandbox.forge.server.FakeGitHubServer`` on loopback.

Error contract for every method (the classes are in ``resolveflow.errors``):

- ``ProviderRateLimited``: 403/429 carrying rate-limit headers; nothing was written. Carries the wait.
- ``ProviderRejected``: any other definite 4xx; nothing was written. Carries the status.
- ``ProviderOutcomeUnknown``: timeout after the request was sent, 5xx, connection lost after sending,
  or a 2xx whose body is malformed. A write may have happened.
- ``ProviderUnavailable``: the request could not be sent at all (connection refused, DNS failure).
- ``InvalidInput``: the arguments are unusable (a path-like repository name, an empty body, an
  issue title over GitHub's limit); raised before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from resolveflow.adapters.base import writes

# One request, from its first byte to its last, ends within this many timeouts: httpx applies
# the timeout to each socket operation, so without a deadline a response trickled byte by byte
# could outlast any lease. The executor's attempt deadline allows for it (``lease.GateSettings``).
DEADLINE_TIMEOUTS = 4


@dataclass(frozen=True)
class RepoName:
    owner: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @classmethod
    def parse(cls, full_name: str) -> RepoName:
        owner, _, name = full_name.partition("/")
        return cls(owner=owner, name=name)


@dataclass(frozen=True)
class PostedComment:
    id: int
    url: str
    body: str
    created_at: datetime | None = None  # as GitHub stored it


@dataclass(frozen=True)
class IssueComment:
    id: int
    body: str
    author: str
    url: str
    author_association: str = "NONE"
    created_at: datetime | None = None


@dataclass(frozen=True)
class IssueData:
    """An issue or pull request as ``GET /repos/{o}/{r}/issues/{n}`` describes it."""

    number: int
    title: str
    body: str  # "" when GitHub says null
    state: str  # open | closed
    author: str
    author_association: str
    labels: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    is_pull_request: bool
    url: str  # html_url
    merged_at: datetime | None = None  # pull requests only (from the issue's pull_request field)
    assignees: tuple[str, ...] = ()  # logins
    state_reason: str | None = None  # completed | not_planned | duplicate | reopened | None
    closed_by: str | None = None  # login, when GitHub says
    issue_id: int | None = None  # GitHub's id of the issue (not its number)


@dataclass(frozen=True)
class Reaction:
    """One reaction on an issue or a comment (``GET .../reactions``)."""

    id: int
    content: str  # +1 | -1 | laugh | confused | heart | hooray | rocket | eyes
    user: str  # login; "ghost" when the account is gone
    created_at: datetime


@dataclass(frozen=True)
class CreatedIssue:
    """An issue as GitHub stored it on creation."""

    number: int
    url: str  # html_url
    body: str  # as GitHub stored it ("" when null)
    author: str  # user.login
    labels: tuple[str, ...]
    assignees: tuple[str, ...]


@dataclass(frozen=True)
class IssuePage:
    items: list[IssueData]
    has_next: bool


@dataclass(frozen=True)
class IssueEvent:
    """One entry of an issue's history (``GET /repos/{o}/{r}/issues/{n}/events``).

    Labels carry no marker, so this is how to learn who put a label on an issue, and when.
    """

    id: int
    event: str  # labeled | unlabeled | closed | reopened | assigned | ... (GitHub's event name)
    actor: str  # login of who did it; "ghost" when the account is gone
    label: str | None  # the label's name, for labeled and unlabeled; None for other events
    created_at: datetime


@dataclass(frozen=True)
class CheckRunData:
    """A check run, or a workflow run described the same way (``kind`` tells which)."""

    id: int
    name: str
    status: str  # queued | in_progress | completed | ...
    conclusion: str | None  # success | failure | timed_out | cancelled | ... | None while running
    url: str  # html_url (falls back to details_url)
    summary: str | None  # check run output title/summary; workflow run display title
    head_sha: str | None = None
    kind: Literal["check_run", "workflow_run"] = "check_run"


@dataclass(frozen=True)
class RepositoryFile:
    """One file of the default branch as the contents API gives it: its blob sha (git's hash of
    the content, so an unchanged file keeps it) and its bytes, base64-decoded."""

    path: str
    sha: str
    content: bytes


@dataclass(frozen=True)
class IntentNote:
    """Why a label or a close, and how sure (``LOW``/``MEDIUM``/``HIGH``)."""

    rationale: str
    confidence: str


@dataclass(frozen=True)
class LabelWrite:
    """One label of a whole-set write: its name, and (only for the labels this write proposes)
    why and how sure; ``suggest``: stored as a pending suggestion a maintainer accepts or
    dismisses in GitHub, not applied."""

    name: str
    note: IntentNote | None = None
    suggest: bool = False


@dataclass(frozen=True)
class IssueLabels:
    """The labels on an issue as one read saw them, with the answer's ``ETag`` (a write may
    send it as ``If-Match``: a forge that honours it refuses the write once the issue changed)."""

    labels: tuple[str, ...]
    etag: str | None


@dataclass(frozen=True)
class IssueSuggestionData:
    """One suggestion on an issue (``GET /repos/{o}/{r}/issues/{n}/suggestions``): an agent's
    proposed change a maintainer approves or dismisses in GitHub."""

    id: int
    action: str  # add_label | close_issue | set_type | add_field | add_assignee
    state: str  # pending | applied | approved | dismissed | replaced | invalidated
    target_value: str | None  # the label's name, for add_label
    resolved_by: int | None  # the user id of who approved or dismissed it
    created_at: datetime
    updated_at: datetime


class GitHub(Protocol):
    """What ResolveFlow needs from GitHub. ``token`` overrides the service token for one call."""

    def list_issue_comments(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueComment]:
        """Every comment on the issue, following all pages."""
        ...

    def list_repository_labels(self, repo: RepoName, *, token: str | None = None) -> list[str]:
        """Names of every label defined in the repository, following all pages."""
        ...

    def list_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[str]:
        """Names of the labels currently on the issue."""
        ...

    def list_issue_events(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueEvent]:
        """Every event of the issue, oldest first, following all pages.

        Events of every kind are returned (``labeled``/``unlabeled`` always name their label).
        """
        ...

    def authenticated_login(self, *, token: str | None = None) -> str:
        """The GitHub login that ``token`` (or the service token) acts as."""
        ...

    def get_issue(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> IssueData:
        """One issue or pull request (``GET /repos/{o}/{r}/issues/{n}``)."""
        ...

    def pull_request_head_sha(
        self, repo: RepoName, number: int, *, token: str | None = None
    ) -> str:
        """The head commit of a pull request (``GET /repos/{o}/{r}/pulls/{n}``)."""
        ...

    def list_check_runs_for_ref(
        self, repo: RepoName, ref: str, *, token: str | None = None
    ) -> list[CheckRunData]:
        """Every check run of a commit, all pages (``GET .../commits/{ref}/check-runs``)."""
        ...

    def get_check_run(
        self, repo: RepoName, check_run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        """``GET /repos/{o}/{r}/check-runs/{id}``."""
        ...

    def get_workflow_run(
        self, repo: RepoName, run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        """``GET /repos/{o}/{r}/actions/runs/{id}``, as a CheckRunData of kind workflow_run."""
        ...

    def list_issues_page(
        self,
        repo: RepoName,
        *,
        state: str = "all",
        since: datetime | None = None,
        page: int = 1,
        per_page: int = 100,
        token: str | None = None,
    ) -> IssuePage:
        """One page of the repository's issues and pull requests, oldest update first.

        ``GET /repos/{o}/{r}/issues?state=&since=&sort=updated&direction=asc&per_page=&page=``;
        ``since`` filters on ``updated_at`` (GitHub's semantics), so an interrupted crawl resumes
        from the last ``updated_at`` it stored.
        """
        ...

    def list_issues_created_since(
        self, repo: RepoName, since: datetime, *, token: str | None = None
    ) -> list[IssueData]:
        """Issues (not pull requests) created at or after ``since``, newest first.

        ``GET /repos/{o}/{r}/issues?state=all&sort=created&direction=desc&since=<since>
        &per_page=100&page=N``, following every page; stops after the first page whose oldest
        item was created before ``since``. (``since`` filters on ``updated_at``, which is never
        earlier than ``created_at``, so it is a safe pre-filter.)
        """
        ...

    def list_issue_reactions(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[Reaction]:
        """Every reaction on the issue itself, all pages (``GET .../issues/{n}/reactions``)."""
        ...

    def get_repository_file(
        self, repo: RepoName, path: str, *, token: str | None = None
    ) -> RepositoryFile | None:
        """A file of the default branch (``GET /repos/{o}/{r}/contents/{path}``); ``None`` when
        GitHub answers 404 (no such file). A directory, a symlink or a submodule there is a
        ``ProviderError``: it is not a file to read."""
        ...

    def list_comment_reactions(
        self, repo: RepoName, comment_id: int, *, token: str | None = None
    ) -> list[Reaction]:
        """Every reaction on one issue comment, all pages
        (``GET .../issues/comments/{id}/reactions``)."""
        ...

    def read_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> IssueLabels:
        """The issue's labels and ``ETag`` (``GET /repos/{o}/{r}/issues/{n}``)."""
        ...

    def list_issue_suggestions(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueSuggestionData]:
        """Every suggestion on the issue, in every state (``GET .../issues/{n}/suggestions``
        with ``state=all``, all pages)."""
        ...

    @writes
    def close_issue_as_duplicate(
        self,
        repo: RepoName,
        issue_number: int,
        duplicate_of: int | None,
        *,
        note: IntentNote | None = None,
        suggest: bool = False,
        token: str | None = None,
    ) -> IssueData:
        """``PATCH /repos/{o}/{r}/issues/{n}`` with ``state: closed`` (the object form
        ``{"value": "closed", "rationale", "confidence", "suggest"}`` when ``note`` or ``suggest``
        is given; plain on a forge that refuses it), ``state_reason: duplicate`` and
        ``duplicate_issue_id`` (the original's id, when known). Never retried."""
        ...

    @writes
    def set_issue_labels(
        self,
        repo: RepoName,
        issue_number: int,
        labels: list[LabelWrite],
        *,
        if_match: str | None = None,
        token: str | None = None,
    ) -> list[str]:
        """``PATCH /repos/{o}/{r}/issues/{n}`` with ``labels``: REPLACES the issue's whole label
        set, so ``labels`` must hold every label the issue keeps. Labels with a note or
        ``suggest`` go in the object form (plain names on a forge that refuses it, once per
        write, then remembered for the host). ``if_match``: the ``ETag`` of the read the set
        was built from (412 ``ProviderRejected`` when a forge that honours it saw the issue
        change). Returns the issue's labels afterwards. Never retried."""
        ...

    @writes
    def create_issue(
        self,
        repo: RepoName,
        *,
        title: str,
        body: str,
        labels: list[str],
        assignees: list[str],
        token: str | None = None,
    ) -> CreatedIssue:
        """``POST /repos/{o}/{r}/issues``. Never retried inside the adapter."""
        ...

    @writes
    def post_comment(
        self, repo: RepoName, issue_number: int, body: str, *, token: str | None = None
    ) -> PostedComment:
        """Create one comment. Never retried inside the adapter."""
        ...

    @writes
    def add_labels(
        self, repo: RepoName, issue_number: int, labels: list[str], *, token: str | None = None
    ) -> list[str]:
        """Add labels to the issue; returns the issue's labels afterwards. Never retried inside."""
        ...
