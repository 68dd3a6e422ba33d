"""The worker across a database outage.

procrastinate's worker stops at the first connector error (its listener, heartbeat or periodic
deferrer fails, or fetching the next job does) and ``run_worker_async`` raises; on its own the
``resolveflow worker`` process then exited and the thread inside ``serve --with-worker`` ended,
while the web kept queueing work nobody would run. ``Supervisor`` runs it again instead: it waits
(capped exponential backoff with jitter, ``RESOLVEFLOW_WORKER_RECONNECT_*``), tries a plain
connection, and when that answers starts a new procrastinate worker on a new pool, which picks up
whatever was queued meanwhile. Nothing is lost by the restart: a job left ``doing`` is put back by
maintenance (its worker's heartbeat stopped) and the executor gate makes every send once-only.

It logs one line when the database goes and one when the worker is back, and publishes its state
(``WorkerStatus``), which ``/readyz`` reads under ``serve --with-worker``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

import psycopg
from procrastinate import exceptions as queue_errors
from psycopg_pool import PoolTimeout

from resolveflow.bootstrap.health import WorkerState, WorkerStatus
from resolveflow.config import WorkerSettings
from resolveflow.errors import StoreUnavailable

logger = logging.getLogger(__name__)

# What a database outage looks like from the worker: procrastinate wraps psycopg's errors in
# ConnectorException; opening its pool can time out; a socket can fail under either.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    queue_errors.ConnectorException,
    psycopg.Error,
    PoolTimeout,
    StoreUnavailable,
    OSError,
)
# procrastinate logs the failure that stopped its worker with a traceback; the supervisor's one
# line says the same (with the real cause), so these are dropped unless DEBUG is on.
_NOISY_LOGGERS = ("procrastinate.worker.worker", "procrastinate.utils")


@dataclass(frozen=True)
class Backoff:
    initial: float
    maximum: float
    jitter: float  # each wait is shortened by a random share of itself, up to this

    @classmethod
    def of(cls, settings: WorkerSettings) -> Backoff:
        return cls(
            settings.reconnect_initial_seconds,
            settings.reconnect_max_seconds,
            settings.reconnect_jitter,
        )

    def delays(self, draw: Callable[[], float] = random.random) -> Iterator[float]:
        base = min(self.initial, self.maximum)
        while True:
            yield base * (1 - self.jitter * draw())
            base = min(base * 2, self.maximum)


def outage_reason(exc: BaseException) -> str:
    """The innermost cause's first line: procrastinate's own message is only "Database error."."""
    seen: BaseException = exc
    while seen.__cause__ is not None:
        seen = seen.__cause__
    lines = str(seen).strip().splitlines()
    return f"{type(seen).__name__}: {lines[0].strip()}" if lines else type(seen).__name__


class _DropOutageTracebacks(logging.Filter):
    """Drops procrastinate's tracebacks of an outage, keeping the cause for the one line."""

    def __init__(self) -> None:
        super().__init__()
        self.last_reason: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, OUTAGE_ERRORS):
            return True
        self.last_reason = outage_reason(exc)
        return logging.getLogger().isEnabledFor(logging.DEBUG)

    def take_reason(self) -> str | None:
        reason, self.last_reason = self.last_reason, None
        return reason


_FILTER = _DropOutageTracebacks()


def quiet_outage_tracebacks() -> None:
    for name in _NOISY_LOGGERS:
        if _FILTER not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_FILTER)


class Supervisor:
    """Runs ``work`` (one procrastinate worker, until it stops) again after each outage.

    ``probe`` raises while the database does not answer. Cancelling the task that runs
    ``run`` stops it: procrastinate's worker then finishes its running jobs first."""

    def __init__(
        self,
        work: Callable[[], Awaitable[None]],
        probe: Callable[[], Awaitable[None]],
        backoff: Backoff,
        status: WorkerStatus,
    ) -> None:
        self.work = work
        self.probe = probe
        self.backoff = backoff
        self.status = status

    async def run(self) -> None:
        quiet_outage_tracebacks()
        delays: Iterator[float] | None = None
        down_since: float | None = None
        try:
            while True:
                worked, reason = await self._work_once(down_since)
                if worked:  # a new outage: the backoff starts again, and it is said again
                    delays, down_since = None, None
                if down_since is None:
                    down_since = time.monotonic()
                    logger.warning(
                        "worker lost the database (%s); reconnecting, at most %.0f s apart",
                        reason,
                        self.backoff.maximum,
                    )
                self.status.set(WorkerState.RECONNECTING, reason)
                delays = delays or self.backoff.delays()
                await asyncio.sleep(next(delays))
        finally:
            self.status.set(WorkerState.STOPPED)

    async def _work_once(self, down_since: float | None) -> tuple[bool, str]:
        """Probe, then work until the worker stops: whether it got to work, and why it stopped.
        Only cancelling stops it for good: with ``wait`` procrastinate's worker returns only
        when one of its side tasks (the listener, the heartbeat) failed, after finishing the
        running jobs."""
        worked = False
        try:
            await self.probe()
            worked = True
            self.status.set(WorkerState.WORKING)
            if down_since is not None:
                logger.warning(
                    "worker reconnected to the database after %.0f s", time.monotonic() - down_since
                )
            await self.work()
        except OUTAGE_ERRORS as exc:
            _FILTER.take_reason()
            return worked, outage_reason(exc)
        return worked, _FILTER.take_reason() or "the worker's connection to the queue failed"


def connection_probe(url: str, connect_timeout: float) -> Callable[[], Awaitable[None]]:
    """A fresh connection and one round trip: what a new worker's pool will need."""

    async def probe() -> None:
        async with await psycopg.AsyncConnection.connect(
            url, connect_timeout=max(1, int(connect_timeout)), autocommit=True
        ) as conn:
            await conn.execute("SELECT 1")

    return probe
