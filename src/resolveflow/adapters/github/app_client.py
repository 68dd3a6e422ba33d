"""``AppGitHub``: the ``GitHub`` protocol with a GitHub App's installation tokens as the service
credential.

Every call names a repository; a call without a token of its own (no approver's token) goes out
with the installation token of the installation covering that repository, which the
``InstallationTokens`` source hands out (cached across processes and refreshed before it expires:
``accounts/github_app.py``). A call with a token (the approver who signed in) is passed through
unchanged: today's rule. ``authenticated_login()`` without a token is the App's bot,
``<slug>[bot]`` (an installation token may not call ``GET /user``), so posting and
reconciliation's author check name the bot.

A 401 on an installation token means GitHub wrote nothing (the token expired early or was
revoked): the token is dropped, one new one is minted and the request is sent once more. A second
401 is a clear error naming the installation.

An installation belongs to one tenant, so the App acts for one tenant at a time: ``acting_for``
gives the client bound to a tenant, and a call without a token of its own is refused
(``AppInstallationRefused``, before anything is sent) unless the installation covering the
repository is mapped to that tenant. The process-wide client, bound to none, is refused every such
call: a caller that forgot to say for whom it reads or writes fails closed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol, TypeVar
from uuid import UUID

from resolveflow.adapters.base import writes
from resolveflow.adapters.github.protocol import (
    CheckRunData,
    CreatedIssue,
    GitHub,
    IntentNote,
    IssueComment,
    IssueData,
    IssueEvent,
    IssueLabels,
    IssuePage,
    IssueSuggestionData,
    LabelWrite,
    PostedComment,
    Reaction,
    RepoName,
    RepositoryFile,
)
from resolveflow.errors import ProviderRejected

T = TypeVar("T")


class InstallationTokens(Protocol):
    """Where the App's installation tokens come from."""

    @property
    def bot_login(self) -> str:
        """``<slug>[bot]``: who an installation token writes as."""
        ...

    def installation_for(self, repo: RepoName, tenant_id: UUID | None) -> int:
        """The installation covering ``repo``; ``AppInstallationRefused`` unless it is mapped to
        ``tenant_id``."""
        ...

    def token_for(self, repo: RepoName, tenant_id: UUID | None) -> str:
        """A token of the installation covering ``repo``, with minutes left before it expires;
        refused as ``installation_for`` is."""
        ...

    def refused(self, repo: RepoName, token: str) -> None:
        """GitHub refused ``token``: drop it, so the next ``token_for`` mints a new one."""
        ...


def acting_for(github: GitHub, tenant_id: UUID) -> GitHub:
    """``github`` as it reads and writes for ``tenant_id``: the App's client bound to the tenant;
    any other client as it is (a service token is not the tenant's to lose)."""
    return github.for_tenant(tenant_id) if isinstance(github, AppGitHub) else github


def check_app_may_act(github: GitHub, tenant_id: UUID, repo: RepoName) -> None:
    """``AppInstallationRefused`` when ``github`` is the App's and would be refused in ``repo`` for
    ``tenant_id``: the executor asks before a write, so nothing is attempted."""
    if isinstance(github, AppGitHub):
        github.tokens.installation_for(repo, tenant_id)


