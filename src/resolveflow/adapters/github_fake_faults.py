"""Faults ``FakeGitHubServer`` can inject, and the queue that matches them to requests.

Each fault reproduces something that makes exactly-once execution hard: a write that is applied
but never answered, answered too late, answered with garbage, or refused with a rate limit. The
HTTP handler in ``github_fake`` decides how to act on each one; the canned replies live here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resolveflow.adapters import github_fake_payloads as payloads
from resolveflow.adapters.github_fake_state import FakeReply


@dataclass(frozen=True)
class Delay:
    """Sleep (past the client's timeout), then apply the write and answer.

    With ``apply_write=False`` the request is dropped after the sleep: nothing applied, no answer.
    """

    seconds: float
    apply_write: bool = True


@dataclass(frozen=True)
class DropAfterWrite:
    """Apply the write, then close the connection without sending a response."""


@dataclass(frozen=True)
class HangAfterWrite:
    """Apply the write, set ``server.write_accepted``, then never answer (until ``stop()``)."""


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


Fault = (
    Delay | DropAfterWrite | HangAfterWrite | Status | SecondaryRateLimit | PrimaryRateLimit
) | Malformed2xx


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

    Not thread-safe on its own: ``FakeGitHubServer`` calls it with its lock held.
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


def status_reply(fault: Status) -> FakeReply:
    headers = dict(fault.headers or {})
    if fault.body is None:
        payload = payloads.error(f"Injected {fault.code}", status=fault.code)
        return FakeReply(fault.code, payload, headers=headers)
    if isinstance(fault.body, dict):
        return FakeReply(fault.code, fault.body, content_type=fault.content_type, headers=headers)
    raw = fault.body.encode()
    return FakeReply(fault.code, raw=raw, content_type=fault.content_type, headers=headers)


def secondary_rate_limit_reply(fault: SecondaryRateLimit) -> FakeReply:
    reply = FakeReply(403, payloads.error(payloads.SECONDARY_RATE_LIMIT_MESSAGE))
    reply.headers["Retry-After"] = str(fault.retry_after)
    return reply


def malformed_reply(fault: Malformed2xx, method: str) -> FakeReply:
    raw = b'{"id": 1, "unterminated' if fault.invalid_json else b'{"id": 1}'
    return FakeReply(201 if method == "POST" else 200, raw=raw)
