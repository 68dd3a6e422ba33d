"""The background-job queue: procrastinate's tables in the application's own Postgres.

Jobs are deferred on the caller's connection, inside the caller's transaction, so a job exists
exactly when the record that asked for it was committed (a webhook delivery, an approval). The
worker (``resolveflow.worker``) runs them. ``setup_queue`` installs procrastinate's schema once,
as the owner, and lets the runtime role use it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import procrastinate
from procrastinate import exceptions as queue_errors
from procrastinate.schema import SchemaManager

from resolveflow.errors import StoreUnavailable
from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.telemetry import carrier

logger = logging.getLogger(__name__)

QUEUE = "resolveflow"
# The notification round's own queue, worked by a one-slot worker beside the main one
# (worker/__init__.py): whatever a webhook does, it never holds a slot of QUEUE.
NOTIFY_QUEUE = "resolveflow.notifications"
_SETUP_LOCK = 0x52465155455545  # "RFQUEUE": concurrent setups install the schema once

# Task names: the worker registers functions under these; everyone else defers by name.
HANDLE_DELIVERY = "resolveflow.handle_delivery"
START_WEBHOOK_RUN = "resolveflow.start_webhook_run"
REFINE_NEW_ISSUE = "resolveflow.refine_new_issue"
UPDATE_INDEX = "resolveflow.update_index"
RESUME_RUN = "resolveflow.resume_run"
EXECUTE = "resolveflow.execute"
MAINTENANCE = "resolveflow.maintenance"
NOTIFY = "resolveflow.notify"


class QueueConnector(procrastinate.PsycopgConnector):
    """The worker's async connector; synchronous deferral always uses the caller's connection.

    procrastinate would otherwise hand a synchronous caller its async connector once the worker
    has opened it, which cannot run on an external connection.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._deferrer = procrastinate.SyncPsycopgConnector()

    def get_sync_connector(self) -> procrastinate.BaseConnector:
        return self._deferrer


def queue_app(connector: procrastinate.BaseConnector | None = None) -> procrastinate.App:
    """A procrastinate app; without a connector it can only defer on an external connection."""
    return procrastinate.App(connector=connector or QueueConnector())


_DEFERRER = queue_app()
TRACEPARENT = "traceparent"  # a job argument carrying the W3C trace context of who queued it


def defer(
    conn: Connection,
    task: str,
    *,
    queueing_lock: str | None = None,
    lock: str | None = None,
    schedule_in_seconds: float | None = None,
    **kwargs: str | int | bool | None,
) -> int | None:
    """Queue ``task`` in ``conn``'s transaction. Returns the job id, or ``None`` when a job with
    the same ``queueing_lock`` is already waiting (nothing new is needed then)."""
    options: dict[str, Any] = {"queue": QUEUE, "connection": conn}
    if queueing_lock is not None:
        options["queueing_lock"] = queueing_lock
    if lock is not None:
        options["lock"] = lock
    if schedule_in_seconds is not None:
        options["schedule_in"] = {"seconds": schedule_in_seconds}
    parent = carrier().get("traceparent")
    if parent:  # the job continues this trace (worker/jobs.py takes it off again)
        kwargs[TRACEPARENT] = parent
    try:
        with conn.transaction():  # a savepoint: a queueing-lock clash keeps the caller's work
            job_id = _DEFERRER.configure_task(task, **options).defer(**kwargs)
    except queue_errors.AlreadyEnqueued:
        return None
    except queue_errors.ConnectorException as exc:
        raise StoreUnavailable(f"could not queue {task}: {exc.__cause__ or exc}") from exc
    logger.info("job queued", extra={"task": task, "job": job_id})
    return job_id


def setup_queue(conn: Connection) -> None:
    """Install procrastinate's schema (first time only) and grant the runtime role its use.

    Idempotent; run as the owner (the migration hook, or ``serve``/``worker``/``demo`` at start).
    """
    with conn.transaction():
        conn.execute(q("queue", "queue_lock"), {"key": _SETUP_LOCK})
        row = conn.execute(q("queue", "queue_installed")).fetchone()
        if not (row and row["installed"]):
            conn.execute(SchemaManager.get_schema())
            logger.info("job queue schema installed")
        conn.execute(q("queue", "grant_queue_tables"))


@dataclass(frozen=True)
class QueuedJob:
    id: int
    task_name: str
    status: str
    args: dict[str, Any]  # the job's JSON arguments, as procrastinate keeps them
    attempts: int


def jobs_by_task(conn: Connection, task: str) -> list[QueuedJob]:
    return rows.every(conn, QueuedJob, q("queue", "jobs_by_task"), {"task_name": task})


def requeue_stalled_jobs(conn: Connection, seconds_since_heartbeat: float) -> int:
    """Put back in the queue the jobs left ``doing`` by workers that stopped sending heartbeats
    (killed, or their machine gone), with procrastinate's own queries. Returns how many."""
    from procrastinate import sql

    stalled = [
        job
        for lane in (QUEUE, NOTIFY_QUEUE)
        for job in conn.execute(
            sql.queries["select_stalled_jobs_by_heartbeat"],
            {"queue": lane, "task_name": None, "seconds_since_heartbeat": seconds_since_heartbeat},
        ).fetchall()
    ]
    for job in stalled:
        conn.execute(
            sql.queries["retry_job"],
            {
                "job_id": job["id"],
                "retry_at": datetime.now(UTC),
                "new_priority": None,
                "new_queue_name": None,
                "new_lock": None,
            },
        )
        logger.warning("stalled job requeued", extra={"job": job["id"], "task": job["task_name"]})
    return len(stalled)
