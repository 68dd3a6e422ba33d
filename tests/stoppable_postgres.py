"""A Postgres server of the test's own that it can stop and start again on the same port and data
directory (the worker-outage tests): pgserver's binaries (with pgvector), driven by ``pg_ctl``,
on 127.0.0.1. As root, the server runs as pgserver's own system user, as the session's does."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from resolveflow.bootstrap.app import setup_libraries
from resolveflow.store.migrate import upgrade

SERVER_SECONDS = 60  # pg_ctl's wait for a start or a stop (a loaded 2-core machine)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StoppablePostgres:
    def __init__(self, root: Path) -> None:
        from pgserver._commands import POSTGRES_BIN_PATH

        self.bin = POSTGRES_BIN_PATH
        self.data = root / "data"
        self.log = root / "server.log"
        self.port = _free_port()
        self.user: str | None = None
        root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # Postgres refuses to run as root
            import pwd

            from pgserver.utils import ensure_prefix_permissions, ensure_user_exists

            self.user = "pgserver"
            entry = ensure_user_exists(self.user)
            assert entry is not None
            ensure_prefix_permissions(root)
            root.chmod(0o755)
            os.chown(root, pwd.getpwnam(self.user).pw_uid, pwd.getpwnam(self.user).pw_gid)

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [str(self.bin / program), *args],
            user=self.user,
            check=True,
            capture_output=True,
            timeout=SERVER_SECONDS + 30,
        )

    def init(self) -> StoppablePostgres:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        return self

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=100"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w",
            "-t", str(SERVER_SECONDS), "-o", options, "start",
        )  # fmt: skip

    def stop(self) -> None:
        """An immediate stop: every backend is gone at once, as when the server crashes."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w",
                  "-t", str(SERVER_SECONDS), "stop")  # fmt: skip

    def stop_quietly(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def migrated_database(self, name: str = "rf") -> str:
        """A database with the application's schema, as ``db upgrade`` leaves it."""
        with psycopg.connect(self.url(), autocommit=True) as root:
            root.execute(f"CREATE DATABASE {name}")
        url = self.url(name)
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            upgrade(conn, after=setup_libraries)
        return url
