"""An execution's attempt outcome, state change and audit, in one transaction. Every state change
goes through ``executions.finish``/``release_for_retry``/``record_comment``, which only match while
this owner holds the lease: a late owner records its outcome but cannot overwrite the state."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptOutcome, AttemptStep, AuditEvent
from resolveflow.errors import (
    AppInstallationRefused,
    InvalidInput,
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
    ResolveFlowError,
)
from resolveflow.gate.lease import Attempt, GateSettings
from resolveflow.gate.outcome_words import shown_moment
from resolveflow.gate.store import executions as store
from resolveflow.gate.store.executions import SentWith
from resolveflow.store import audit
from resolveflow.store.database import Connection, Database
from resolveflow.telemetry import span

if TYPE_CHECKING:
    from resolveflow.gate.pace import Pacer

logger = logging.getLogger(__name__)


def wrote_something(execution: Execution) -> bool:
    """An earlier step already reached the outside system (a comment posted before its labels):
    whatever happens next, the execution can end partial at worst, never failed."""
    return execution.comment_id is not None or execution.result_ref is not None


class Recorder:
    def __init__(
        self,
        db: Database,
        owner: str,
        settings: GateSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.owner = owner
        self.settings = settings
        self.clock = clock
        self.actor = f"executor:{owner}"
        self.pacer: Pacer | None = None  # the gate's, when writes are paced

    @contextmanager
    def _transaction(self, execution: Execution) -> Iterator[Connection]:
        """The execution's tenant, pipelined: outcome, state and audit travel in one round trip."""
        with span("execution.record", execution_id=str(execution.id)):  # noqa: SIM117
            with self.db.tenant(execution.tenant_id, pipelined=True) as conn:
                yield conn

    def _audit(
        self, conn: Connection, execution: Execution, event: AuditEvent, **details: Any
    ) -> None:
        audit.record(
            conn,
            tenant_id=execution.tenant_id,
            actor=self.actor,
            event=event,
            subject_type="execution",
            subject_id=execution.id,
            details={"proposal_id": str(execution.proposal_id), **details},
        )

    def _checked(self, before: Execution, after: Execution | None) -> Execution:
        if after is None:
            logger.warning(
                "lease lost; outcome kept, state left to the newer owner",
                extra={"execution": str(before.id), "owner": self.owner},
            )
            return before
        logger.info(
            "execution state", extra={"execution": str(after.id), "state": after.state.value}
        )
        return after

    def attempt_started(
        self, execution: Execution, step: AttemptStep, sent_with: SentWith, wait_seconds: float
    ) -> Attempt:
        """Committed before the request leaves, so a crash afterwards is never mistaken for 'not
        sent'; the request leaves after its pace slot (``wait_seconds`` from now) and before
        ``Attempt.send_by``."""
        begun = self.clock()
        with self._transaction(execution) as conn:
            attempt_id = store.insert_attempt(
                conn,
                execution,
                step=step,
                owner=self.owner,
                credential=sent_with.credential,
                token_fingerprint=sent_with.token_fingerprint,
                lease_seconds=self.settings.lease_seconds,
                deadline_seconds=self.settings.in_flight_seconds + wait_seconds,
            )
        send_at = begun + wait_seconds
        return Attempt(attempt_id, send_at + self.settings.send_slack_seconds, send_at)

    def too_late(self, execution: Execution, attempt: Attempt) -> Execution:
        """The process stalled between recording the attempt and sending: a reconciler may
        already own the execution, so nothing is sent; the outcome says so."""
        exc = ProviderUnavailable("not sent: the attempt's time to start the request ran out")
        return self.unavailable(execution, attempt.id, exc)

    def _outcome(
        self,
        conn: Connection,
        execution: Execution,
        attempt_id: UUID,
        outcome: AttemptOutcome,
        exc: ResolveFlowError | None = None,
        provider_ref: str | None = None,
    ) -> None:
        store.insert_outcome(
            conn,
            tenant_id=execution.tenant_id,
            attempt_id=attempt_id,
            outcome=outcome,
            http_status=getattr(exc, "status", None),
            provider_ref=provider_ref,
            message=exc.message if exc else None,
        )

    def finished(
        self, execution: Execution, state: ExecutionState, detail: str, **fields: Any
    ) -> Execution:
        with self._transaction(execution) as conn:
            after = store.finish(
                conn, execution, owner=self.owner, state=state, detail=detail, **fields
            )
            if after is not None:
                self._audit(conn, execution, AuditEvent.execution_ended(state), detail=detail)
        return self._checked(execution, after)

    def refused(self, execution: Execution, exc: ResolveFlowError) -> Execution:
        """Fail closed: the approval or the policy no longer allows the action; nothing was sent."""
        with self._transaction(execution) as conn:
            return self.refused_in(conn, execution, exc)

    def refused_in(
        self, conn: Connection, execution: Execution, exc: ResolveFlowError
    ) -> Execution:
        """``refused`` inside the caller's transaction (the one that claimed the execution).

        When the comment already went out (an earlier round posted it, then labels were deferred),
        the execution is partial, never failed: the record must not hide a live comment.
        """
        if wrote_something(execution):
            state, detail = ExecutionState.PARTIAL, f"comment posted; labels refused: {exc.message}"
        else:
            state, detail = ExecutionState.FAILED, f"refused before sending: {exc.message}"
        after = store.finish(conn, execution, owner=self.owner, state=state, detail=detail)
        if after is not None:
            self._audit(
                conn,
                execution,
                AuditEvent.EXECUTION_REFUSED,
                error=type(exc).__name__,
                message=exc.message,
            )
        return self._checked(execution, after)

    def read_failed(
        self, execution: Execution, exc: ProviderError, what: str = "labels"
    ) -> Execution:
        """A read before any write failed: nothing was sent, so waiting and retrying is safe."""
        if isinstance(exc, ProviderRejected):
            return self.refused(execution, exc)
        wait = (
            exc.retry_after_seconds
            if isinstance(exc, ProviderRateLimited)
            else self.settings.unavailable_retry_seconds
        )
        return self._retry_or_give_up(execution, wait, f"could not read {what}: {exc.message}")

    def _retry_or_give_up(
        self,
        execution: Execution,
        wait: float,
        detail: str,
        outcome: tuple[UUID, AttemptOutcome, ResolveFlowError] | None = None,
    ) -> Execution:
        """Defer (nothing was sent) or give up; the attempt's outcome goes in the same transaction."""
        exhausted = (
            execution.rate_limit_waits + 1 > self.settings.rate_limit_max_waits
            or wait > self.settings.rate_limit_max_wait_seconds
        )
        with self._transaction(execution) as conn:
            if outcome is not None:
                attempt_id, name, exc = outcome
                self._outcome(conn, execution, attempt_id, name, exc)
            if exhausted:
                state = (
                    ExecutionState.PARTIAL if wrote_something(execution) else ExecutionState.FAILED
                )
                after = store.finish(
                    conn,
                    execution,
                    owner=self.owner,
                    state=state,
                    detail=f"gave up after {execution.rate_limit_waits} waits: {detail}",
                )
                event = AuditEvent.execution_ended(state)
            else:
                after = store.release_for_retry(
                    conn,
                    execution,
                    owner=self.owner,
                    wait_seconds=wait,
                    detail=detail,
                    count_wait=True,
                )
                event = AuditEvent.EXECUTION_DEFERRED
            if after is not None:
                self._audit(conn, execution, event, detail=detail, wait_seconds=wait)
        return self._checked(execution, after)

    def rate_limited(
        self, execution: Execution, attempt_id: UUID, exc: ProviderRateLimited
    ) -> Execution:
        return self._retry_or_give_up(
            execution,
            exc.retry_after_seconds,
            f"rate limited: {exc.message}",
            (attempt_id, AttemptOutcome.RATE_LIMITED, exc),
        )

    def unavailable(self, execution: Execution, attempt_id: UUID, exc: ProviderError) -> Execution:
        return self._retry_or_give_up(
            execution,
            self.settings.unavailable_retry_seconds,
            f"unreachable: {exc.message}",
            (attempt_id, AttemptOutcome.UNAVAILABLE, exc),
        )

    def rejected(
        self,
        execution: Execution,
        attempt_id: UUID,
        exc: ProviderRejected | InvalidInput | AppInstallationRefused,
    ) -> Execution:
        # A comment that already went out stays out: the labels failing makes it partial.
        state = ExecutionState.PARTIAL if wrote_something(execution) else ExecutionState.FAILED
        status = exc.status if isinstance(exc, ProviderRejected) else None
        why = f"refused ({status})" if status else "refused before sending"
        with self._transaction(execution) as conn:
            self._outcome(conn, execution, attempt_id, AttemptOutcome.REJECTED, exc)
            after = store.finish(
                conn,
                execution,
                owner=self.owner,
                state=state,
                detail=f"{why}: {exc.message}",
            )
            if after is not None:
                self._audit(
                    conn,
                    execution,
                    AuditEvent.execution_ended(state),
                    status=status,
                    message=exc.message,
                )
        return self._checked(execution, after)

    def unknown(self, execution: Execution, attempt_id: UUID, exc: ProviderError) -> Execution:
        with self._transaction(execution) as conn:
            self._outcome(conn, execution, attempt_id, AttemptOutcome.UNKNOWN, exc)
            after = store.finish(
                conn,
                execution,
                owner=self.owner,
                state=ExecutionState.UNKNOWN,
                detail=f"outcome unknown: {exc.message}",
            )
            if after is not None:
                self._audit(conn, execution, AuditEvent.EXECUTION_UNKNOWN, message=exc.message)
        return self._checked(execution, after)

    def comment_posted(
        self, execution: Execution, attempt_id: UUID, comment_id: int, url: str, *, final: bool
    ) -> Execution:
        with self._transaction(execution) as conn:
            self._outcome(
                conn, execution, attempt_id, AttemptOutcome.SENT, provider_ref=str(comment_id)
            )
            if final:
                after = store.finish(
                    conn,
                    execution,
                    owner=self.owner,
                    state=ExecutionState.SENT,
                    detail="comment posted",
                    comment_id=comment_id,
                    comment_url=url,
                )
                event = AuditEvent.EXECUTION_SENT
            else:
                after = store.record_comment(
                    conn, execution, owner=self.owner, comment_id=comment_id, comment_url=url
                )
                event = AuditEvent.EXECUTION_COMMENT_POSTED
            if after is not None:
                self._audit(conn, execution, event, comment_id=comment_id, url=url)
        return self._checked(execution, after)

    def labels_applied(self, execution: Execution, attempt_id: UUID) -> Execution:
        with self._transaction(execution) as conn:
            self._outcome(conn, execution, attempt_id, AttemptOutcome.SENT)
            after = store.finish(
                conn,
                execution,
                owner=self.owner,
                state=ExecutionState.SENT,
                detail="sent",
                labels_done=True,
            )
            if after is not None:
                self._audit(conn, execution, AuditEvent.EXECUTION_SENT, labels=True)
        return self._checked(execution, after)

    def created(
        self,
        execution: Execution,
        attempt_id: UUID,
        *,
        ref: str,
        url: str,
        state: ExecutionState,
        detail: str,
    ) -> Execution:
        """A one-request kind wrote its object (``state`` is sent, or partial when the provider
        dropped part of it)."""
        with self._transaction(execution) as conn:
            self._outcome(conn, execution, attempt_id, AttemptOutcome.SENT, provider_ref=ref)
            after = store.finish(
                conn,
                execution,
                owner=self.owner,
                state=state,
                detail=detail,
                result_ref=ref,
                result_url=url,
            )
            if after is not None:
                self._audit(conn, execution, AuditEvent.execution_ended(state), ref=ref, url=url)
        return self._checked(execution, after)

    def awaiting_grace(
        self,
        execution: Execution,
        attempt_id: UUID | None,
        *,
        notice: tuple[int, str],
        notice_at: datetime,
        watch_digest: str,
        due: datetime,
    ) -> Execution:
        """github.issue_close_duplicate: its notice is out (posted now under ``attempt_id``, or
        found by reconciliation or from an earlier execution: None). Back to the queue until
        ``due``: nothing waits in a process, and a restart changes nothing."""
        comment_id, url = notice
        detail = f"notice posted; will close after {shown_moment(due)} unless someone objects"
        with self._transaction(execution) as conn:
            if attempt_id is not None:
                self._outcome(
                    conn, execution, attempt_id, AttemptOutcome.SENT, provider_ref=str(comment_id)
                )
            after = store.await_grace(
                conn,
                execution,
                owner=self.owner,
                detail=detail,
                comment_id=comment_id,
                comment_url=url,
                notice_at=notice_at,
                watch_digest=watch_digest,
                due=due,
            )
            if after is not None:
                self._audit(
                    conn,
                    execution,
                    AuditEvent.EXECUTION_GRACE_STARTED,
                    comment_id=comment_id,
                    url=url,
                    notice_at=notice_at.isoformat(),
                    due=due.isoformat(),
                )
        return self._checked(execution, after)

    def withdrawn(self, execution: Execution, detail: str, **details: Any) -> Execution:
        """The notice was posted but nothing will be closed: someone objected, the issue was
        closed meanwhile, or its original may no longer be pointed to. Partial: the notice
        stays, the close was withdrawn."""
        with self._transaction(execution) as conn:
            after = store.finish(
                conn, execution, owner=self.owner, state=ExecutionState.PARTIAL, detail=detail
            )
            if after is not None:
                self._audit(
                    conn, execution, AuditEvent.EXECUTION_OBJECTED, detail=detail, **details
                )
        return self._checked(execution, after)

    def delivered_earlier(
        self,
        execution: Execution,
        earlier: UUID,
        *,
        final: bool,
        comment: tuple[int, str] | None = None,
        created: tuple[str, str] | None = None,
    ) -> Execution:
        """An earlier execution of this same action, recorded as unknown or not sent, did deliver
        it after all: this one records that instead of writing a second copy."""
        detail = f"not written again: earlier execution {earlier} delivered it"
        comment_id, comment_url = comment if comment else (None, None)
        ref, url = created if created else (None, None)
        with self._transaction(execution) as conn:
            if final:
                after = store.finish(
                    conn,
                    execution,
                    owner=self.owner,
                    state=ExecutionState.SENT,
                    detail=detail,
                    comment_id=comment_id,
                    comment_url=comment_url,
                    result_ref=ref,
                    result_url=url,
                )
            else:
                assert comment_id is not None and comment_url is not None
                after = store.record_comment(
                    conn,
                    execution,
                    owner=self.owner,
                    comment_id=comment_id,
                    comment_url=comment_url,
                )
            if after is not None:
                self._audit(
                    conn,
                    execution,
                    AuditEvent.EXECUTION_DELIVERED_EARLIER,
                    earlier=str(earlier),
                    url=comment_url or url,
                )
        return self._checked(execution, after)
