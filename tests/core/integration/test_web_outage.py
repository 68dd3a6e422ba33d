"""``serve`` across a Postgres outage long enough for psycopg_pool's backoff to grow: the API answers
200 again within seconds of the database's return, not after the pool's next try (up to a minute
later). Its own Postgres (stoppable_postgres.py), stopped immediately and started again on the same
port and data directory; the server in a real process; requests over HTTP throughout, as a load
balancer's probes would send.

Not timing-fragile: the bound (BACK_WITHIN) is for the fixed code, which connects on the first
request after the database is back, or at a try at most two seconds off; 15 s leaves room for a
loaded 2-core machine. The outage's length only decides whether the old code fails: psycopg_pool
tries a lost connection again 1, 3, 7, 15, 31 and 63 s after losing it (the first wait drawn within
10 %, then doubled), so a database back 36-40 s after the loss waits until the 57-69 s try, at
least 17 s, there.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from test_worker_outage import BOUND_SECONDS, _http, _port, _read, outage_pg, wait_for, worker_env

from conftest import make_world
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.database import Database
from stoppable_postgres import StoppablePostgres

__all__ = ["outage_pg"]  # the fixture, shared with the worker's outage tests

OUTAGE_SECONDS = 36.0  # past the pool's 31 s try, well before its 63 s one (see above)
BACK_WITHIN = 15.0  # from the database's return to the API's first 200


def test_the_api_answers_within_seconds_of_the_database_coming_back(
    outage_pg: StoppablePostgres, fake_github: FakeGitHubServer, tmp_path: Path
) -> None:
    url = outage_pg.migrated_database()
    with Database(url, max_size=4, connect_timeout=5) as db:
        world = make_world(db)
    port = _port()
    api = f"http://127.0.0.1:{port}/api/v1/proposals"
    env = worker_env(url, fake_github, tmp_path / "home")
    env["RESOLVEFLOW_DB_CONNECT_TIMEOUT_SECONDS"] = "2"  # each request of the outage: 2 s, 503
    log = (tmp_path / "serve.log").open("w+")
    serve = subprocess.Popen(
        [sys.executable, "-m", "resolveflow", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    token = world.approver_token
    try:
        wait_for("the API 200", lambda: _http("GET", api, token)[0] == 200)
        outage_pg.stop()
        lost = time.monotonic()
        # The first request after the stop finds the pooled connection dead: the pool's tries
        # are counted from here.
        assert _http("GET", api, token)[0] == 503
        statuses = []
        while time.monotonic() - lost < OUTAGE_SECONDS:
            statuses.append(_http("GET", api, token)[0])
            time.sleep(0.5)
        assert set(statuses) == {503}, statuses
        outage_pg.start()
        back = time.monotonic()
        wait_for("the API 200 after the outage", lambda: _http("GET", api, token)[0] == 200,
                 seconds=BACK_WITHIN)  # fmt: skip
        print(f"200 again {time.monotonic() - back:.1f} s after the database was back")
        assert serve.poll() is None, _read(log)
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=BOUND_SECONDS)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(timeout=30)
