"""``FakeGitHubServer``: a real HTTP server on 127.0.0.1 that behaves like the slice of GitHub
ResolveFlow uses.

Tests and benchmarks point the production ``GitHubKitClient`` at it, so every byte goes through
httpx and githubkit exactly as it would against api.github.com: schema validation, pagination via
``Link`` headers, rate-limit headers, keep-alive connections. Faults are injected per request to
reproduce what makes exactly-once execution hard: a write that is applied but never answered,
answered too late, answered with garbage, or refused with a rate limit.

The class only puts three parts together and forwards to them:

- ``state.ForgeState``: repositories, issues, tokens, push access, behind one lock;
- route tables of functions over that state: ``issues``, ``events``, ``repos``, ``contents``,
  ``ci`` (and ``oauth`` for ``FakeGitHubWithOAuth``), whose seeding functions are this class's
  ``add_*`` (and ``put_file``) methods;
- ``frontend.Frontend``: the HTTP side, with fault injection and the request counters;
- ``pages``: the forge browsable as HTML at the ``html_url`` paths its JSON hands out.

The JSON shapes live in ``payloads`` and ``payloads_ci`` (an issue event's in ``events``), the
faults in ``faults``.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar, overload

from resolveflow.sandbox.forge import ci, contents, edits, events, pages, repos, suggestions
from resolveflow.sandbox.forge import issues as issues_area
from resolveflow.sandbox.forge.faults import (
    Delay,
    DropAfterWrite,
    Fault,
    HangAfterWrite,
    Hold,
    Malformed2xx,
    PrimaryRateLimit,
    SecondaryRateLimit,
    Status,
    TamperedBody,
    Trickle,
)
from resolveflow.sandbox.forge.frontend import Frontend, WriteRecord
from resolveflow.sandbox.forge.routing import BoundRoute, bind
from resolveflow.sandbox.forge.state import ForgeState

__all__ = [
    "Delay",
    "DropAfterWrite",
    "FakeGitHubServer",
    "Fault",
    "HangAfterWrite",
    "Hold",
    "Malformed2xx",
    "PrimaryRateLimit",
    "SecondaryRateLimit",
    "Status",
    "TamperedBody",
    "Trickle",
    "WriteRecord",
    "main",
]

P = ParamSpec("P")
R = TypeVar("R")


class _HasState(Protocol):
    state: ForgeState


class forward(Generic[P, R]):  # lower case: it reads like a decorator in the class body
    """A method that calls ``function(self.state, ...)``: the seeding API without the boilerplate.

    Type checkers see the function's parameters minus its first; the docstring is the function's.
    """

    def __init__(self, function: Callable[Concatenate[ForgeState, P], R]) -> None:
        self._function = function
        self.__doc__ = function.__doc__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, instance: _HasState, owner: type[Any]) -> Callable[P, R]: ...
    def __get__(self, instance: _HasState | None, owner: type[Any]) -> Self | Callable[P, R]:
        if instance is None:
            return self
        state, function = instance.state, self._function

        def method(*args: P.args, **kwargs: P.kwargs) -> R:
            return function(state, *args, **kwargs)

        method.__doc__ = function.__doc__
        return method


class FakeGitHubServer:
    """In-memory GitHub over real HTTP/1.1 on 127.0.0.1 (see the module docstring).

    ``default_login`` is who an unregistered token acts as, and may push to every repository.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        default_login: str = "resolveflow-bot",
        rate_limit: int = 5000,
    ) -> None:
        self.state = ForgeState(default_login)
        # The HTML pages last: an API path always finds its API route first.
        api = [
            *edits.ROUTES,
            *issues_area.ROUTES,
            *events.ROUTES,
            *suggestions.ROUTES,
            *repos.ROUTES,
            *contents.ROUTES,
            *ci.ROUTES,
            *pages.ROUTES,
        ]
        self.frontend = Frontend(
            bind(api, self.state, self.state.lock),
            self._identify,
            port=port,
            rate_limit=rate_limit,
        )

    def serve_routes(self, routes: Sequence[BoundRoute]) -> None:
        """Add ``routes`` (bound to their own state) to the table, ahead of the API's."""
        self.frontend.routes = [*routes, *self.frontend.routes]

    def _identify(self, authorization: str | None) -> str | None:
        with self.state.lock:
            return self.state.login_for(authorization)

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL such as ``http://127.0.0.1:54321`` (no trailing slash)."""
        with self.state.lock:
            return self.state.url

    def start(self) -> Self:
        """Bind (port 0 = ephemeral) and serve on a daemon thread."""
        url = self.frontend.loopback.start()
        with self.state.lock:
            self.state.base_url = url
        return self

    def stop(self) -> None:
        """Stop serving and cut every open connection, releasing hung and delayed requests."""
        self.frontend.loopback.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- faults and counters ---------------------------------------------------------------

    def inject(
        self, fault: Fault, *, method: str | None = "POST", path: str | None = None, times: int = 1
    ) -> None:
        """Queue ``fault`` for the next ``times`` requests matching ``method`` and ``path``.

        ``path`` is a regex searched in the request target (path plus query string); ``None``
        matches anything. Faults are consumed in the order they were injected.
        """
        self.frontend.inject(fault, method=method, path=path, times=times)

    @property
    def pending_faults(self) -> int:
        return self.frontend.pending_faults

    @property
    def writes_received(self) -> int:
        return self.frontend.writes_received

    @property
    def writes_applied(self) -> int:
        return self.frontend.writes_applied

    @property
    def write_log(self) -> list[WriteRecord]:
        return self.frontend.write_log

    @property
    def write_times(self) -> list[tuple[float, str | None]]:
        return self.frontend.write_times

    @property
    def requests_received(self) -> int:
        return self.frontend.requests_received

    @property
    def connections_opened(self) -> int:
        """TCP connections accepted so far; lets tests prove the client reuses connections."""
        return self.frontend.loopback.connections_opened

    @property
    def write_accepted(self) -> threading.Event:
        """Set by ``HangAfterWrite`` once the write is applied."""
        return self.frontend.write_accepted

    # --- seeding and inspection ------------------------------------------------------------

    add_repo = forward(repos.add_repo)
    grant_push = forward(repos.grant_push)
    revoke_push = forward(repos.revoke_push)
    register_token = forward(repos.register_token)
    remove_repo_label = forward(repos.remove_repo_label)
    issue_labels = forward(repos.issue_labels)
    repo_labels = forward(repos.repo_labels)
    put_file = forward(contents.put_file)
    remove_file = forward(contents.remove_file)
    add_issue = forward(issues_area.add_issue)
    add_comment_directly = forward(issues_area.add_comment_directly)
    comments = forward(issues_area.comments)
    issues = forward(issues_area.issues)
    add_issue_event = forward(events.add_issue_event)
    issue_events = forward(events.issue_events)
    edit_issue = forward(edits.edit_issue)
    add_reaction = forward(edits.add_reaction)
    add_pull_request = forward(ci.add_pull_request)
    add_check_run = forward(ci.add_check_run)
    add_workflow_run = forward(ci.add_workflow_run)
    issue_suggestions = forward(suggestions.issue_suggestions)
    resolve_suggestion = forward(suggestions.resolve)

    def behave(
        self, *, refuse_object_form: bool | None = None, honour_if_match: bool | None = None
    ) -> None:
        """Refuse the object form of the issue update (an older Enterprise Server), or refuse a
        write whose ``If-Match`` is stale (``suggestions.py``)."""
        with self.state.lock:
            if refuse_object_form is not None:
                self.state.refuse_object_form = refuse_object_form
            if honour_if_match is not None:
                self.state.honour_if_match = honour_if_match

    def label_intent(self, full_name: str, number: int, name: str) -> tuple[str, str | None] | None:
        """The rationale and confidence label ``name`` was last applied with, if any."""
        with self.state.lock:
            return self.state.issue(full_name, number).label_intents.get(name.lower())


def main(argv: list[str] | None = None) -> None:
    """Serve a seeded fake until Ctrl-C (handy for demos: point ResolveFlow at the URL)."""
    parser = argparse.ArgumentParser(description="Run a fake GitHub API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--repo", action="append", default=[], help="owner/name (repeatable)")
    parser.add_argument("--labels", default="bug,needs-triage", help="comma-separated")
    parser.add_argument("--issues", default="1", help="comma-separated issue numbers to seed")
    args = parser.parse_args(argv)
    server = FakeGitHubServer(port=args.port)
    for full_name in args.repo or ["acme/widgets"]:
        server.add_repo(full_name, [n for n in args.labels.split(",") if n])
        for number in (int(n) for n in args.issues.split(",") if n):
            server.add_issue(full_name, number, title=f"Issue {number}")
    with server:
        print(server.url, flush=True)  # noqa: T201
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
