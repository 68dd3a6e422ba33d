"""The production ``GitHub`` adapter, built on githubkit 0.16 over httpx.

Why it looks the way it does:

- **Never retried here.** githubkit retries rate limits and 5xx by default; a retried POST can post
  a comment twice. ``auto_retry=False``; retrying is the executor's decision, after reconciling.
- **Errors say what may have happened**, per the contract in ``adapters.github``: rate limited and
  rejected mean nothing was written; outcome-unknown means a write may have landed; unavailable
  means the request was never sent. When in doubt we say outcome-unknown, never "not sent".
- **Connections are pooled across threads.** githubkit opens (and closes) a fresh ``httpx.Client``
  per request unless used as a context manager, and that context is per thread. We hand it one
  shared, thread-safe ``httpx.HTTPTransport`` whose ``close()`` is ignored, so keep-alive
  connections survive between calls and threads; ``GitHubKitClient.close()`` closes the pool.
- **Responses are validated** through githubkit's typed REST methods and ``.parsed_data``.
- **Tokens never appear in messages or logs**; every message is scrubbed before raising.
- **Failures are classified** in ``github_errors`` (HTTP status, headers and httpx exceptions to
  the domain errors above, plus token masking); this module catches, scrubs and logs them.
- **Reads are validated too.** A read whose 2xx body fails the schema (missing field, wrong type,
  an HTML page from a proxy) raises a plain ``ProviderError`` naming the call; 404/410 raise
  ``ProviderRejected``; 5xx raise ``ProviderOutcomeUnknown`` (nothing to reconcile for a read).
- **Nothing caller-supplied reaches a URL unchecked.** githubkit interpolates path parameters
  unescaped, so owner/name, numbers and git refs are validated before anything is sent.
- **Timeouts are per phase.** httpx applies ``timeout_seconds`` separately to waiting for a pooled
  connection, connecting, writing and each read, so one call can last a few multiples of it
  (pool + connect + write + read) before it fails; size leases for that, not for one timeout.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, cast

import httpx
import pydantic
from githubkit import GitHub, Response
from githubkit.config import Config, get_config
from githubkit.exception import RequestError, RequestFailed
from githubkit.throttling import LocalThrottler
from githubkit.utils import UNSET

from resolveflow.adapters.base import writes
from resolveflow.adapters.github.errors import (
    Call,
    invalid_body_error,
    scrub,
    status_error,
    transport_error,
)
from resolveflow.adapters.github.protocol import (
    CheckRunData,
    IssueComment,
    IssueData,
    IssuePage,
    PostedComment,
    RepoName,
)
from resolveflow.errors import InvalidInput, ProviderError, ResolveFlowError

if TYPE_CHECKING:
    # githubkit's generated ``IssuesClient`` has a method named ``list``, which makes mypy read its
    # ``list[Label]`` return annotations as unknown; we restate those types with casts below.
    from githubkit_schemas.latest.models import CheckRun as GitHubCheckRun
    from githubkit_schemas.latest.models import Issue as GitHubIssue
    from githubkit_schemas.latest.models import IssueComment as GitHubIssueComment
    from githubkit_schemas.latest.models import Label as GitHubLabel
    from githubkit_schemas.latest.models import WorkflowRun as GitHubWorkflowRun

    _CommentPages = Callable[..., Response[list[GitHubIssueComment], Any]]
    _LabelPages = Callable[..., Response[list[GitHubLabel], Any]]
    _IssuePages = Callable[..., Response[list[GitHubIssue], Any]]

logger = logging.getLogger(__name__)

T = TypeVar("T")
P = TypeVar("P")
E = TypeVar("E", bound=ResolveFlowError)
IssueState = Literal["open", "closed", "all"]

USER_AGENT = "ResolveFlow (githubkit)"
PER_PAGE = 100
MAX_PAGES = 1000  # 100k items: far beyond any real issue, and stops a server that loops
MAX_CONNECTIONS = 100  # also githubkit's default concurrency cap per client
MAX_CACHED_TOKENS = 64

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # used with fullmatch: "$" would accept a "\n"
_NEXT_LINK = re.compile(r'<[^<>]*>\s*;\s*rel="?next"?')
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories
# A hex sha or a branch/tag name in git's check-ref-format rules, restricted to URL-safe characters:
# no "..", "//", "@", leading "-", "." or "/", component starting with ".", trailing "/", "." or
# ".lock". Slashes are allowed ("release/1.2"): GitHub resolves them inside the path.
_REF = re.compile(r"(?![-./])(?!.*\.\.)(?!.*//)(?!.*/\.)[A-Za-z0-9._/-]{1,255}(?<![/.])(?<!\.lock)")
_ISSUE_STATES = ("open", "closed", "all")


class _SharedTransport(httpx.BaseTransport):
    """Lends one connection pool to the short-lived clients githubkit creates per request.

    githubkit closes its per-request ``httpx.Client``, which closes the client's transport; this
    wrapper ignores that so pooled keep-alive connections survive. ``HTTPTransport`` (an httpcore
    connection pool) is thread-safe.
    """

    def __init__(self, inner: httpx.HTTPTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(request)

    def close(self) -> None:
        """Deliberately a no-op; see ``close_pool``."""

    def close_pool(self) -> None:
        self._inner.close()


class _GitHub(GitHub[Any]):
    """githubkit client that leaves rate-limit detection to this adapter.

    githubkit's own check parses ``Retry-After``/``x-ratelimit-reset`` with ``int()`` and lets a
    ``ValueError`` escape on anything else (e.g. an HTTP-date), which would hide a definite 403.
    With it disabled every 4xx/5xx arrives as ``RequestFailed`` and ``status_error`` decides.
    """

    def _check_rate_limit(self, response: Response[Any]) -> None:
        return None


class GitHubKitClient:
    """``GitHub`` protocol implementation; safe to share between threads."""

    def __init__(self, base_url: str, token: str | None, timeout_seconds: float) -> None:
        """``token`` is the service token (``None``: unauthenticated unless a call passes one);
        ``base_url`` may carry a path, e.g. ``https://ghe.example.com/api/v3``."""
        self._service_token = token
        self._transport = _SharedTransport(
            httpx.HTTPTransport(
                limits=httpx.Limits(
                    max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS
                ),
                proxy=_environment_proxy(base_url),
                retries=0,  # httpcore would only retry connects, but be explicit
            )
        )
        self._config: Config = get_config(
            base_url=base_url,
            user_agent=USER_AGENT,
            timeout=httpx.Timeout(timeout_seconds),
            transport=self._transport,
            http_cache=False,  # never serve a stale comment list from a cache
            auto_retry=False,  # a retried POST would post twice
            throttler=LocalThrottler(MAX_CONNECTIONS),  # shared by every token
        )
        self._lock = threading.Lock()
        self._clients: OrderedDict[str | None, GitHub[Any]] = OrderedDict()
        self._logins: dict[str | None, str] = {}

    def __repr__(self) -> str:
        return f"GitHubKitClient(base_url={str(self._config.base_url)!r})"

    # --- reads -----------------------------------------------------------------------------

    def list_issue_comments(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueComment]:
        """Every comment on the issue, oldest first (GitHub orders them by ascending id)."""
        call = _call("list_issue_comments", "GET", repo, f"issues/{issue_number}/comments")
        _check_target(repo, issue_number)
        issues = self._github(token).rest.issues
        fetch = cast(
            "_CommentPages", partial(issues.list_comments, repo.owner, repo.name, issue_number)
        )
        return [
            IssueComment(
                id=c.id,
                body=c.body if isinstance(c.body, str) else "",
                author=c.user.login if c.user is not None else "ghost",
                url=c.html_url,
                author_association=c.author_association or "NONE",
                created_at=c.created_at,
            )
            for c in self._all_pages(call, token, fetch)
        ]

    def list_repository_labels(self, repo: RepoName, *, token: str | None = None) -> list[str]:
        """Names of every label defined in the repository."""
        call = _call("list_repository_labels", "GET", repo, "labels")
        _check_target(repo, 1)
        issues = self._github(token).rest.issues
        fetch = cast("_LabelPages", partial(issues.list_labels_for_repo, repo.owner, repo.name))
        return [label.name for label in self._all_pages(call, token, fetch)]

    def list_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[str]:
        """Names of the labels currently on the issue."""
        call = _call("list_issue_labels", "GET", repo, f"issues/{issue_number}/labels")
        _check_target(repo, issue_number)
        issues = self._github(token).rest.issues
        fetch = cast(
            "_LabelPages",
            partial(issues.list_labels_on_issue, repo.owner, repo.name, issue_number),
        )
        return [label.name for label in self._all_pages(call, token, fetch)]

    def get_issue(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> IssueData:
        """One issue or pull request (``GET /repos/{o}/{r}/issues/{n}``)."""
        _check_target(repo, issue_number)
        call = _call("get_issue", "GET", repo, f"issues/{issue_number}")
        issues = self._github(token).rest.issues
        response = self._send(call, token, partial(issues.get, repo.owner, repo.name, issue_number))
        return _issue_data(self._parse(call, token, response))

    def pull_request_head_sha(
        self, repo: RepoName, number: int, *, token: str | None = None
    ) -> str:
        """The head commit of a pull request (``GET /repos/{o}/{r}/pulls/{n}``)."""
        _check_target(repo, number)
        call = _call("pull_request_head_sha", "GET", repo, f"pulls/{number}")
        pulls = self._github(token).rest.pulls
        response = self._send(call, token, partial(pulls.get, repo.owner, repo.name, number))
        sha = self._parse(call, token, response).head.sha
        if not _COMMIT_SHA.fullmatch(sha):
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
        _check_target(repo, 1)
        if not isinstance(ref, str) or not _REF.fullmatch(ref):
            raise InvalidInput(f"Not a commit sha or a safe git ref name: {ref!r}.")
        call = _call("list_check_runs_for_ref", "GET", repo, f"commits/{ref}/check-runs")
        checks = self._github(token).rest.checks
        fetch = partial(checks.list_for_ref, repo.owner, repo.name, ref)
        runs = self._pages(call, token, fetch, lambda page: page.check_runs, stop_when_short=True)
        return [_check_run_data(run) for run in runs]

    def get_check_run(
        self, repo: RepoName, check_run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        """``GET /repos/{o}/{r}/check-runs/{id}``."""
        _check_target(repo, 1)
        _check_positive(check_run_id, "check run id")
        call = _call("get_check_run", "GET", repo, f"check-runs/{check_run_id}")
        checks = self._github(token).rest.checks
        response = self._send(call, token, partial(checks.get, repo.owner, repo.name, check_run_id))
        return _check_run_data(self._parse(call, token, response))

    def get_workflow_run(
        self, repo: RepoName, run_id: int, *, token: str | None = None
    ) -> CheckRunData:
        """``GET /repos/{o}/{r}/actions/runs/{id}``, as a CheckRunData of kind workflow_run."""
        _check_target(repo, 1)
        _check_positive(run_id, "workflow run id")
        call = _call("get_workflow_run", "GET", repo, f"actions/runs/{run_id}")
        actions = self._github(token).rest.actions
        request = partial(actions.get_workflow_run, repo.owner, repo.name, run_id)
        return _workflow_run_data(self._parse(call, token, self._send(call, token, request)))

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
        _check_target(repo, 1)
        if state not in _ISSUE_STATES:
            raise InvalidInput(f"Issue state must be one of {', '.join(_ISSUE_STATES)}: {state!r}.")
        _check_positive(page, "page number")
        _check_positive(per_page, "page size")
        if per_page > PER_PAGE:
            raise InvalidInput(f"GitHub pages hold at most {PER_PAGE} items: {per_page!r}.")
        call = _call("list_issues_page", "GET", repo, f"issues?state={state}&page={page}")
        issues = self._github(token).rest.issues
        request = partial(
            issues.list_for_repo,
            repo.owner,
            repo.name,
            state=cast("IssueState", state),
            since=cast("Any", _iso_z(since) if since is not None else UNSET),
            sort="updated",
            direction="asc",
            per_page=per_page,
            page=page,
        )
        response = self._send(call, token, cast("_IssuePages", request))
        items = [_issue_data(issue) for issue in self._parse(call, token, response)]
        has_next = bool(_NEXT_LINK.search(response.headers.get("link", "")))
        return IssuePage(items=items, has_next=has_next)

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

    # --- writes (never retried here) -------------------------------------------------------

    @writes
    def post_comment(
        self, repo: RepoName, issue_number: int, body: str, *, token: str | None = None
    ) -> PostedComment:
        """Create one comment and return what GitHub stored."""
        call = _call("post_comment", "POST", repo, f"issues/{issue_number}/comments", write=True)
        _check_target(repo, issue_number)
        if not body:
            raise InvalidInput("A comment body must not be empty.")
        issues = self._github(token).rest.issues
        response = self._send(
            call,
            token,
            partial(issues.create_comment, repo.owner, repo.name, issue_number, body=body),
        )
        comment = self._parse(call, token, response)
        stored = comment.body if isinstance(comment.body, str) else body
        return PostedComment(id=comment.id, url=comment.html_url, body=stored)

    @writes
    def add_labels(
        self, repo: RepoName, issue_number: int, labels: list[str], *, token: str | None = None
    ) -> list[str]:
        """Add labels (GitHub creates unknown ones); returns the issue's labels afterwards."""
        call = _call("add_labels", "POST", repo, f"issues/{issue_number}/labels", write=True)
        _check_target(repo, issue_number)
        if not labels or not all(isinstance(name, str) and name for name in labels):
            raise InvalidInput("add_labels needs at least one non-empty label name.")
        issues = self._github(token).rest.issues
        request = partial(
            issues.add_labels, repo.owner, repo.name, issue_number, labels=list(labels)
        )
        response = self._send(call, token, cast("_LabelPages", request))
        return [label.name for label in self._parse(call, token, response)]

    # --- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close pooled connections. Calls made afterwards open new ones."""
        self._transport.close_pool()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- plumbing --------------------------------------------------------------------------

    def _github(self, token: str | None) -> GitHub[Any]:
        """One githubkit client per token (LRU-bounded); all share config, pool and throttle."""
        key = token if token is not None else self._service_token
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = _GitHub(key, config=self._config) if key else _GitHub(config=self._config)
                _ = client.rest.issues  # build the cached namespaces once, under the lock
                self._clients[key] = client
                if len(self._clients) > MAX_CACHED_TOKENS:
                    self._clients.popitem(last=False)
            else:
                self._clients.move_to_end(key)
            return client

    def _all_pages(
        self, call: Call, token: str | None, fetch: Callable[..., Response[list[T], Any]]
    ) -> list[T]:
        """Every item of an endpoint that answers each page with a bare list."""
        return self._pages(call, token, fetch, _as_list)

    def _pages(
        self,
        call: Call,
        token: str | None,
        fetch: Callable[..., Response[P, Any]],
        items_of: Callable[[P], list[T]],
        *,
        stop_when_short: bool = False,
    ) -> list[T]:
        """Request page after page while GitHub's ``Link`` header announces ``rel="next"``
        (and, with ``stop_when_short``, while pages come back full).

        We ask for page numbers ourselves instead of following the link's URL, so a hostile or
        misconfigured server cannot steer the token to another host.
        """
        items: list[T] = []
        for page in range(1, MAX_PAGES + 1):
            response = self._send(call, token, partial(fetch, per_page=PER_PAGE, page=page))
            page_items = items_of(self._parse(call, token, response))
            items.extend(page_items)
            if (
                not page_items
                or (stop_when_short and len(page_items) < PER_PAGE)
                or not _NEXT_LINK.search(response.headers.get("link", ""))
            ):
                return items
        raise self._fail(call, token, ProviderError(f"{call}: more than {MAX_PAGES} pages."))

    def _send(
        self, call: Call, token: str | None, request: Callable[[], Response[T, Any]]
    ) -> Response[T, Any]:
        """Run one githubkit request and translate every failure into the error contract."""
        started = time.monotonic()
        try:
            response = request()
        except RequestFailed as exc:
            raise self._fail(call, token, status_error(call, exc.response.raw_response)) from exc
        except RequestError as exc:
            raise self._fail(call, token, transport_error(call, exc.exc)) from exc
        except pydantic.ValidationError as exc:  # githubkit checks request bodies before sending
            raise self._fail(call, token, InvalidInput(f"{call}: invalid request body.")) from exc
        except Exception as exc:  # anything else: if it was a write, it may have been sent
            raise self._fail(call, token, transport_error(call, exc)) from exc
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "GitHub call succeeded", extra=_log_fields(call, response.status_code, started)
            )
        return response

    def _parse(self, call: Call, token: str | None, response: Response[T, Any]) -> T:
        """Validate the 2xx body against githubkit's schema model."""
        try:
            return response.parsed_data
        except (pydantic.ValidationError, ValueError) as exc:
            content_type = response.headers.get("content-type")
            error = invalid_body_error(call, response.status_code, exc, content_type)
            raise self._fail(call, token, error) from exc

    def _fail(self, call: Call, token: str | None, error: E) -> E:
        """Scrub tokens from the message, log the failure, and hand the error back to raise."""
        error.message = scrub(error.message, (token, self._service_token))
        error.args = (error.message,)
        status = getattr(error, "status", None) or error.context.get("status")
        logger.warning(
            "GitHub call failed: %s",
            error.message,
            extra={**_log_fields(call, status, None), "error_type": type(error).__name__},
        )
        return error


# --- pure helpers --------------------------------------------------------------------------


def _call(operation: str, method: str, repo: RepoName, tail: str, *, write: bool = False) -> Call:
    return Call(operation, method, f"/repos/{repo.owner}/{repo.name}/{tail}", write)


def _check_target(repo: RepoName, issue_number: int) -> None:
    """githubkit interpolates owner/name into the URL unescaped: refuse anything path-like."""
    for part in (repo.owner, repo.name):
        if not isinstance(part, str) or not _NAME.fullmatch(part) or part in (".", ".."):
            raise InvalidInput(f"Not a valid GitHub repository name: {repo.full_name!r}.")
    _check_positive(issue_number, "issue number")


def _check_positive(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"Not a valid {what}: {value!r}.")


def _iso_z(moment: datetime) -> str:
    """GitHub's timestamp format; a naive datetime is refused rather than guessed at."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput(f"since must be timezone-aware: {moment!r}.")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _as_list(items: list[T]) -> list[T]:
    return items


def _issue_data(issue: GitHubIssue) -> IssueData:
    pull = issue.pull_request or None
    labels = (label if isinstance(label, str) else label.name for label in issue.labels)
    return IssueData(
        number=issue.number,
        title=issue.title,
        body=issue.body if isinstance(issue.body, str) else "",
        state=issue.state,
        author=issue.user.login if issue.user is not None else "ghost",
        author_association=issue.author_association or "NONE",
        labels=tuple(name for name in labels if isinstance(name, str) and name),
        created_at=issue.created_at,
        updated_at=issue.updated_at,
        closed_at=issue.closed_at,
        is_pull_request=pull is not None,
        url=issue.html_url,
        merged_at=(pull.merged_at or None) if pull is not None else None,
    )


def _check_run_data(run: GitHubCheckRun) -> CheckRunData:
    """Summary: the output's title and summary (either may be missing), joined."""
    parts = [part for part in (run.output.title, run.output.summary) if part]
    return CheckRunData(
        id=run.id,
        name=run.name,
        status=run.status,
        conclusion=run.conclusion,
        url=run.html_url or run.details_url or run.url,
        summary="\n\n".join(dict.fromkeys(parts)) or None,
        head_sha=run.head_sha,
        kind="check_run",
    )


def _workflow_run_data(run: GitHubWorkflowRun) -> CheckRunData:
    return CheckRunData(
        id=run.id,
        name=run.name or run.display_title,
        status=run.status or "unknown",
        conclusion=run.conclusion,
        url=run.html_url,
        summary=run.display_title,
        head_sha=run.head_sha,
        kind="workflow_run",
    )


def _log_fields(call: Call, status: int | None, started: float | None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "github_operation": call.operation,
        "github_method": call.method,
        "github_path": call.path,
        "github_status": status,
    }
    if started is not None:
        fields["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return fields


def _environment_proxy(base_url: str) -> str | None:
    """httpx ignores proxy variables when handed a transport, so honour them here (as
    githubkit's default ``trust_env=True`` client would): ``HTTPS_PROXY``/``NO_PROXY``."""
    url = httpx.URL(base_url)
    if url.host and urllib.request.proxy_bypass(url.host):
        return None
    return urllib.request.getproxies().get(url.scheme)
