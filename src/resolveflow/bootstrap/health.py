"""``/readyz``'s checks: the database answers, its schema is the one this code installs, the job
queue can be read, and (in a process that runs the worker: ``serve --with-worker``) the worker
is working. Each is a name, whether it passed, and one line saying why; the first failure does
not hide the others.

With a notification webhook configured, a ``notifications`` check says how deliveries stand (read
from the database, so it covers workers in any process). It is advisory: a failing chat webhook
is shown (``ok: false``, the last error in our words) but never makes the process not ready,
which would take the inbox away because a chat is down.

``WorkerStatus`` is what the worker publishes (``worker/supervise.py``) and readiness reads: the
worker's state and since when. A web process without a worker has none and does not check one;
its queue line says how many workers anywhere sent a heartbeat lately (docs/operations.md).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from resolveflow.domain.counted import counted
from resolveflow.domain.vocabulary import NotificationState
from resolveflow.errors import ResolveFlowError
from resolveflow.notify.store import notifications as notification_store
from resolveflow.store import health as store
from resolveflow.store.database import Database


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True  # False: shown, but readiness does not depend on it


# A message given up on shows as failing for this long; a retrying one until it is sent.
FAILED_SHOWN_FOR = timedelta(days=1)


class WorkerState(StrEnum):
    STARTING = "starting"  # not connected yet
    WORKING = "working"  # connected to the queue, taking jobs
    RECONNECTING = "reconnecting"  # lost the database; waiting to try again
    STOPPED = "stopped"  # asked to stop, or failed for good


@dataclass(frozen=True)
class WorkerSnapshot:
    state: WorkerState
    detail: str
    seconds: float  # in this state for


class WorkerStatus:
    """The worker's state, set by its thread and read by request threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state, self._detail, self._since = WorkerState.STARTING, "", time.monotonic()

    def set(self, state: WorkerState, detail: str = "") -> bool:
        """Record ``state``; True when it is a change (the caller logs changes only)."""
        with self._lock:
            changed = state is not self._state
            if changed:
                self._since = time.monotonic()
            self._state, self._detail = state, detail
        return changed

    def snapshot(self) -> WorkerSnapshot:
        with self._lock:
            return WorkerSnapshot(self._state, self._detail, time.monotonic() - self._since)


def worker_check(status: WorkerStatus) -> Check:
    now = status.snapshot()
    if now.state is WorkerState.WORKING:
        return Check("worker", True, f"working for {now.seconds:.0f} s")
    why = f": {now.detail}" if now.detail else ""
    return Check("worker", False, f"{now.state.value} for {now.seconds:.0f} s{why}")


def readiness(
    db: Database, worker: WorkerStatus | None = None, *, notifications: bool = False
) -> list[Check]:
    checks = _database(db)
    if worker is not None:
        checks.append(worker_check(worker))
    if notifications:
        checks.append(notifications_check(db))
    return checks


def notifications_check(db: Database, now: datetime | None = None) -> Check:
    try:
        with db.unscoped() as conn:
            rows = notification_store.counts(conn)
    except ResolveFlowError as exc:
        return Check("notifications", False, f"cannot be read: {exc.message}", required=False)
    now = now or datetime.now(UTC)
    sent = sum(r.notifications for r in rows if r.state is NotificationState.SENT)
    retrying = sum(r.retrying for r in rows)
    recent = [
        r
        for r in rows
        if r.state is NotificationState.FAILED
        and r.last_error_at is not None
        and now - r.last_error_at < FAILED_SHOWN_FOR
    ]
    given_up = sum(r.notifications for r in recent)
    if not retrying and not recent:
        return Check("notifications", True, f"{sent} sent, none failing", required=False)
    errors = [(r.last_error_at, r.last_error or "") for r in rows if r.last_error_at is not None]
    last = ""
    if errors:
        at, why = max(errors)
        last = f"; last error at {at.astimezone(UTC):%Y-%m-%d %H:%M} UTC: {why}"
    return Check(
        "notifications",
        False,
        f"{retrying} retrying, {given_up} given up on in the last day, {sent} sent{last}",
        required=False,
    )


def _database(db: Database) -> list[Check]:
    try:
        with db.unscoped() as conn:
            behind = store.migrations_behind(conn)
    except ResolveFlowError as exc:
        unreachable = f"unreachable: {exc.message}"
        return [
            Check("database", False, unreachable),
            Check("migrations", False, "not checked: the database is unreachable"),
            Check("queue", False, "not checked: the database is unreachable"),
        ]
    checks = [Check("database", True, "answers")]
    if not behind:
        checks.append(Check("migrations", True, "current"))
    else:
        missing = ", ".join(behind)
        checks.append(
            Check("migrations", False, f"not applied: {missing} (resolveflow db upgrade)")
        )
    checks.append(_queue(db))
    return checks


def _queue(db: Database) -> Check:
    try:
        with db.unscoped() as conn:
            backlog = store.queue_backlog(conn)
    except ResolveFlowError as exc:
        return Check("queue", False, f"cannot be read: {exc.message}")
    return Check(
        "queue",
        True,
        f"{counted(backlog.waiting, 'job')} waiting, oldest {backlog.oldest_seconds:.0f} s; "
        f"{counted(backlog.live_workers, 'worker')} with a heartbeat in the last "
        f"{store.LIVE_WORKER_SECONDS} s",
    )
