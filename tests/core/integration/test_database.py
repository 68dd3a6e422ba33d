"""The pool's transactions: pipelined ones keep all-or-nothing, dead connections are replaced."""

from __future__ import annotations

import time

import psycopg
import pytest
from tests.conftest import World

from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import AlreadyExists
from resolveflow.store import audit
from resolveflow.store.database import Database


def _events(db: Database, world: World, subject: str) -> int:
    with db.tenant(world.tenant.id) as conn:
        return len(audit.events_for(conn, world.tenant.id, [subject]))


def _record(conn: psycopg.Connection, world: World, subject: str) -> None:  # type: ignore[type-arg]
    audit.record(
        conn,
        tenant_id=world.tenant.id,
        actor="test",
        event=AuditEvent.RUN_EVIDENCE,
        subject_type="test",
        subject_id=subject,
    )


def test_a_pipelined_transaction_commits_statements_whose_results_were_never_fetched(
    db: Database, world: World
) -> None:
    with db.tenant(world.tenant.id, pipelined=True) as conn:
        _record(conn, world, "kept-1")
        _record(conn, world, "kept-1")
    assert _events(db, world, "kept-1") == 2


def test_a_failing_statement_rolls_back_a_pipelined_transaction_and_is_translated(
    db: Database, world: World
) -> None:
    with pytest.raises(AlreadyExists), db.tenant(world.tenant.id, pipelined=True) as conn:
        _record(conn, world, "lost-1")  # queued, never fetched
        conn.execute("INSERT INTO tenants (name) VALUES (%s)", [world.tenant.name]).fetchall()
    assert _events(db, world, "lost-1") == 0
    # The connection went back to the pool in a usable state.
    with db.tenant(world.tenant.id, pipelined=True) as conn:
        _record(conn, world, "after-1")
    assert _events(db, world, "after-1") == 1


def _terminate_application_backends(superuser: psycopg.Connection) -> int:  # type: ignore[type-arg]
    row = superuser.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_an_idle_connection_killed_by_the_server_is_replaced_before_use(
    database_url: str,
    superuser: psycopg.Connection,
    world: World,  # type: ignore[type-arg]
) -> None:
    with Database(database_url, max_size=1, check_idle_seconds=0.0) as database:
        with database.tenant(world.tenant.id) as conn:
            conn.execute("SELECT 1")
        assert _terminate_application_backends(superuser) >= 1
        with database.tenant(world.tenant.id) as conn:
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}


def test_a_recently_used_connection_killed_by_the_server_is_replaced_too(
    database_url: str,
    superuser: psycopg.Connection,
    world: World,  # type: ignore[type-arg]
) -> None:
    """No ping for a connection just returned, but a terminated backend leaves its goodbye on
    the socket, which the checkout sees without a round trip (load and chaos, issue 17)."""
    with Database(database_url, max_size=1, check_idle_seconds=3600.0) as database:
        with database.tenant(world.tenant.id) as conn:
            conn.execute("SELECT 1")
        assert _terminate_application_backends(superuser) >= 1
        _wait_until_gone(superuser)
        with database.tenant(world.tenant.id) as conn:
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}


def _wait_until_gone(superuser: psycopg.Connection) -> None:  # type: ignore[type-arg]
    """pg_terminate_backend only signals: wait until the backends have exited (and said so)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = superuser.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
        if row is not None and row[0] == 0:
            return
        time.sleep(0.02)
    raise AssertionError("the terminated backends did not exit")


def test_a_taken_name_is_named_with_the_kind_of_record(db: Database, world: World) -> None:
    from resolveflow.accounts import admin
    from resolveflow.domain.records import Role

    name = world.tenant.name
    with pytest.raises(AlreadyExists) as tenant:
        admin.add_tenant(db, name)
    assert tenant.value.message == f"a tenant named '{name}' already exists"
    with pytest.raises(AlreadyExists) as person:
        admin.add_principal(db, name, "alex", [Role.APPROVER])
    assert person.value.message == f"the tenant {name} already has a person named 'alex'"
    with pytest.raises(AlreadyExists) as repository:
        admin.add_repository(db, name, world.repository.upper())  # stored in one spelling
    said = f"the repository {world.repository} is already allowed for the tenant {name}"
    assert repository.value.message == said
    assert str(world.tenant.id) not in tenant.value.message + person.value.message + said
