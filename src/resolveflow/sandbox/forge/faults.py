"""Faults ``FakeGitHubServer`` can inject, and the queue that matches them to requests.

Each fault reproduces something that makes exactly-once execution hard: a write that is applied
but never answered, answered too late, answered with garbage, or refused with a rate limit. The
front end (``frontend.Frontend``) decides how to act on each one; the canned replies live here.

``Trickle`` answers slowly enough to outlast any per-operation timeout without ever idling
long enough to trip one.

Every fault works for reads as well: ``inject(fault, method="GET", path=...)``. For reads,
``Status`` gives 404/410/5xx (any body and content type, e.g. an HTML error page),
``Malformed2xx`` a body that is not the expected shape at all, and ``TamperedBody`` the real answer
with one field removed or given the wrong type.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.loopback import Reply


@dataclass(frozen=True)
class Delay:
    """Sleep (past the client's timeout), then apply the write and answer.

    With ``apply_write=False`` the request is dropped after the sleep: nothing applied, no answer.
    """

    seconds: float
    apply_write: bool = True


@dataclass(frozen=True, eq=False)
class Hold:
    """Keep the request until the test sets ``release`` (or the server stops), then serve it as
    usual: lets a test watch a page while a write is in flight, without waiting on a clock."""

    release: threading.Event
    arrived: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class DropAfterWrite:
    """Apply the write, then close the connection without sending a response."""


@dataclass(frozen=True)
class HangAfterWrite:
    """Apply the write, set ``server.write_accepted``, then never answer (until ``stop()``)."""


@dataclass(frozen=True)
class Trickle:
    """Apply the write, send the status line and headers at once, then the body one byte at a
    time, ``interval`` seconds before each byte.

    Each socket read then succeeds well within a per-operation timeout (httpx's ``read``
    timeout restarts with every byte) while the whole answer takes ``interval`` times its length:
    only a wall-clock deadline bounds it. It ends as soon as the server stops (the connection is
    cut). With ``apply_write=False`` a write is not applied and the trickled answer is GitHub's
    502 instead; a read always runs.
    """

    interval: float
    apply_write: bool = True


@dataclass(frozen=True)
class Status:
    """Answer with ``code`` and ``body`` (default: a GitHub error JSON); optionally apply first."""

    code: int
    body: str | dict[str, Any] | None = None
    apply_write: bool = False
    content_type: str = "application/json"
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class SecondaryRateLimit:
    """403 with ``Retry-After`` and GitHub's secondary-rate-limit message; nothing applied."""

    retry_after: int = 1


@dataclass(frozen=True)
class PrimaryRateLimit:
    """403 with ``x-ratelimit-remaining: 0`` and a reset ``reset_in`` seconds from now."""

    reset_in: int = 1


@dataclass(frozen=True)
class Malformed2xx:
    """Apply the write, then answer 2xx with a body that fails schema validation (or isn't JSON)."""

    apply_write: bool = True
    invalid_json: bool = False


@dataclass(frozen=True)
class TamperedBody:
    """Run the request normally, then damage its 2xx JSON answer before sending it.

    ``remove`` deletes fields and ``replace`` sets them (e.g. a wrong type), each addressed by a
    dotted path: ``"head.sha"``, ``"check_runs.0.status"``; ``*`` means every list element
    (``"*.created_at"`` on a list endpoint). A path that does not exist is a bug in the test and
    makes the fake answer 500. Non-2xx and non-JSON answers are sent unchanged.
    """

    remove: tuple[str, ...] = ()
    replace: Mapping[str, Any] = field(default_factory=dict)


Fault = (
    Delay | DropAfterWrite | HangAfterWrite | Status | SecondaryRateLimit | PrimaryRateLimit
) | (Malformed2xx | TamperedBody | Trickle | Hold)


@dataclass
class _Injected:
    fault: Fault
    method: str | None
    path: re.Pattern[str] | None
    remaining: int

    def matches(self, method: str, target: str) -> bool:
        if self.method is not None and self.method.upper() != method:
            return False
        return self.path is None or self.path.search(target) is not None


class FaultQueue:
    """Injected faults, consumed in the order they were injected.

    Not thread-safe on its own: ``Frontend`` calls it with its lock held.
    """

    def __init__(self) -> None:
        self._faults: list[_Injected] = []

    def add(self, fault: Fault, method: str | None, path: str | None, times: int) -> None:
        """Queue ``fault`` for the next ``times`` requests matching ``method`` and ``path``."""
        pattern = re.compile(path) if path is not None else None
        self._faults.append(_Injected(fault, method, pattern, times))

    def take(self, method: str, target: str) -> Fault | None:
        """The first queued fault matching this request (using up one of its repeats), if any."""
        for injected in self._faults:
            if injected.matches(method, target):
                injected.remaining -= 1
                if injected.remaining <= 0:
                    self._faults.remove(injected)
                return injected.fault
        return None

    @property
    def pending(self) -> int:
        return sum(f.remaining for f in self._faults)


# --- canned replies ------------------------------------------------------------------------


def status_reply(fault: Status) -> Reply:
    headers = dict(fault.headers or {})
    if fault.body is None:
        payload = payloads.error(f"Injected {fault.code}", status=fault.code)
        return Reply(fault.code, payload, headers=headers)
    if isinstance(fault.body, dict):
        return Reply(fault.code, fault.body, content_type=fault.content_type, headers=headers)
    raw = fault.body.encode()
    return Reply(fault.code, raw=raw, content_type=fault.content_type, headers=headers)


def secondary_rate_limit_reply(fault: SecondaryRateLimit) -> Reply:
    reply = Reply(403, payloads.error(payloads.SECONDARY_RATE_LIMIT_MESSAGE))
    reply.headers["Retry-After"] = str(fault.retry_after)
    return reply


def malformed_reply(fault: Malformed2xx, method: str) -> Reply:
    raw = b'{"id": 1, "unterminated' if fault.invalid_json else b'{"id": 1}'
    return Reply(201 if method == "POST" else 200, raw=raw)


def tampered_reply(fault: TamperedBody, reply: Reply) -> Reply:
    """``reply`` with ``fault`` applied to a copy of its JSON payload (2xx JSON only)."""
    if not 200 <= reply.status < 300 or reply.raw is not None:
        return reply
    payload = copy.deepcopy(reply.payload)
    for path in fault.remove:
        _edit(payload, path.split("."), path, delete=True)
    for path, value in fault.replace.items():
        _edit(payload, path.split("."), path, value=value)
    return Reply(reply.status, payload, content_type=reply.content_type, headers=reply.headers)


def _edit(
    node: Any, parts: list[str], path: str, *, delete: bool = False, value: Any = None
) -> None:
    head, rest = parts[0], parts[1:]
    if head == "*":
        if not isinstance(node, list):
            raise KeyError(f"TamperedBody: {path!r}: '*' needs a list")
        for index in range(len(node)):
            _edit(node, [str(index), *rest], path, delete=delete, value=value)
        return
    try:
        key: Any = int(head) if isinstance(node, list) else head
        child = node[key]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise KeyError(f"TamperedBody: {path!r} does not exist in the answer") from exc
    if rest:
        _edit(child, rest, path, delete=delete, value=value)
    elif delete:
        del node[key]
    else:
        node[key] = value
