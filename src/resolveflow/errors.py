"""Every error ResolveFlow raises on purpose, in six categories.

One base class, ``ResolveFlowError``, and directly under it one class per category. Every other
error derives from exactly one category, so each edge maps a category once: the CLI to an exit
code and a one-line message (``cli/__init__.py``), the web to an HTTP status and a page or JSON
body (``web/errors.py``), with a few more specific statuses where HTTP has a word for the case
(401, 410, 429, 502). Raising ``ResolveFlowError`` itself means "failed, and we do not know why":
the edges treat it as an internal error. See docs/errors.md for the tree and both mappings.

How the existing errors were sorted, and why:

- **invalid input**: the request itself is wrong; sending it again unchanged fails again.
- **not found**: the record does not exist *for this principal* (another tenant's records are
  reported as missing, never as forbidden, so ids do not leak across tenants).
- **forbidden**: who is asking decides the answer. Failed authentication (``AuthenticationFailed``,
  a bad webhook signature, an unreadable stored token), a missing role (``NotAuthorized``) and an
  action the policy no longer allows (``PolicyViolation``).
- **conflict**: the request was fine but the record has moved on: decided, superseded, expired,
  executed, leased or resumed by someone else, or its stored text no longer hashes to the digest
  (``DigestMismatch``: the approver must look at the current version, so it is a conflict with the
  stored record rather than bad input).
- **unavailable**: something outside the request failed or said "not now": the database, GitHub,
  the language model, a daily limit. Trying again later may work.
- **configuration**: the operator must change a setting (or rebuild the index) first.

Each subclass's docstring is its default message, so callers can raise ``NotFound()`` and still
print something a person understands. This module imports only the standard library: the domain
uses it (``scripts/check_layers.py`` allows exactly that).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar


class ErrorCategory(StrEnum):
    """What kind of failure an error is; the edges map these, not individual classes."""

    INVALID_INPUT = "invalid_input"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    CONFLICT = "conflict"
    UNAVAILABLE = "unavailable"
    CONFIGURATION = "configuration"


class ResolveFlowError(Exception):
    """ResolveFlow could not complete the request."""

    # Set by the six category classes only; subclasses inherit theirs.
    category: ClassVar[ErrorCategory | None] = None

    def __init__(self, message: str | None = None, **context: Any) -> None:
        self.message = message or (type(self).__doc__ or "").strip().splitlines()[0]
        self.context = context
        super().__init__(self.message)


def one_line(text: str, limit: int = 500) -> str:
    """``text`` as one line of at most ``limit`` characters, for an error message at an edge
    (messages may quote GitHub or a model, which can hold newlines and pages of text)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- the categories ----------------------------------------------------------------------


class InvalidInput(ResolveFlowError):
    """The input is not valid."""

    category = ErrorCategory.INVALID_INPUT


class NotFound(ResolveFlowError):
    """No such record (or it belongs to another tenant)."""

    category = ErrorCategory.NOT_FOUND


class Forbidden(ResolveFlowError):
    """You may not do that."""

    category = ErrorCategory.FORBIDDEN


class Conflict(ResolveFlowError):
    """The record has changed in a way that does not allow this request."""

    category = ErrorCategory.CONFLICT


class Unavailable(ResolveFlowError):
    """A system ResolveFlow depends on is unavailable; try again later."""

    category = ErrorCategory.UNAVAILABLE


class ConfigurationError(ResolveFlowError):
    """The configuration is not valid."""

    category = ErrorCategory.CONFIGURATION


ConfigError = ConfigurationError  # the older name, used across the code base

CATEGORIES: dict[ErrorCategory, type[ResolveFlowError]] = {
    ErrorCategory.INVALID_INPUT: InvalidInput,
    ErrorCategory.NOT_FOUND: NotFound,
    ErrorCategory.FORBIDDEN: Forbidden,
    ErrorCategory.CONFLICT: Conflict,
    ErrorCategory.UNAVAILABLE: Unavailable,
    ErrorCategory.CONFIGURATION: ConfigurationError,
}


def category_class(exc: BaseException) -> type[ResolveFlowError]:
    """The category class of ``exc`` (``ResolveFlowError`` when it has none), to wrap an error
    with more context without changing how the edges report it."""
    if isinstance(exc, ResolveFlowError) and exc.category is not None:
        return CATEGORIES[exc.category]
    return ResolveFlowError


# --- records -----------------------------------------------------------------------------


class AlreadyExists(Conflict):
    """A record with that name already exists."""


# --- authority ---------------------------------------------------------------------------


class AuthenticationFailed(Forbidden):
    """The API token is missing, malformed or unknown."""


class NotAuthorized(Forbidden):
    """This principal may not do that."""


class PolicyViolation(Forbidden):
    """The action is no longer allowed by the current policy."""


class AppInstallationRefused(Forbidden):
    """The GitHub App does not act for this tenant in that repository; nothing was read or written."""


# --- approvals ---------------------------------------------------------------------------


class DigestMismatch(Conflict):
    """The digest does not match the stored proposal; review the current version and approve its digest."""


class AlreadyDecided(Conflict):
    """This proposal version has already been approved or rejected."""


class SupersededProposal(Conflict):
    """A newer version of this proposal exists; only the latest version can be decided or executed."""


class ApprovalExpired(Conflict):
    """The approval (or the window to approve) has expired."""


class AlreadyExecuted(Conflict):
    """This exact action has already been approved for execution."""


# --- execution ---------------------------------------------------------------------------


class InvalidTransition(Conflict):
    """That execution state change is not allowed."""


class LeaseLost(Conflict):
    """Another owner holds this execution's lease; the result was not recorded."""


class RunBusy(Conflict):
    """The run is already being resumed by another process."""


# --- outside systems ---------------------------------------------------------------------


class StoreUnavailable(Unavailable):
    """The database is unreachable."""


class ProviderError(Unavailable):
    """The outside system (GitHub) returned an error."""


class ProviderRateLimited(ProviderError):
    """The outside system rate-limited the request; nothing was written."""

    def __init__(
        self, message: str | None = None, *, retry_after_seconds: float, **context: Any
    ) -> None:
        super().__init__(message, **context)
        self.retry_after_seconds = retry_after_seconds


class ProviderRejected(ProviderError):
    """The outside system definitely refused the request; nothing was written."""

    def __init__(self, message: str | None = None, *, status: int, **context: Any) -> None:
        super().__init__(message, **context)
        self.status = status


class ProviderOutcomeUnknown(ProviderError):
    """The request may or may not have taken effect (timeout, 5xx, lost or malformed response)."""


class ProviderUnavailable(ProviderError):
    """The outside system could not be reached; nothing was sent."""
