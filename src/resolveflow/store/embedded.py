"""An embedded Postgres (with pgvector) from the ``pgserver`` package, for installs with no database."""

from __future__ import annotations

import logging
import os
import signal
import time
import warnings
from pathlib import Path

from resolveflow.errors import StoreUnavailable

logger = logging.getLogger(__name__)


def embedded_database_url(home: Path) -> str:
    """Start (or join) the embedded server whose data lives under ``home`` and return its URL.

    pgserver shares one server between every process that uses the same data directory and stops
    it when the last of them exits, so concurrent CLI invocations and workers cooperate.
    """
    pgdata = home / "pgdata"
    try:
        pgdata.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            # platformdirs warns about XDG_RUNTIME_DIR on servers; pgserver copes without it.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            import pgserver  # lazily: only needed when no database URL is configured

            server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    except Exception as exc:
        raise StoreUnavailable(f"could not start the embedded Postgres in {pgdata}: {exc}") from exc
    uri: str = server.get_uri()
    logger.info("embedded postgres ready", extra={"pgdata": str(pgdata)})
    return uri


def stop_embedded_database(home: Path, *, wait_seconds: float = 30.0) -> None:
    """Stop the embedded server whose data lives under ``home`` and return once it has exited.

    For a caller that owns ``home`` and is about to delete it (the demo). pgserver stops its
    server only when the interpreter exits, and only if its list of handles (a file inside the
    data folder) still names this process: a folder deleted before that leaves the postmaster
    running on deleted files. And SIGTERM ends a process without running exit handlers at all.
    """
    pgdata = home / "pgdata"
    pid = _postmaster_pid(pgdata)
    if pid is None:
        return
    # Postgres' shutdown signals, as pg_ctl sends them: SIGINT is a fast shutdown (sessions are
    # ended, then a checkpoint); SIGQUIT an immediate one, if the fast one does not finish.
    for shutdown, seconds in ((signal.SIGINT, wait_seconds), (signal.SIGQUIT, 5.0)):
        try:
            os.kill(pid, shutdown)
        except ProcessLookupError:
            return
        except PermissionError as exc:  # a stale lock file naming someone else's process
            raise StoreUnavailable(f"cannot stop the embedded Postgres in {pgdata}: {exc}") from exc
        if _exited(pid, seconds):
            logger.info("embedded postgres stopped", extra={"pgdata": str(pgdata)})
            return
    raise StoreUnavailable(f"the embedded Postgres (pid {pid}) in {pgdata} did not stop")


def _postmaster_pid(pgdata: Path) -> int | None:
    """The running postmaster's pid from its lock file (first line), or None when there is none."""
    try:
        first = (pgdata / "postmaster.pid").read_text().split("\n", 1)[0].strip()
    except FileNotFoundError:
        return None
    return int(first) if first.isdigit() else None


def _exited(pid: int, seconds: float) -> bool:
    """Whether ``pid`` ends within ``seconds``. The postmaster is not our child (pg_ctl detached
    it), so it cannot be waited for; a zombie left for its new parent to reap counts as ended."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _is_zombie(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (macOS), or the process is gone
        return False
    # "pid (command) state ...": the command may hold spaces and parentheses, the state follows
    # the last closing parenthesis.
    return stat.rpartition(")")[2].split()[:1] == ["Z"]
