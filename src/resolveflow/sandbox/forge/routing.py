"""Route tables: ``(method, path regex) -> handler(state, request) -> Reply``.

Each area of the forge (issues, repositories, CI, OAuth) is a module of plain handler functions
over its state plus a list of ``Route`` naming them. ``bind`` ties a list to its state and lock,
so the dispatcher can call every handler the same way without knowing whose state it is. A handler
runs with its state's lock held, and may raise ``payloads.Rejected`` to answer an error the way
GitHub would.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import unquote

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.model import FakeRequest
from resolveflow.sandbox.loopback import Reply

S = TypeVar("S")

REPO = r"/repos/([^/]+/[^/]+)"  # the ``owner/name`` every repository path starts with


@dataclass(frozen=True)
class Route(Generic[S]):
    """One endpoint: ``pattern`` must match the whole path; its groups become ``request.params``.

    A ``public`` route needs no token and is outside the API's bookkeeping: it is not counted,
    not logged as a write, and never consumes an injected fault (the OAuth sign-in pages).
    """

    method: str
    pattern: re.Pattern[str]
    handler: Callable[[S, FakeRequest], Reply]
    public: bool = False


def route(
    method: str, path: str, handler: Callable[[S, FakeRequest], Reply], *, public: bool = False
) -> Route[S]:
    """A ``Route`` for ``path``, a regex anchored at both ends."""
    return Route(method, re.compile(f"^{path}$"), handler, public)


@dataclass(frozen=True)
class BoundRoute:
    """A route tied to its state and lock: ``call(request)`` is all the dispatcher needs."""

    method: str
    pattern: re.Pattern[str]
    call: Callable[[FakeRequest], Reply]
    public: bool


def bind(routes: Iterable[Route[S]], state: S, lock: threading.Lock) -> list[BoundRoute]:
    return [
        BoundRoute(r.method, r.pattern, _locked(r.handler, state, lock), r.public) for r in routes
    ]


def _locked(
    handler: Callable[[S, FakeRequest], Reply], state: S, lock: threading.Lock
) -> Callable[[FakeRequest], Reply]:
    def call(request: FakeRequest) -> Reply:
        with lock:
            try:
                return handler(state, request)
            except payloads.Rejected as exc:
                return Reply(exc.status, exc.payload)

    return call


def find(
    table: Sequence[BoundRoute], method: str, path: str
) -> tuple[BoundRoute, tuple[str, ...]] | None:
    """The first route for ``method`` whose pattern matches ``path``, with its decoded groups."""
    for candidate in table:
        match = candidate.pattern.match(path)
        if match and candidate.method == method:
            return candidate, tuple(unquote(group) for group in match.groups())
    return None
