"""The worker across a real Postgres outage (issue 26, finding 6): an immediate stop, longer than
the 6 s that used to end ``resolveflow worker``, then a start on the same port and data
directory. The worker stays up, reconnects with backoff, says so once per change, and runs the
work queued afterwards exactly once, without a restart. Its own Postgres (stoppable_postgres.py),
the sandbox forge counting writes, the CLI in a real process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from conftest import World, make_world, propose_and_approve
from resolveflow.domain.records import ExecutionState
from resolveflow.gate.store import executions as execution_store
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store import queue
from resolveflow.store.database import Database
from stoppable_postgres import StoppablePostgres

OUTAGE_SECONDS = 10.0  # longer than the ~6 s after which the worker used to exit
# test_b's reconnect wait: its first probe comes RECONNECT_SECONDS after the worker lost the
# database, at least that minus OUTAGE_SECONDS after the database is back.
RECONNECT_SECONDS = 24
BOUND_SECONDS = 120.0  # every wait below: generous, for a loaded 2-core machine


def wait_for(what: str, condition: Callable[[], bool], seconds: float = BOUND_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.25)


@pytest.fixture
def outage_pg(tmp_path: Path) -> Iterator[StoppablePostgres]:
    server = StoppablePostgres(tmp_path / "pg").init()
    server.start()
    try:
        yield server
    finally:
        server.stop_quietly()


def workers_registered(url: str) -> int:
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            row = conn.execute("SELECT count(*) FROM procrastinate_workers").fetchone()
    except psycopg.Error:
        return 0
    return int(row[0]) if row else 0


def approve_and_queue(
    db: Database, world: World, comment: str, in_seconds: float | None = None
) -> object:
    """Approve a comment proposal and queue its execute job, as the web app's approval does
    (``in_seconds``: due that much later)."""
    _, approved = propose_and_approve(db, world, comment=comment)
    with db.tenant(world.tenant.id) as conn:
        queue.defer(
            conn,
            queue.EXECUTE,
            queueing_lock=f"execute:{approved.execution.id}",
            schedule_in_seconds=in_seconds,
            tenant_id=str(world.tenant.id),
            execution_id=str(approved.execution.id),
        )
    return approved.execution.id


def worker_env(url: str, fake: FakeGitHubServer, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=url,
        RESOLVEFLOW_GITHUB_API_URL=fake.url,
        RESOLVEFLOW_GITHUB_TOKEN="service-token",
        RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="2",
        RESOLVEFLOW_DB_CONNECT_TIMEOUT_SECONDS="3",
        RESOLVEFLOW_WORKER_RECONNECT_INITIAL_SECONDS="0.5",
        RESOLVEFLOW_WORKER_RECONNECT_MAX_SECONDS="2",
        RESOLVEFLOW_HOME=str(home),
    )
    return env


def test_a_standalone_worker_rides_out_a_postgres_stop_and_runs_later_work_once(
    outage_pg: StoppablePostgres, fake_github: FakeGitHubServer, tmp_path: Path
) -> None:
    url = outage_pg.migrated_database()
    with Database(url, max_size=4, connect_timeout=5) as db:
        world = make_world(db)
    log = (tmp_path / "worker.log").open("w+")
    worker = subprocess.Popen(
        [sys.executable, "-m", "resolveflow", "worker"],
        env=worker_env(url, fake_github, tmp_path / "home"),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_for("the worker to register", lambda: workers_registered(url) > 0)
        outage_pg.stop()
        time.sleep(OUTAGE_SECONDS)
        assert worker.poll() is None, f"the worker exited during the outage:\n{_read(log)}"
        outage_pg.start()

        with Database(url, max_size=4, connect_timeout=5) as db:
            execution_id = approve_and_queue(db, world, "Posted after the outage.")
            wait_for("the comment", lambda: len(fake_github.comments("acme/widgets", 1)) >= 1)
            wait_for("sent", lambda: _state(db, world, execution_id) is ExecutionState.SENT)
            time.sleep(2)  # a second write, if there were one, has had time to arrive
            assert len(fake_github.comments("acme/widgets", 1)) == 1
            assert fake_github.writes_received == 1
        assert worker.poll() is None, "the worker exited after the outage"

        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=BOUND_SECONDS) == 0, _read(log)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)
    text = _read(log)
    # One line when the database went away and one when the worker was back: not one a second.
    assert text.count("worker lost the database") == 1, text
    assert text.count("worker reconnected") == 1, text


def _state(db: Database, world: World, execution_id: object) -> ExecutionState:
    with db.tenant(world.tenant.id) as conn:
        return execution_store.execution_by_id(conn, world.tenant.id, execution_id).state  # type: ignore[arg-type]


def _read(log: object) -> str:
    log.seek(0)  # type: ignore[attr-defined]
    return log.read()  # type: ignore[attr-defined,no-any-return]


def _http(method: str, url: str, token: str | None = None, body: object = None) -> tuple[int, dict]:  # type: ignore[type-arg]
    request = urllib.request.Request(url, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, data=data, timeout=15) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError):
        return 0, {}


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_b_serve_with_worker_is_not_ready_while_its_worker_cannot_work_and_resumes_alone(
    outage_pg: StoppablePostgres, fake_github: FakeGitHubServer, tmp_path: Path
) -> None:
    url = outage_pg.migrated_database()
    with Database(url, max_size=4, connect_timeout=5) as db:
        world = make_world(db)
    port = _port()
    base = f"http://127.0.0.1:{port}"
    env = worker_env(url, fake_github, tmp_path / "home")
    # No jitter and every wait RECONNECT_SECONDS: the worker's first probe after it lost the
    # database comes well after the database is back (the outage is OUTAGE_SECONDS), so there is
    # a window of seconds, not of chance, in which /readyz must say the worker is not working.
    env.update(
        RESOLVEFLOW_WORKER_RECONNECT_INITIAL_SECONDS=str(RECONNECT_SECONDS),
        RESOLVEFLOW_WORKER_RECONNECT_MAX_SECONDS=str(RECONNECT_SECONDS),
        RESOLVEFLOW_WORKER_RECONNECT_JITTER="0",
    )
    log = (tmp_path / "serve.log").open("w+")
    seen: ReadinessLog | None = None
    serve = subprocess.Popen(
        [sys.executable, "-m", "resolveflow", "serve", "--with-worker", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_for("/readyz 200", lambda: _http("GET", f"{base}/readyz")[0] == 200)
        first = _http("GET", f"{base}/readyz")[1]["checks"]
        with Database(url, max_size=4, connect_timeout=5) as db:
            # Queued before the outage and due during it.
            approve_and_queue(db, world, "Queued before the outage.", in_seconds=OUTAGE_SECONDS)
        outage_pg.stop()
        wait_for("/readyz 503", lambda: _http("GET", f"{base}/readyz")[0] == 503)
        time.sleep(OUTAGE_SECONDS)
        assert serve.poll() is None, _read(log)
        outage_pg.start()
        # Every /readyz answer from the moment the database is back until the worker works.
        seen = ReadinessLog(f"{base}/readyz").start()

        # The web is back first; an approval answers 202 "queued" while the worker still waits.
        with Database(url, max_size=4, connect_timeout=5) as db:
            proposal, _ = proposed(db, world, "Approved after the outage.")
        answer: list[tuple[int, dict]] = []  # type: ignore[type-arg]

        def approved() -> bool:
            answer.append(
                _http(
                    "POST",
                    f"{base}/api/v1/proposals/{proposal.id}/approve",
                    world.approver_token,
                    {"digest": proposal.digest},
                )
            )
            return answer[-1][0] == 202

        wait_for("the approval", approved)
        wait_for("/readyz 200 again", seen.ready_again)
        seen.stop()
        comments = lambda: fake_github.comments("acme/widgets", 1)  # noqa: E731
        wait_for("both comments", lambda: len(comments()) >= 2)
        time.sleep(2)  # a second write of either, if there were one, has had time to arrive
        bodies = sorted(c["body"].split("\n")[0] for c in comments())
        assert bodies == ["Approved after the outage.", "Queued before the outage."], bodies
        assert fake_github.writes_received == 2
        assert serve.poll() is None

        assert first["worker"]["ok"], first
        waiting = [
            body["checks"]
            for body in seen.bodies
            if body.get("checks", {}).get("database", {}).get("ok")
            and not body["checks"].get("worker", {}).get("ok", True)
        ]
        assert waiting, f"/readyz never said the worker was not working: {seen.bodies}"
        assert waiting[0]["worker"]["detail"].startswith("reconnecting"), waiting[0]
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=BOUND_SECONDS)
    finally:
        if seen is not None:
            seen.stop()
        if serve.poll() is None:
            serve.kill()
            serve.wait(timeout=30)


class ReadinessLog:
    """Reads /readyz in a thread, four times a second, keeping every body: the window in which the
    database is back and the worker not yet is seen however slowly the test's own steps run."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.bodies: list[dict] = []  # type: ignore[type-arg]
        self.statuses: list[int] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def start(self) -> ReadinessLog:
        self._thread.start()
        return self

    def _read(self) -> None:
        while not self._done.is_set():
            status, body = _http("GET", self.url)
            self.statuses.append(status)
            self.bodies.append(body)
            self._done.wait(0.25)

    def ready_again(self) -> bool:
        return 200 in self.statuses

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)


def proposed(db: Database, world: World, comment: str):  # type: ignore[no-untyped-def]
    """A comment proposal to approve through the API."""
    from resolveflow.gate import proposals

    proposal = proposals.create_proposal(
        db, world.requester(db), repository=world.repository, issue=1, comment=comment, labels=[]
    )
    return proposal, None
