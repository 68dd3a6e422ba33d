"""Shared fixtures: a real embedded Postgres per test session, a fresh database per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from resolveflow.domain.records import Role, Tenant
from resolveflow.service import admin
from resolveflow.service.auth import authenticate
from resolveflow.store.database import Database
from resolveflow.store.migrate import upgrade
from resolveflow.wiring import setup_libraries

pytest_plugins = ["fixtures_github"]

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(autouse=True)
def _scrub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's real settings or secrets."""
    for name in list(os.environ):
        if name.startswith("RESOLVEFLOW_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    import pgserver

    server = pgserver.get_server(tmp_path_factory.mktemp("pg") / "data", cleanup_mode="stop")
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def template_db(pg_server: object) -> str:
    name = "rf_template"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:  # type: ignore[attr-defined]
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(
        pg_server.get_uri(name),  # type: ignore[attr-defined]
        autocommit=True,
        row_factory=psycopg.rows.dict_row,
    ) as conn:
        upgrade(conn, after=setup_libraries)
    return name


@pytest.fixture
def database_url(pg_server: object, template_db: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    root = pg_server.get_uri()  # type: ignore[attr-defined]
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    yield pg_server.get_uri(name)  # type: ignore[attr-defined]
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    with Database(database_url, max_size=20, connect_timeout=5) as database:
        yield database


@pytest.fixture
def superuser(database_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A superuser connection, for tests that tamper with rows the application may not change."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


@dataclass
class World:
    tenant: Tenant
    requester_token: str
    approver_token: str
    repository: str

    def requester(self, db: Database):  # type: ignore[no-untyped-def]
        return authenticate(db, self.requester_token)

    def approver(self, db: Database):  # type: ignore[no-untyped-def]
        return authenticate(db, self.approver_token)


def make_world(db: Database, tenant: str = "acme", repository: str = "acme/widgets") -> World:
    t = admin.add_tenant(db, tenant)
    requester = admin.add_principal(db, tenant, "rita", [Role.REQUESTER])
    approver = admin.add_principal(db, tenant, "alex", [Role.APPROVER])
    admin.add_repository(db, tenant, repository)
    return World(t, requester.token, approver.token, repository)


@pytest.fixture
def world(db: Database) -> World:
    return make_world(db)


def propose_and_approve(
    db: Database,
    world: World,
    *,
    comment: str | None = "Thanks for the report! We are looking into it.",
    labels: list[str] | None = None,
    issue: int = 1,
    ttl_seconds: int = 3600,
):  # type: ignore[no-untyped-def]
    """Create a proposal as the requester and approve it as the approver; return the result."""
    from resolveflow.service import proposals

    proposal = proposals.create_proposal(
        db,
        world.requester(db),
        repository=world.repository,
        issue=issue,
        comment=comment,
        labels=labels or [],
    )
    return proposal, proposals.approve(
        db, world.approver(db), proposal.id, proposal.digest, ttl_seconds
    )


def make_executor(db: Database, github, **overrides):  # type: ignore[no-untyped-def]
    from resolveflow.execution.gate import Executor
    from resolveflow.execution.lease import GateSettings

    settings = GateSettings(
        **{"lease_seconds": 30.0, "unavailable_retry_seconds": 0.5, **overrides}
    )
    return Executor(db, github, settings)


def make_reconciler(db: Database, github, **overrides):  # type: ignore[no-untyped-def]
    from resolveflow.execution.lease import GateSettings
    from resolveflow.execution.reconcile import Reconciler

    return Reconciler(db, github, GateSettings(**{"lease_seconds": 30.0, **overrides}))


def execution_state(db: Database, world: World, execution_id):  # type: ignore[no-untyped-def]
    from resolveflow.store import executions

    with db.tenant(world.tenant.id) as conn:
        return executions.execution_by_id(conn, world.tenant.id, execution_id)


def attempt_outcomes(db: Database, world: World, execution_id) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    from resolveflow.store import executions

    with db.tenant(world.tenant.id) as conn:
        rows = executions.attempts_for_execution(conn, world.tenant.id, execution_id)
    return [(row["step"], row["outcome"]) for row in rows]
