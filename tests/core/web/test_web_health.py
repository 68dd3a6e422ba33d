"""``/healthz`` and ``/readyz`` against the real app and database: ready when every check passes,
503 naming the check when the schema is not current, the queue cannot be read, the database
does not answer or the worker in the process cannot work; neither needs a token. (The worker
across a real Postgres stop: tests/core/integration/test_worker_outage.py.)"""

from __future__ import annotations

from typing import Any

import psycopg

from fixtures_web import Web
from resolveflow.bootstrap.health import WorkerState, WorkerStatus, readiness
from resolveflow.store.database import Database

pytest_plugins = ["fixtures_web"]


def test_healthz_answers_without_a_token(web: Web) -> None:
    answer = web.client.get("/healthz")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}


def test_readyz_is_ready_when_every_check_passes(web: Web) -> None:
    answer = web.client.get("/readyz")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "migrations", "queue"}
    assert body["checks"]["queue"]["detail"].startswith("0 jobs waiting")
    assert body["checks"]["queue"]["detail"].endswith("0 workers with a heartbeat in the last 30 s")


def test_readyz_is_not_ready_while_the_worker_in_the_process_cannot_work(web: Web) -> None:
    """Under ``serve --with-worker`` the worker publishes its state and /readyz reads it."""
    status = WorkerStatus()
    web.app.worker_status = status
    try:
        starting = web.client.get("/readyz")
        status.set(WorkerState.WORKING)
        working = web.client.get("/readyz")
        status.set(WorkerState.RECONNECTING, "OperationalError: connection refused")
        reconnecting = web.client.get("/readyz")
    finally:
        web.app.worker_status = None
    assert starting.status_code == 503
    assert starting.json()["checks"]["worker"]["detail"].startswith("starting for")
    assert working.status_code == 200, working.text
    assert working.json()["checks"]["worker"]["ok"]
    assert reconnecting.status_code == 503
    worker = reconnecting.json()["checks"]["worker"]
    assert not worker["ok"] and worker["detail"].startswith("reconnecting for")
    assert worker["detail"].endswith(": OperationalError: connection refused")
    assert reconnecting.json()["checks"]["database"]["ok"]  # the web itself is fine


def test_readyz_names_a_migration_that_is_not_applied(
    web: Web, superuser: psycopg.Connection[Any]
) -> None:
    (checksum,) = superuser.execute(
        "SELECT checksum FROM schema_migrations WHERE version = '0018'"
    ).fetchone() or ("",)
    superuser.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = '0018'")
    try:
        answer = web.client.get("/readyz")
    finally:
        superuser.execute(
            "UPDATE schema_migrations SET checksum = %s WHERE version = '0018'", [checksum]
        )
    assert answer.status_code == 503
    checks = answer.json()["checks"]
    assert checks["migrations"] == {
        "ok": False,
        "detail": "not applied: 0018 (resolveflow db upgrade)",
    }
    assert checks["database"]["ok"] and checks["queue"]["ok"]
    assert web.client.get("/readyz").status_code == 200


def test_readyz_names_a_queue_it_cannot_read(web: Web, superuser: psycopg.Connection[Any]) -> None:
    superuser.execute("REVOKE SELECT ON procrastinate_jobs FROM resolveflow_app")
    try:
        answer = web.client.get("/readyz")
    finally:
        superuser.execute("GRANT SELECT ON procrastinate_jobs TO resolveflow_app")
    assert answer.status_code == 503
    queue = answer.json()["checks"]["queue"]
    assert not queue["ok"] and queue["detail"].startswith("cannot be read")
    assert web.client.get("/readyz").status_code == 200


def test_readiness_says_the_database_is_unreachable(database_url: str, pg_server: Any) -> None:
    db = Database(database_url, connect_timeout=1.0).open()
    with psycopg.connect(database_url) as probe:
        (name,) = probe.execute("SELECT current_database()").fetchone() or ("",)
    root = psycopg.connect(pg_server.get_uri(), autocommit=True)  # not this database
    try:
        assert all(check.ok for check in readiness(db))
        # The server stops taking this database's connections and drops the ones it has.
        root.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        root.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name]
        )
        checks = readiness(db)
    finally:
        root.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        root.close()
        db.close()
    assert [(c.name, c.ok) for c in checks] == [
        ("database", False),
        ("migrations", False),
        ("queue", False),
    ]
    assert checks[0].detail.startswith("unreachable")
