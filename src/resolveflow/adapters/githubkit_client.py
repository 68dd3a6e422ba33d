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
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

import httpx
import pydantic
from githubkit import GitHub, Response
from githubkit.config import Config, get_config
from githubkit.exception import RequestError, RequestFailed
from githubkit.throttling import LocalThrottler

from resolveflow.adapters.base import writes
from resolveflow.adapters.github import IssueComment, PostedComment, RepoName
from resolveflow.adapters.github_errors import (
    Call,
    invalid_body_error,
    scrub,
    status_error,
    transport_error,
)
from resolveflow.domain.errors import InvalidInput, ProviderError, ResolveFlowError

if TYPE_CHECKING:
    # githubkit's generated ``IssuesClient`` has a method named ``list``, which makes mypy read its
    # ``list[Label]`` return annotations as unknown; we restate those types with casts below.
    from githubkit_schemas.latest.models import IssueComment as GitHubIssueComment
    from githubkit_schemas.latest.models import Label as GitHubLabel

    _CommentPages = Callable[..., Response[list[GitHubIssueComment], Any]]
    _LabelPages = Callable[..., Response[list[GitHubLabel], Any]]

logger = logging.getLogger(__name__)

T = TypeVar("T")
E = TypeVar("E", bound=ResolveFlowError)

USER_AGENT = "ResolveFlow (githubkit)"
PER_PAGE = 100
MAX_PAGES = 1000  # 100k items: far beyond any real issue, and stops a server that loops
MAX_CONNECTIONS = 100  # also githubkit's default concurrency cap per client
MAX_CACHED_TOKENS = 64

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_NEXT_LINK = re.compile(r'<[^<>]*>\s*;\s*rel="?next"?')


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
        """Request page after page while GitHub's ``Link`` header announces ``rel="next"``.

        We ask for page numbers ourselves instead of following the link's URL, so a hostile or
        misconfigured server cannot steer the token to another host.
        """
        items: list[T] = []
        for page in range(1, MAX_PAGES + 1):
            response = self._send(call, token, partial(fetch, per_page=PER_PAGE, page=page))
            page_items: list[T] = self._parse(call, token, response)
            items.extend(page_items)
            if not page_items or not _NEXT_LINK.search(response.headers.get("link", "")):
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
            error = invalid_body_error(call, response.status_code, exc)
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
        if not _NAME.match(part) or part in (".", ".."):
            raise InvalidInput(f"Not a valid GitHub repository name: {repo.full_name!r}.")
    if isinstance(issue_number, bool) or not isinstance(issue_number, int) or issue_number < 1:
        raise InvalidInput(f"Not a valid issue number: {issue_number!r}.")


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
