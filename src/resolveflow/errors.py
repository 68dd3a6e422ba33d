"""Every error ResolveFlow raises on purpose.

One base class; each subclass's docstring is its default message, so callers can raise
``NotFound()`` and still print something a person understands. Mapping to HTTP statuses or
exit codes happens at the edges (``web/``, ``cli/``), never here.
"""

from __future__ import annotations

from typing import Any


class ResolveFlowError(Exception):
    """ResolveFlow could not complete the request."""

    def __init__(self, message: str | None = None, **context: Any) -> None:
        self.message = message or (type(self).__doc__ or "").strip().splitlines()[0]
        self.context = context
        super().__init__(self.message)


# --- input and configuration -------------------------------------------------------------


class InvalidInput(ResolveFlowError):
    """The input is not valid."""


class ConfigError(ResolveFlowError):
    """The configuration is not valid."""


class NotFound(ResolveFlowError):
    """No such record (or it belongs to another tenant)."""


class AlreadyExists(ResolveFlowError):
    """A record with that name already exists."""


# --- authority ---------------------------------------------------------------------------


class AuthenticationFailed(ResolveFlowError):
    """The API token is missing, malformed or unknown."""


class NotAuthorized(ResolveFlowError):
    """This principal may not do that."""


# --- approvals ---------------------------------------------------------------------------


class DigestMismatch(ResolveFlowError):
    """The digest does not match the stored proposal; review the current version and approve its digest."""


class AlreadyDecided(ResolveFlowError):
    """This proposal version has already been approved or rejected."""


class SupersededProposal(ResolveFlowError):
    """A newer version of this proposal exists; only the latest version can be decided or executed."""


class ApprovalExpired(ResolveFlowError):
    """The approval (or the window to approve) has expired."""


class AlreadyExecuted(ResolveFlowError):
    """This exact action has already been approved for execution."""


# --- execution ---------------------------------------------------------------------------


class InvalidTransition(ResolveFlowError):
    """That execution state change is not allowed."""


class PolicyViolation(ResolveFlowError):
    """The action is no longer allowed by the current policy."""


class LeaseLost(ResolveFlowError):
    """Another owner holds this execution's lease; the result was not recorded."""


class RunBusy(ResolveFlowError):
    """The run is already being resumed by another process."""


# --- outside systems ---------------------------------------------------------------------


class StoreUnavailable(ResolveFlowError):
    """The database is unreachable."""


class ProviderError(ResolveFlowError):
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
