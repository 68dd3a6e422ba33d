"""The read methods of ``GitHubKitClient``: issues, comments, labels, issue events, check and
workflow runs.

A read whose 2xx body fails the schema raises a plain ``ProviderError`` naming the call; 404/410
raise ``ProviderRejected``; 5xx raise ``ProviderOutcomeUnknown`` (nothing to reconcile for a read).
Arguments that would reach a URL are checked first (``validation``).
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast

from githubkit import Response
from githubkit.utils import UNSET
from githubkit_schemas.latest.models import ContentFile
from githubkit_schemas.latest.models import IssueEvent as GitHubIssueEvent
from githubkit_schemas.latest.models import IssueSuggestion as GitHubIssueSuggestion

from resolveflow.adapters.base import Call
from resolveflow.adapters.github.conversions import (
    check_run_data,
    issue_comment,
    issue_data,
    issue_event,
    issue_suggestion,
    reaction,
    workflow_run_data,
)
from resolveflow.adapters.github.protocol import (
    CheckRunData,
    IssueComment,
    IssueData,
    IssueEvent,
    IssueLabels,
    IssuePage,
    IssueSuggestionData,
    Reaction,
    RepositoryFile,
)
from resolveflow.adapters.github.session import NEXT_LINK, PER_PAGE, GitHubSession
from resolveflow.adapters.github.validation import (
    COMMIT_SHA,
    ISSUE_STATES,
    check_file_path,
    check_positive,
    check_ref,
    check_repo,
    check_target,
    iso_z,
    repo_call,
)
from resolveflow.errors import InvalidInput, ProviderError, ProviderRejected

if TYPE_CHECKING:
    from githubkit_schemas.latest.models import Issue as GitHubIssue

    from resolveflow.adapters.github.protocol import RepoName
    from resolveflow.adapters.github.session import CommentPages, IssuePages, LabelPages

IssueState = Literal["open", "closed", "all"]
LABEL_EVENTS = ("labeled", "unlabeled")


class GitHubReads(GitHubSession):
    """Every read of the ``GitHub`` protocol; the writes are added by ``GitHubKitClient``."""

    def list_issue_comments(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueComment]:
        """Every comment on the issue, oldest first (GitHub orders them by ascending id)."""
        call = repo_call("list_issue_comments", "GET", repo, f"issues/{issue_number}/comments")
        check_target(repo, issue_number)
        issues = self._github(token).rest.issues
        fetch = cast(
            "CommentPages", partial(issues.list_comments, repo.owner, repo.name, issue_number)
        )
        return [issue_comment(c) for c in self._all_pages(call, token, fetch)]

    def list_issue_reactions(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[Reaction]:
        """Every reaction on the issue itself (``GET .../issues/{n}/reactions``, all pages)."""
        call = repo_call("list_issue_reactions", "GET", repo, f"issues/{issue_number}/reactions")
        check_target(repo, issue_number)
        reactions = self._github(token).rest.reactions
        fetch = partial(reactions.list_for_issue, repo.owner, repo.name, issue_number)
        return [reaction(item) for item in self._all_pages(call, token, fetch)]

    def get_repository_file(
        self, repo: RepoName, path: str, *, token: str | None = None
    ) -> RepositoryFile | None:
        """A file of the default branch (``GET .../contents/{path}``), or ``None`` on 404."""
        check_repo(repo)
        check_file_path(path)
        call = repo_call("get_repository_file", "GET", repo, f"contents/{path}")
        repos = self._github(token).rest.repos
        try:
            response = self._send(
                call, token, partial(repos.get_content, repo.owner, repo.name, path)
            )
        except ProviderRejected as exc:
            if exc.status == 404:
                return None
            raise
        found = self._parse(call, token, response)
        if not isinstance(found, ContentFile):
            error = ProviderError(f"{call}: {path} is not a file on the default branch.")
            raise self._fail(call, token, error)
        try:
            content = base64.b64decode(found.content, validate=False)
        except (binascii.Error, ValueError):
            error = ProviderError(f"{call}: GitHub answered content that is not base64.")
            raise self._fail(call, token, error) from None
        return RepositoryFile(path=found.path, sha=found.sha, content=content)

    def list_comment_reactions(
        self, repo: RepoName, comment_id: int, *, token: str | None = None
    ) -> list[Reaction]:
        """Every reaction on one issue comment (``GET .../issues/comments/{id}/reactions``)."""
        call = repo_call(
            "list_comment_reactions", "GET", repo, f"issues/comments/{comment_id}/reactions"
        )
        check_repo(repo)
        check_positive(comment_id, "comment id")
        reactions = self._github(token).rest.reactions
        fetch = partial(reactions.list_for_issue_comment, repo.owner, repo.name, comment_id)
        return [reaction(item) for item in self._all_pages(call, token, fetch)]

    def list_repository_labels(self, repo: RepoName, *, token: str | None = None) -> list[str]:
        """Names of every label defined in the repository."""
        call = repo_call("list_repository_labels", "GET", repo, "labels")
        check_repo(repo)
        issues = self._github(token).rest.issues
        fetch = cast("LabelPages", partial(issues.list_labels_for_repo, repo.owner, repo.name))
        return [label.name for label in self._all_pages(call, token, fetch)]

    def list_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[str]:
        """Names of the labels currently on the issue."""
        call = repo_call("list_issue_labels", "GET", repo, f"issues/{issue_number}/labels")
        check_target(repo, issue_number)
        issues = self._github(token).rest.issues
        fetch = cast(
            "LabelPages",
            partial(issues.list_labels_on_issue, repo.owner, repo.name, issue_number),
        )
        return [label.name for label in self._all_pages(call, token, fetch)]

    def list_issue_events(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueEvent]:
        """Every event of the issue, oldest first (``GET .../issues/{n}/events``, all pages).

        Each item is validated against GitHub's generic ``IssueEvent`` schema, not the union
        githubkit's ``list_events`` declares: GitHub lists ``closed``, ``reopened``,
        ``referenced``, ``mentioned``... here too, that union has no member for them, and one
        closed issue would fail every read of its history. A ``labeled`` or ``unlabeled`` event
        that names no label is a malformed answer like any other.
        """
        call = repo_call("list_issue_events", "GET", repo, f"issues/{issue_number}/events")
        check_target(repo, issue_number)
        issues = self._github(token).rest.issues

        def fetch(*, per_page: int, page: int) -> Response[list[GitHubIssueEvent], Any]:
            sent = issues.list_events(
                repo.owner, repo.name, issue_number, per_page=per_page, page=page
            )
            return Response(sent.raw_response, list[GitHubIssueEvent])

        events = [issue_event(event) for event in self._all_pages(call, token, fetch)]
        for event in events:
            if event.event in LABEL_EVENTS and event.label is None:
                error = ProviderError(
                    f"{call}: GitHub answered a {event.event} event (id {event.id}) "
                    "that names no label."
                )
                raise self._fail(call, token, error)
        return events

    def get_issue(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> IssueData:
        """One issue or pull request (``GET /repos/{o}/{r}/issues/{n}``)."""
        check_target(repo, issue_number)
        call = repo_call("get_issue", "GET", repo, f"issues/{issue_number}")
        issues = self._github(token).rest.issues
        response = self._send(call, token, partial(issues.get, repo.owner, repo.name, issue_number))
        return issue_data(self._parse(call, token, response))

    def read_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> IssueLabels:
        """The issue's labels as one read saw them, with the answer's ``ETag``."""
        check_target(repo, issue_number)
        call = repo_call("read_issue_labels", "GET", repo, f"issues/{issue_number}")
        issues = self._github(token).rest.issues
        response = self._send(call, token, partial(issues.get, repo.owner, repo.name, issue_number))
        issue = issue_data(self._parse(call, token, response))
        return IssueLabels(issue.labels, response.headers.get("etag"))

    def list_issue_suggestions(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueSuggestionData]:
        """Every suggestion on the issue in every state, oldest first (``state=all``)."""
        check_target(repo, issue_number)
        call = repo_call(
            "list_issue_suggestions", "GET", repo, f"issues/{issue_number}/suggestions"
        )
        issues = self._github(token).rest.issues

        def fetch(*, per_page: int, page: int) -> Response[list[GitHubIssueSuggestion], Any]:
            sent = issues.list_suggestions(
                repo.owner, repo.name, issue_number, state="all", per_page=per_page, page=page
            )
            return Response(sent.raw_response, list[GitHubIssueSuggestion])

        return [issue_suggestion(item) for item in self._all_pages(call, token, fetch)]

    def pull_request_head_sha(
        self, repo: RepoName, number: int, *, token: str | None = None
    ) -> str:
        """The head commit of a pull request (``GET /repos/{o}/{r}/pulls/{n}``)."""
        check_target(repo, number)
        call = repo_call("pull_request_head_sha", "GET", repo, f"pulls/{number}")
        pulls = self._github(token).rest.pulls
        response = self._send(call, token, partial(pulls.get, repo.owner, repo.name, number))
        sha = self._parse(call, token, response).head.sha
        if not COMMIT_SHA.fullmatch(sha):
            error = ProviderError(
                f"{call}: GitHub answered with a head sha that is not a commit id."
            )
            raise self._fail(call, token, error)
        return sha

    def list_check_runs_for_ref(
        self, repo: RepoName, ref: str, *, token: str | None = None
    ) -> list[CheckRunData]:
        """Every check run of a commit, all pages (``GET .../commits/{ref}/check-runs``).

        GitHub's default ``filter=latest`` applies: one run per check name, the newest.
        """
        check_repo(repo)
        check_ref(ref)
        call = repo_call("list_check_runs_for_ref", "GET", repo, f"commits/{ref}/check-runs")
        checks = self._github(token).rest.checks
        fetch = partial(checks.list_for_ref, repo.owner, repo.name, ref)
        runs = self._pages(call, token, fetch, lambda page: page.check_runs, stop_when_short=True)
        return [check_run_data(run) for run in runs]

    def get_check_run(
        self, repo: RepoName, check_run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        """``GET /repos/{o}/{r}/check-runs/{id}``."""
        check_repo(repo)
        check_positive(check_run_id, "check run id")
        call = repo_call("get_check_run", "GET", repo, f"check-runs/{check_run_id}")
        checks = self._github(token).rest.checks
        response = self._send(call, token, partial(checks.get, repo.owner, repo.name, check_run_id))
        return check_run_data(self._parse(call, token, response))

    def get_workflow_run(
        self, repo: RepoName, run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        """``GET /repos/{o}/{r}/actions/runs/{id}``, as a CheckRunData of kind workflow_run."""
        check_repo(repo)
        check_positive(run_id, "workflow run id")
        call = repo_call("get_workflow_run", "GET", repo, f"actions/runs/{run_id}")
        actions = self._github(token).rest.actions
        request = partial(actions.get_workflow_run, repo.owner, repo.name, run_id)
        return workflow_run_data(self._parse(call, token, self._send(call, token, request)))

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
        """One page of issues and pull requests, least recently updated first.

        ``since`` must be timezone-aware; it is sent as ``YYYY-MM-DDTHH:MM:SSZ``, truncated to
        the second (GitHub's ``since`` is inclusive, so truncating can only include more).
        ``has_next`` is whether the ``Link`` header announces ``rel="next"``.
        """
        check_repo(repo)
        if state not in ISSUE_STATES:
            raise InvalidInput(f"Issue state must be one of {', '.join(ISSUE_STATES)}: {state!r}.")
        check_positive(page, "page number")
        check_positive(per_page, "page size")
        if per_page > PER_PAGE:
            raise InvalidInput(f"GitHub pages hold at most {PER_PAGE} items: {per_page!r}.")
        call = repo_call("list_issues_page", "GET", repo, f"issues?state={state}&page={page}")
        issues = self._github(token).rest.issues
        request = partial(
            issues.list_for_repo,
            repo.owner,
            repo.name,
            state=cast("IssueState", state),
            since=cast("Any", iso_z(since) if since is not None else UNSET),
            sort="updated",
            direction="asc",
            per_page=per_page,
            page=page,
        )
        response = self._send(call, token, cast("IssuePages", request))
        items = [issue_data(issue) for issue in self._parse(call, token, response)]
        has_next = bool(NEXT_LINK.search(response.headers.get("link", "")))
        return IssuePage(items=items, has_next=has_next)

    def list_issues_created_since(
        self, repo: RepoName, since: datetime, *, token: str | None = None
    ) -> list[IssueData]:
        """Issues (not pull requests) created at or after ``since``, newest first.

        Pages through ``sort=created&direction=desc`` with ``since`` as a pre-filter (it filters
        on ``updated_at``, never earlier than ``created_at``, so it cannot hide a wanted issue),
        and stops after the first page that reaches back before ``since``.
        """
        check_repo(repo)
        since_z = iso_z(since)  # also refuses a naive datetime
        call = repo_call(
            "list_issues_created_since", "GET", repo, f"issues?sort=created&since={since_z}"
        )
        issues = self._github(token).rest.issues
        fetch = partial(
            issues.list_for_repo,
            repo.owner,
            repo.name,
            state="all",
            sort="created",
            direction="desc",
            since=cast("Any", since_z),
        )

        def reaches_before_since(page: list[GitHubIssue]) -> bool:
            return min(issue.created_at for issue in page) < since

        found = self._all_pages(
            call, token, cast("IssuePages", fetch), is_last=reaches_before_since
        )
        # An issue opened while we page pushes the others one place down, so the last item of a
        # page can come again at the top of the next: keep each number once (its latest copy).
        unique = {issue.number: issue for issue in found}
        wanted = [
            issue_data(issue)
            for issue in unique.values()
            if issue.created_at >= since and not issue.pull_request
        ]
        return sorted(wanted, key=lambda issue: (issue.created_at, issue.number), reverse=True)

    def authenticated_login(self, *, token: str | None = None) -> str:
        """The login a token acts as (``GET /user``), cached per token for the client's life."""
        key = token if token is not None else self._service_token
        with self._lock:
            cached = self._logins.get(key)
        if cached is not None:
            return cached
        call = Call("authenticated_login", "GET", "/user", False)
        users = self._github(token).rest.users
        login = self._parse(call, token, self._send(call, token, users.get_authenticated)).login
        with self._lock:
            self._logins[key] = login
        return login
