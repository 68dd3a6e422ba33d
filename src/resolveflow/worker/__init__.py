"""The background worker: ``resolveflow worker`` (its own process) or ``WorkerThread`` (inside
``serve --with-worker``, the demo and tests). Jobs are in ``worker.jobs``; the queue's schema and
deferral in ``store.queue``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

import procrastinate

from resolveflow.store.queue import QUEUE, setup_queue
from resolveflow.wiring import App
from resolveflow.worker.jobs import Jobs, build_queue
from resolveflow.worker.report import WorkReport

__all__ = ["Jobs", "WorkReport", "WorkerThread", "prepare_queue", "run_once", "run_worker"]

logger = logging.getLogger(__name__)


def prepare_queue(app: App) -> None:
    """Install the queue's schema if needed (as the owner), before anything defers or works."""
    with app.db.owner_connection() as conn:
        setup_queue(conn)


async def _work(proc: procrastinate.App, *, concurrency: int, wait: bool, signals: bool) -> None:
    async with proc.open_async():
        await proc.run_worker_async(
            queues=[QUEUE],
            concurrency=concurrency,
            wait=wait,
            install_signal_handlers=signals,
            listen_notify=wait,
            fetch_job_polling_interval=1.0,
            delete_jobs="successful",
        )


def run_worker(app: App) -> None:
    """Work until SIGINT/SIGTERM (the ``resolveflow worker`` command)."""
    proc = build_queue(app)
    asyncio.run(_work(proc, concurrency=app.settings.worker.concurrency, wait=True, signals=True))


def run_once(app: App, jobs: Jobs | None = None) -> WorkReport:
    """Run every job that is due now, then return what did not get done (tests, ``worker
    --once``: ``report.raise_if_not_done()`` makes it an error)."""
    body = jobs or Jobs(app)
    body.report = WorkReport()
    proc = build_queue(app, body)
    asyncio.run(_work(proc, concurrency=1, wait=False, signals=False))
    return body.report


class WorkerThread:
    """A worker on its own thread and event loop, stopped gracefully by ``stop()``."""

    def __init__(self, app: App, jobs: Jobs | None = None) -> None:
        self._proc = build_queue(app, jobs)
        self._concurrency = app.settings.worker.concurrency
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="resolveflow-worker", daemon=True)

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._task = loop.create_task(
            _work(self._proc, concurrency=self._concurrency, wait=True, signals=False)
        )
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
