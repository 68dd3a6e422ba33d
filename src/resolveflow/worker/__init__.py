"""The background worker: ``resolveflow worker`` (its own process) or ``WorkerThread`` (inside
``serve --with-worker``, the demo and tests), both kept going across database outages by
``worker.supervise``. Jobs are in ``worker.jobs``; the queue's schema and deferral in
``store.queue``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading

import procrastinate

from resolveflow.bootstrap.app import App
from resolveflow.bootstrap.health import WorkerStatus
from resolveflow.store.queue import NOTIFY_QUEUE, QUEUE, setup_queue
from resolveflow.worker.jobs import Jobs, build_queue
from resolveflow.worker.report import WorkReport
from resolveflow.worker.supervise import Backoff, Supervisor, connection_probe

__all__ = ["Jobs", "WorkReport", "WorkerThread", "prepare_queue", "run_once", "run_worker"]

logger = logging.getLogger(__name__)


def prepare_queue(app: App) -> None:
    """Install the queue's schema if needed (as the owner), before anything defers or works."""
    with app.db.owner_connection() as conn:
        setup_queue(conn)


async def _work(proc: procrastinate.App, *, concurrency: int, wait: bool) -> None:
    """The jobs' worker and the notification lane's, side by side. When one stops (a side task
    lost the database) the other is stopped too, and the first error is raised as it came, so
    the supervisor starts both again together."""
    async with proc.open_async():
        lanes = [
            asyncio.create_task(_lane(proc, queue, slots, wait), name=f"worker {queue}")
            for queue, slots in ((QUEUE, concurrency), (NOTIFY_QUEUE, 1))
        ]
        try:
            if wait:
                done, _ = await asyncio.wait(lanes, return_when=asyncio.FIRST_COMPLETED)
            else:  # --once: each lane stops by itself once it has caught up
                done, _ = await asyncio.wait(lanes)
        finally:
            for lane in lanes:
                lane.cancel()  # procrastinate's graceful stop: running jobs finish first
            await asyncio.gather(*lanes, return_exceptions=True)
        failed = [lane.exception() for lane in done if not lane.cancelled()]
        first = next((error for error in failed if error is not None), None)
        if first is not None:
            raise first


async def _lane(proc: procrastinate.App, queue: str, slots: int, wait: bool) -> None:
    await proc.run_worker_async(
        queues=[queue],
        name=queue,
        concurrency=slots,
        wait=wait,
        # Stopping is the caller's: cancelling the task (WorkerThread.stop, or the signal
        # handlers of run_worker), which procrastinate turns into its graceful stop.
        install_signal_handlers=False,
        listen_notify=wait,
        fetch_job_polling_interval=1.0,
        delete_jobs="successful",
    )


def supervisor(app: App, status: WorkerStatus, jobs: Jobs | None = None) -> Supervisor:
    """The long-running worker, run again after every database outage (worker/supervise.py)."""
    proc = build_queue(app, jobs)
    concurrency = app.settings.worker.concurrency
    return Supervisor(
        work=lambda: _work(proc, concurrency=concurrency, wait=True),
        probe=connection_probe(app.db.url, app.settings.database.connect_timeout_seconds),
        backoff=Backoff.of(app.settings.worker),
        status=status,
    )


async def _until_signalled(work: Supervisor) -> None:
    """Run until SIGINT or SIGTERM, which cancel the work: running jobs finish first."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await work.run()
    except asyncio.CancelledError:
        return  # asked to stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def run_worker(app: App) -> None:
    """Work until SIGINT/SIGTERM (the ``resolveflow worker`` command), across outages."""
    asyncio.run(_until_signalled(supervisor(app, WorkerStatus())))


def run_once(app: App, jobs: Jobs | None = None) -> WorkReport:
    """Run every job that is due now, then return what did not get done (tests, ``worker
    --once``: ``report.raise_if_not_done()`` makes it an error). Not supervised: a database
    that goes away fails the round, and the command says so."""
    body = jobs or Jobs(app)
    body.report = WorkReport()
    proc = build_queue(app, body)
    asyncio.run(_work(proc, concurrency=1, wait=False))
    return body.report


class WorkerThread:
    """A worker on its own thread and event loop, stopped gracefully by ``stop()``. It rides out
    database outages like ``resolveflow worker`` and publishes its state on ``app`` for
    ``/readyz`` (``app.worker_status``)."""

    def __init__(self, app: App, jobs: Jobs | None = None) -> None:
        self.status = WorkerStatus()
        self._work = supervisor(app, self.status, jobs)
        app.worker_status = self.status
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="resolveflow-worker", daemon=True)

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._task = loop.create_task(self._work.run())
        self._ready.set()
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(self._task)
        loop.close()

    def start(self) -> WorkerThread:
        self._thread.start()
        self._ready.wait(timeout=10)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._task is not None and not self._task.done():
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout=timeout)
        if self._thread.is_alive():
            logger.warning("worker thread did not stop in time")

    def __enter__(self) -> WorkerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
