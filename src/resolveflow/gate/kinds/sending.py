"""How a failed write request is recorded; the same for every kind (``adapters/github/protocol``
states the error contract)."""

from __future__ import annotations

import time
from collections.abc import Callable
from uuid import UUID

from resolveflow.domain.records import Execution
from resolveflow.domain.vocabulary import AttemptStep
from resolveflow.errors import (
    InvalidInput,
    InvalidTransition,
    LeaseLost,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)
from resolveflow.gate.domain.actions import AnyAction, parse_action
from resolveflow.gate.domain.pace import PaceTarget
from resolveflow.gate.kinds.base import Prepared
from resolveflow.gate.lease import Attempt
from resolveflow.gate.recorder import Recorder
from resolveflow.gate.store.executions import SentWith


def begin(
    record: Recorder,
    execution: Execution,
    step: AttemptStep,
    sent_with: SentWith,
    started: Attempt | None = None,
    *,
    paced_as: PaceTarget,
) -> Attempt | Execution:
    """The attempt a request goes out under: ``started`` (recorded with the claim, its pace slot
    taken there) or one recorded now, after a slot in ``paced_as``'s pace for this credential.
    Returns when the request may leave. Instead, the execution: unchanged when the lease was
    lost, given back to the queue to wait for a later slot, or as recorded when the time to
    start the request ran out (a stall: nothing is sent)."""
    attempt = started
    if attempt is None:
        wait = 0.0
        if record.pacer is not None:
            admitted = record.pacer.admit_now(execution, paced_as, sent_with)
            if isinstance(admitted, Execution):
                return admitted
            wait = admitted.wait_seconds
        try:
            attempt = record.attempt_started(execution, step, sent_with, wait_seconds=wait)
        except LeaseLost:
            return execution
    delay = attempt.send_at - record.clock()
    if delay > 0:
        time.sleep(delay)  # the slot is near: waiting here keeps the queue's order
    if record.clock() > attempt.send_by:
        return record.too_late(execution, attempt)
    return attempt


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


def opened_earlier(
    record: Recorder,
    prepared: Prepared,
    action: AnyAction,
    find: Callable[[AnyAction, str], tuple[str, str] | None],
) -> Execution | None:
    """For the kinds that open something new: an earlier execution of this digest or lineage may
    have opened it after all. ``find(earlier action, its execution id)`` gives what it opened
    ((ref, url)) or None. The same action: delivered earlier; another version: refused, since
    one issue of the lineage exists. None when no earlier execution opened anything."""
    execution = prepared.execution
    for prior in prepared.prior:
        earlier = parse_action(prior.action)
        found = find(earlier, str(prior.id))
        if found is None:
            continue
        ref, url = found
        if earlier != action:
            return record.refused(
                execution,
                InvalidTransition(
                    f"an earlier version (execution {prior.id}) opened {url} after "
                    "all; propose again if another issue is wanted"
                ),
            )
        return record.delivered_earlier(execution, prior.id, final=True, created=(ref, url))
    return None
