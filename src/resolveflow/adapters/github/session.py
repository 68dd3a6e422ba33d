"""The plumbing under ``GitHubKitClient``: construction, auth, the connection pool, paging, and the
wrapper that turns every failure into the error contract of ``adapters.github.protocol``.

``GitHubSession`` holds one githubkit client per token over one shared connection pool;
``GitHubReads`` (``reads.py``) and ``GitHubKitClient`` (``client.py``, the writes) build on it. See
``client.py`` for why it is configured the way it is.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import httpx
import pydantic
from githubkit import GitHub, Response
from githubkit.config import Config, get_config
from githubkit.exception import RequestError, RequestFailed
from githubkit.throttling import LocalThrottler

from resolveflow.adapters.base import Call
from resolveflow.adapters.github.errors import (
    invalid_body_error,
    scrub,
    status_error,
    transport_error,
)
from resolveflow.adapters.github.protocol import DEADLINE_TIMEOUTS
from resolveflow.errors import InvalidInput, ProviderError, ResolveFlowError

if TYPE_CHECKING:
    # githubkit's generated ``IssuesClient`` has a method named ``list``, which makes mypy read its
    # ``list[Label]`` return annotations as unknown; callers restate those types with these casts.
    from githubkit_schemas.latest.models import Issue as GitHubIssue
    from githubkit_schemas.latest.models import IssueComment as GitHubIssueComment
    from githubkit_schemas.latest.models import Label as GitHubLabel

    CommentPages = Callable[..., Response[list[GitHubIssueComment], Any]]
    LabelPages = Callable[..., Response[list[GitHubLabel], Any]]
    IssuePages = Callable[..., Response[list[GitHubIssue], Any]]

# One logger for the whole adapter, under the name it had before client.py was split.
logger = logging.getLogger("resolveflow.adapters.github.client")

T = TypeVar("T")
P = TypeVar("P")
E = TypeVar("E", bound=ResolveFlowError)

USER_AGENT = "ResolveFlow (githubkit)"
PER_PAGE = 100
MAX_PAGES = 1000  # 100k items: far beyond any real issue, and stops a server that loops
MAX_CONNECTIONS = 100  # also githubkit's default concurrency cap per client
MAX_CACHED_TOKENS = 64

NEXT_LINK = re.compile(r'<[^<>]*>\s*;\s*rel="?next"?')


class _Deadline(threading.local):
    """The monotonic time by which the current thread's request must be over (None: no limit)."""

    at: float | None = None


class _SharedTransport(httpx.BaseTransport):
    """Lends one connection pool to the short-lived clients githubkit creates per request, and
    holds every request to its thread's deadline.

    githubkit closes its per-request ``httpx.Client``, which closes the client's transport; this
    wrapper ignores that so pooled keep-alive connections survive. ``HTTPTransport`` (an httpcore
    connection pool) is thread-safe.
    """

    def __init__(self, inner: httpx.HTTPTransport, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        at = self._deadline.at
        if at is None:
            return self._inner.handle_request(request)
        remaining = at - time.monotonic()
        if remaining <= 0:  # nothing has been sent: safe to say so
            raise httpx.ConnectTimeout("the request deadline passed before it was sent")
        phases = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            phase: remaining if phases.get(phase) is None else min(phases[phase], remaining)
            for phase in ("connect", "read", "write", "pool")
        }
        response = self._inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_DeadlineStream(response.stream, at),
            extensions=response.extensions,
        )

    def close(self) -> None:
        """Deliberately a no-op; see ``close_pool``."""

    def close_pool(self) -> None:
        self._inner.close()


class _DeadlineStream(httpx.SyncByteStream):
    """A response body that stops at the deadline, however slowly each byte arrives."""

    def __init__(self, inner: httpx.SyncByteStream, at: float) -> None:
        self._inner = inner
        self._at = at

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._at:
                raise httpx.ReadTimeout("the response outlasted the request deadline")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _GitHub(GitHub[Any]):
    """githubkit client that leaves rate-limit detection to this adapter.

    githubkit's own check parses ``Retry-After``/``x-ratelimit-reset`` with ``int()`` and lets a
    ``ValueError`` escape on anything else (e.g. an HTTP-date), which would hide a definite 403.
    With it disabled every 4xx/5xx arrives as ``RequestFailed`` and ``status_error`` decides.
    """

    def _check_rate_limit(self, response: Response[Any]) -> None:
        return None


class GitHubSession:
    """Clients per token, the shared pool, paging and error translation; safe across threads."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        timeout_seconds: float,
        deadline_seconds: float | None = None,
    ) -> None:
        """``token`` is the service token (``None``: unauthenticated unless a call passes one);
        ``base_url`` may carry a path, e.g. ``https://ghe.example.com/api/v3``.
        ``deadline_seconds``: the wall-clock limit of one request (default: four timeouts)."""
        self._service_token = token
        self._deadline = _Deadline()
        self._deadline_seconds = deadline_seconds or timeout_seconds * DEADLINE_TIMEOUTS
        self._transport = _SharedTransport(
            httpx.HTTPTransport(
                limits=httpx.Limits(
                    max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS
                ),
                proxy=_environment_proxy(base_url),
                retries=0,  # httpcore would only retry connects, but be explicit
            ),
            self._deadline,
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
        return f"{type(self).__name__}(base_url={str(self._config.base_url)!r})"

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
        self,
        call: Call,
        token: str | None,
        fetch: Callable[..., Response[list[T], Any]],
        *,
        is_last: Callable[[list[T]], bool] | None = None,
    ) -> list[T]:
        """Every item of an endpoint that answers each page with a bare list."""
        return self._pages(call, token, fetch, _as_list, is_last=is_last)

    def _pages(
        self,
        call: Call,
        token: str | None,
        fetch: Callable[..., Response[P, Any]],
        items_of: Callable[[P], list[T]],
        *,
        stop_when_short: bool = False,
        is_last: Callable[[list[T]], bool] | None = None,
    ) -> list[T]:
        """Request page after page while GitHub's ``Link`` header announces ``rel="next"``
        (and, with ``stop_when_short``, while pages come back full; with ``is_last``, until a
        page it says is the last one wanted).

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
                or (is_last is not None and is_last(page_items))
                or not NEXT_LINK.search(response.headers.get("link", ""))
            ):
                return items
        raise self._fail(call, token, ProviderError(f"{call}: more than {MAX_PAGES} pages."))

    def _send(
        self, call: Call, token: str | None, request: Callable[[], Response[T, Any]]
    ) -> Response[T, Any]:
        """Run one githubkit request and translate every failure into the error contract."""
        started = time.monotonic()
        self._deadline.at = started + self._deadline_seconds
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
        finally:
            self._deadline.at = None
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
        # INFO, not WARNING: the error is raised, and whoever catches it reports it once (the CLI's
        # one error line, an HTTP status, an execution's recorded detail). A warning here would
        # print the same failure twice on a person's terminal.
        logger.info(
            "GitHub call failed: %s",
            error.message,
            extra={**_log_fields(call, status, None), "error_type": type(error).__name__},
        )
        return error


def _as_list(items: list[T]) -> list[T]:
    return items


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