class AppGitHub:
    """``GitHub`` over ``inner`` (a client without a service token of its own), acting for
    ``tenant_id`` (None: for no tenant, so refused every call without a token)."""

    def __init__(
        self, inner: GitHub, tokens: InstallationTokens, tenant_id: UUID | None = None
    ) -> None:
        self.inner = inner
        self.tokens = tokens
        self.tenant_id = tenant_id

    def for_tenant(self, tenant_id: UUID) -> AppGitHub:
        return AppGitHub(self.inner, self.tokens, tenant_id)

    def close(self) -> None:
        close: Callable[[], None] | None = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def _as_app(self, repo: RepoName, token: str | None, call: Callable[[str], T]) -> T:
        if token is not None:
            return call(token)
        installation_token = self.tokens.token_for(repo, self.tenant_id)
        try:
            return call(installation_token)
        except ProviderRejected as exc:
            if exc.status != 401:
                raise
            self.tokens.refused(repo, installation_token)
        try:
            return call(self.tokens.token_for(repo, self.tenant_id))
        except ProviderRejected as exc:
            if exc.status != 401:
                raise
            raise ProviderRejected(
                f"GitHub refused the App's installation token for {repo.full_name} twice (401), "
                "a freshly minted one included: is the App still installed there?",
                status=401,
            ) from exc

    # --- reads -----------------------------------------------------------------------------

    def authenticated_login(self, *, token: str | None = None) -> str:
        if token is None:
            return self.tokens.bot_login
        return self.inner.authenticated_login(token=token)

    def list_issue_comments(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueComment]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_issue_comments(repo, issue_number, token=t)
        )

    def list_repository_labels(self, repo: RepoName, *, token: str | None = None) -> list[str]:
        return self._as_app(repo, token, lambda t: self.inner.list_repository_labels(repo, token=t))

    def list_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[str]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_issue_labels(repo, issue_number, token=t)
        )

    def list_issue_events(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueEvent]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_issue_events(repo, issue_number, token=t)
        )

    def get_issue(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> IssueData:
        return self._as_app(
            repo, token, lambda t: self.inner.get_issue(repo, issue_number, token=t)
        )

    def pull_request_head_sha(
        self, repo: RepoName, number: int, *, token: str | None = None
    ) -> str:
        return self._as_app(
            repo, token, lambda t: self.inner.pull_request_head_sha(repo, number, token=t)
        )

    def list_check_runs_for_ref(
        self, repo: RepoName, ref: str, *, token: str | None = None
    ) -> list[CheckRunData]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_check_runs_for_ref(repo, ref, token=t)
        )

    def get_check_run(
        self, repo: RepoName, check_run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        return self._as_app(
            repo, token, lambda t: self.inner.get_check_run(repo, check_run_id, token=t)
        )

    def get_workflow_run(
        self, repo: RepoName, run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        return self._as_app(
            repo, token, lambda t: self.inner.get_workflow_run(repo, run_id, token=t)
        )

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
        return self._as_app(
            repo,
            token,
            lambda t: self.inner.list_issues_page(
                repo, state=state, since=since, page=page, per_page=per_page, token=t
            ),
        )

    def list_issues_created_since(
        self, repo: RepoName, since: datetime, *, token: str | None = None
    ) -> list[IssueData]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_issues_created_since(repo, since, token=t)
        )

    def list_issue_reactions(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[Reaction]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_issue_reactions(repo, issue_number, token=t)
        )

    def list_comment_reactions(
        self, repo: RepoName, comment_id: int, *, token: str | None = None
    ) -> list[Reaction]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_comment_reactions(repo, comment_id, token=t)
        )

    def read_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> IssueLabels:
        return self._as_app(
            repo, token, lambda t: self.inner.read_issue_labels(repo, issue_number, token=t)
        )

    def list_issue_suggestions(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueSuggestionData]:
        return self._as_app(
            repo, token, lambda t: self.inner.list_issue_suggestions(repo, issue_number, token=t)
        )

    def get_repository_file(
        self, repo: RepoName, path: str, *, token: str | None = None
    ) -> RepositoryFile | None:
        return self._as_app(
            repo, token, lambda t: self.inner.get_repository_file(repo, path, token=t)
        )

    # --- writes (never retried but for a 401, which wrote nothing) -----------------------------

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
        return self._as_app(
            repo,
            token,
            lambda t: self.inner.close_issue_as_duplicate(
                repo, issue_number, duplicate_of, note=note, suggest=suggest, token=t
            ),
        )

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
        return self._as_app(
            repo,
            token,
            lambda t: self.inner.set_issue_labels(
                repo, issue_number, labels, if_match=if_match, token=t
            ),
        )

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
        return self._as_app(
            repo,
            token,
            lambda t: self.inner.create_issue(
                repo, title=title, body=body, labels=labels, assignees=assignees, token=t
            ),
        )

    @writes
    def post_comment(
        self, repo: RepoName, issue_number: int, body: str, *, token: str | None = None
    ) -> PostedComment:
        return self._as_app(
            repo, token, lambda t: self.inner.post_comment(repo, issue_number, body, token=t)
        )

    @writes
    def add_labels(
        self, repo: RepoName, issue_number: int, labels: list[str], *, token: str | None = None
    ) -> list[str]:
        return self._as_app(
            repo, token, lambda t: self.inner.add_labels(repo, issue_number, labels, token=t)
        )
