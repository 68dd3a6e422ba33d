"""The only place where ResolveFlow's errors become HTTP statuses."""

from __future__ import annotations

from resolveflow import errors as e
from resolveflow.service.limits import LimitExceeded
from resolveflow.service.webhooks import SignatureInvalid

# Most specific first: the first matching class wins.
_STATUS: list[tuple[type[e.ResolveFlowError], int]] = [
    (LimitExceeded, 429),
    (SignatureInvalid, 401),
    (e.AuthenticationFailed, 401),
    (e.NotFound, 404),
    (e.NotAuthorized, 403),
    (e.PolicyViolation, 403),
    (e.DigestMismatch, 409),
    (e.AlreadyDecided, 409),
    (e.AlreadyExecuted, 409),
    (e.AlreadyExists, 409),
    (e.SupersededProposal, 409),
    (e.InvalidTransition, 409),
    (e.RunBusy, 409),
    (e.ApprovalExpired, 410),
    (e.InvalidInput, 400),
    (e.ConfigError, 503),
    (e.StoreUnavailable, 503),
    (e.ProviderRateLimited, 503),
    (e.ProviderError, 502),
]


def status_for(exc: e.ResolveFlowError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 500
