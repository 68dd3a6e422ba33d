"""How a failed GitLab call is classified, into the one error tree (as ``adapters/github/errors``).

Rate limited and rejected mean nothing was written; unavailable means the request never left;
anything else after the request may have left (a timeout, a 5xx, a dropped connection, an answer
that is not JSON) is outcome unknown. When in doubt: unknown, never "not sent". Messages never
carry the token.
"""

from __future__ import annotations

import gitlab.exceptions
import requests
import urllib3.exceptions

from resolveflow.adapters.base import Call
from resolveflow.adapters.gitlab.deadline import DeadlinePassed
from resolveflow.errors import (
    ProviderError,
    ProviderOutcomeUnknown,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)

DEFAULT_RATE_LIMIT_WAIT = 60.0  # no Retry-After: wait a minute, as for GitHub


class RateLimitedResponse(ProviderRateLimited):
    """Raised by the client's response hook on a 429, before python-gitlab would sleep on it;
    ``translate`` names the call in it."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"429, retry after {retry_after:g} s", retry_after_seconds=retry_after)
        self.retry_after = retry_after


def gitlab_call(operation: str, method: str, path: str, write: bool) -> Call:
    """A GitLab call: its messages start with "gitlab", so nobody takes it for GitHub's."""
    return Call(operation, method, path, write, system="gitlab")


def retry_after_seconds(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else DEFAULT_RATE_LIMIT_WAIT
    except ValueError:
        return DEFAULT_RATE_LIMIT_WAIT


def _never_sent(exc: requests.exceptions.ConnectionError) -> bool:
    """Refused or unresolvable connections fail before a byte of the request left."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    reason = exc.args[0] if exc.args else None
    inner = getattr(reason, "reason", reason)
    return isinstance(
        inner, urllib3.exceptions.NewConnectionError | urllib3.exceptions.NameResolutionError
    )


def translate(call: Call, exc: Exception) -> ProviderError:
    """The domain error for ``exc``, raised by python-gitlab or requests during ``call``."""
    if isinstance(exc, RateLimitedResponse):
        return ProviderRateLimited(
            f"{call}: GitLab rate limit, retry after {exc.retry_after:g} s",
            retry_after_seconds=exc.retry_after,
        )
    if isinstance(exc, gitlab.exceptions.GitlabError) and exc.response_code is not None:
        status = exc.response_code
        if 400 <= status < 500 and status not in {408, 429}:
            return ProviderRejected(f"{call}: GitLab refused it ({status})", status=status)
        return ProviderOutcomeUnknown(f"{call}: GitLab answered {status}{call.maybe_written}")
    if isinstance(exc, requests.exceptions.ConnectionError) and _never_sent(exc):
        return ProviderUnavailable(f"{call}: GitLab could not be reached; nothing was sent.")
    if isinstance(exc, DeadlinePassed):
        return ProviderOutcomeUnknown(
            f"{call}: the answer outlasted the request deadline{call.maybe_written}"
        )
    if isinstance(exc, requests.exceptions.Timeout):
        return ProviderOutcomeUnknown(f"{call}: no answer in time{call.maybe_written}")
    if isinstance(exc, requests.exceptions.RequestException):
        return ProviderOutcomeUnknown(f"{call}: the connection failed{call.maybe_written}")
    return ProviderOutcomeUnknown(f"{call}: unreadable answer{call.maybe_written}")
