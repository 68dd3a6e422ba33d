"""A wall-clock deadline for every GitLab request, as the GitHub session has one
(``adapters/github/session.py``, ``DEADLINE_TIMEOUTS``).

requests' timeout is per socket operation: a server that answers one byte at a time, each well
within the read timeout, is never cut by it. ``DeadlineSession`` reads each response's body under
a timer that, at the deadline, shuts the socket for reading (urllib3's ``HTTPResponse.shutdown``,
made to interrupt a blocked read from another thread); the read then fails and the request raises
``DeadlinePassed`` (outcome unknown, in the error tree), so a write is never resent.

The status line and headers are read within the per-read timeouts, each clamped to what is left
of the deadline (the GitHub session bounds them the same way).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import requests

from resolveflow.errors import ProviderOutcomeUnknown


class DeadlinePassed(ProviderOutcomeUnknown):
    """The answer outlasted the request's wall-clock deadline (the request had been sent).

    In the error tree rather than a ``requests`` timeout: python-gitlab retries its own timeouts
    when retries are on, and a write whose deadline has passed must never be sent again."""


def _clamped(timeout: Any, remaining: float) -> Any:
    """requests' ``timeout`` (None, a number, or (connect, read)) with each part at most
    ``remaining`` seconds."""
    if isinstance(timeout, tuple):
        return tuple(remaining if part is None else min(part, remaining) for part in timeout)
    return remaining if timeout is None else min(float(timeout), remaining)


def _cut(response: requests.Response) -> None:
    # Already read and released to the pool, or closed: nothing is left to cut.
    with contextlib.suppress(AttributeError, ValueError, RuntimeError, OSError):
        response.raw.shutdown()


class DeadlineSession(requests.Session):
    """A ``requests.Session`` whose every request is over ``deadline_seconds`` after it starts."""

    def __init__(self, deadline_seconds: float) -> None:
        super().__init__()
        self.deadline_seconds = deadline_seconds

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        at = time.monotonic() + self.deadline_seconds
        kwargs["timeout"] = _clamped(kwargs.get("timeout"), self.deadline_seconds)
        stream = kwargs.pop("stream", False)
        response = super().send(request, stream=True, **kwargs)
        if not stream:  # python-gitlab never streams what ResolveFlow asks for
            read_by(response, at)
        return response


def read_by(response: requests.Response, at: float) -> None:
    """Read the whole body, cutting the connection at ``at`` (a ``time.monotonic()`` value)."""
    timer = threading.Timer(max(0.0, at - time.monotonic()), _cut, args=(response,))
    timer.daemon = True
    timer.start()
    try:
        _ = response.content
    except requests.RequestException:
        if time.monotonic() >= at:
            raise DeadlinePassed("the answer outlasted the request deadline") from None
        raise
    finally:
        timer.cancel()
