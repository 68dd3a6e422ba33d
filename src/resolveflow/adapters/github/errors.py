"""How a failed GitHub call is classified, for ``GitHubKitClient``.

The contract (see ``adapters.github``) is about what may have happened, because the executor's
exactly-once logic depends on it: rate limited and rejected mean nothing was written; outcome
unknown means a write may have landed; unavailable means the request was never sent. When in
doubt we say outcome unknown, never "not sent". Messages are built here without the token, and
``scrub`` masks any token GitHub echoed back before an error is raised or logged.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterable
from typing import Any

import httpx
import pydantic

from resolveflow.adapters.base import Call
from resolveflow.errors import (
    ProviderError,
    ProviderOutcomeUnknown,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)

MIN_SECRET_LENGTH = 8
DEFAULT_RATE_LIMIT_WAIT = 60.0  # GitHub: "wait at least one minute" when no header says more

# httpx failures that happen before any byte of the request reached GitHub.
_NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
    httpx.InvalidURL,
)


def status_error(call: Call, response: httpx.Response) -> ProviderError:
    """Map a 4xx/5xx answer: rate limited, definitely rejected, or (5xx) outcome unknown."""
    status = response.status_code
    message = _github_message(response)
    if status in (403, 429):
        wait = _rate_limit_wait(response, message)
        if wait is not None:
            return ProviderRateLimited(
                f"{call}: GitHub rate limit ({status}), retry after {wait:.0f}s: {message}",
                retry_after_seconds=wait,
                status=status,
                **call.context(),
            )
    if 400 <= status < 500:
        return ProviderRejected(
            f"{call}: GitHub refused ({status}): {message}", status=status, **call.context()
        )
    return ProviderOutcomeUnknown(
        f"{call}: GitHub failed ({status}): {message}{call.maybe_written}",
        status=status,
        **call.context(),
    )


def transport_error(call: Call, cause: BaseException) -> ProviderError:
    """Connect failures never reached GitHub; every other transport failure might have."""
    detail = f"{type(cause).__name__}: {cause}".rstrip(": ")
    if isinstance(cause, _NOT_SENT):
        return ProviderUnavailable(f"{call}: could not reach GitHub ({detail}).", **call.context())
    return ProviderOutcomeUnknown(
        f"{call}: no usable answer from GitHub ({detail}){call.maybe_written}", **call.context()
    )


def invalid_body_error(
    call: Call, status: int, exc: Exception, content_type: str | None = None
) -> ProviderError:
    """A 2xx whose body fails schema validation: for a write, the write may have been applied.

    For a read it is a plain ``ProviderError`` (nothing was written, and asking again is unlikely
    to help until GitHub or the proxy in between is fixed).
    """
    message = f"{call}: GitHub answered {status} with {_describe_invalid(exc, content_type)}"
    if call.write:
        return ProviderOutcomeUnknown(
            f"{message}; the write may have been applied.", **call.context()
        )
    return ProviderError(message, **call.context())


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """Mask tokens. Strings shorter than 8 characters are not credible tokens (GitHub's are 40+)
    and masking them would mangle every message, e.g. a test token ``"t"``."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, "***")
    return text


def _rate_limit_wait(response: httpx.Response, message: str) -> float | None:
    """Seconds to wait if this 403/429 is a rate limit, else ``None`` (a plain refusal).

    GitHub's rules: ``Retry-After`` wins; else ``x-ratelimit-remaining: 0`` means wait until
    ``x-ratelimit-reset``; else a 429 or a "rate limit" message means wait at least a minute.
    """
    headers = response.headers
    retry_after = _parse_retry_after(headers.get("retry-after"))
    if retry_after is not None:
        return retry_after
    if headers.get("x-ratelimit-remaining", "").strip() == "0":
        return _seconds_until(headers.get("x-ratelimit-reset"))
    if "retry-after" in headers or response.status_code == 429:
        return DEFAULT_RATE_LIMIT_WAIT
    return DEFAULT_RATE_LIMIT_WAIT if "rate limit" in message.lower() else None


def _parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` is delta-seconds (what GitHub sends) or an HTTP-date."""
    if value is None:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _seconds_until(reset: str | None) -> float:
    try:
        return max(0.0, float(reset or "") - time.time())
    except ValueError:
        return DEFAULT_RATE_LIMIT_WAIT


def _github_message(response: httpx.Response) -> str:
    """GitHub's ``message`` (plus validation error codes) or a short note on the body."""
    try:
        payload = response.json()
    except ValueError:
        kind = response.headers.get("content-type", "unknown content").split(";")[0]
        return f"non-JSON body ({kind}, {len(response.content)} bytes)"
    if not isinstance(payload, dict) or not isinstance(payload.get("message"), str):
        return "no message"
    message: str = payload["message"]
    errors = payload.get("errors")
    if isinstance(errors, list) and errors:
        details = [_error_detail(e) for e in errors[:3]]
        message += " (" + "; ".join(d for d in details if d) + ")"
    return message[:500]


def _error_detail(error: Any) -> str:
    if not isinstance(error, dict):
        return str(error)[:100]
    parts = (error.get("field"), error.get("code"), error.get("message"))
    return " ".join(str(part) for part in parts if part)


def _describe_invalid(exc: Exception, content_type: str | None = None) -> str:
    """Summarise a schema failure without echoing the (possibly large) body."""
    kind = (content_type or "no content type").split(";")[0].strip()
    not_json = f"a body that is not valid JSON ({kind})"
    if isinstance(exc, pydantic.ValidationError):
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            return not_json
        where = ".".join(str(part) for part in first["loc"]) or "body"
        count = exc.error_count()
        noun = "error" if count == 1 else "errors"
        return (
            f"a body that fails schema validation ({count} {noun}, first: {where} {first['type']})"
        )
    return not_json
