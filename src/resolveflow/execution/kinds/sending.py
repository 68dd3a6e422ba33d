"""How a failed write request is recorded; the same for every kind (``adapters/github/protocol``
states the error contract)."""

from __future__ import annotations

from uuid import UUID

from resolveflow.domain.records import Execution
from resolveflow.errors import (
    InvalidInput,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)
from resolveflow.execution.outcomes import Recorder


def send_outcome(
    record: Recorder, execution: Execution, attempt_id: UUID, exc: ProviderError | InvalidInput
) -> Execution:
    """Rate limited or unreachable: nothing was written, try later. Refused: definitely not
    written. Anything else (timeout, 5xx, lost or malformed answer): unknown, for reconciliation."""
    if isinstance(exc, ProviderRateLimited):
        return record.rate_limited(execution, attempt_id, exc)
    if isinstance(exc, ProviderRejected | InvalidInput):
        return record.rejected(execution, attempt_id, exc)
    if isinstance(exc, ProviderUnavailable):
        return record.unavailable(execution, attempt_id, exc)
    return record.unknown(execution, attempt_id, exc)
