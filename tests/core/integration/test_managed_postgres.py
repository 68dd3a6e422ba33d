"""A managed Postgres's shape (RDS, Cloud SQL, Azure, Neon, Supabase): no superuser for the
product. An administrator creates the database, the `vector` extension and lets the migrator
administer the runtime role; the migrator (owner of the tables, not a superuser) upgrades the
schema; the runtime role owns nothing, so row-level security holds. docs/operations.md."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from tests.fixtures_migrator import migrator_database

from resolveflow.accounts import admin
from resolveflow.bootstrap.app import setup_libraries
from resolveflow.store.database import Database
from resolveflow.store.migrate import upgrade


@pytest.fixture
def migrator_url(pg_server: Any) -> Iterator[str]:
    with migrator_database(pg_server) as (url, _):
        yield url


def test_a_migrator_that_is_no_superuser_upgrades_and_row_level_security_holds(
    migrator_url: str,
) -> None:
    with psycopg.connect(migrator_url, autocommit=True, row_factory=dict_row) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        assert row is not None and row["rolsuper"] is False
        applied = upgrade(conn, after=setup_libraries)
        assert applied  # every migration, as this role
        owners = conn.execute(
            "SELECT DISTINCT pg_get_userbyid(c.relowner) AS owner FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r'"
        ).fetchall()
        assert {r["owner"] for r in owners} == {urllib.parse.urlsplit(migrator_url).username}

    with Database(migrator_url, max_size=4, connect_timeout=5) as db:
        acme, globex = admin.add_tenant(db, "acme"), admin.add_tenant(db, "globex")
        admin.add_repository(db, "acme", "acme/widgets")
        admin.add_repository(db, "globex", "globex/gadgets")
        with db.tenant(acme.id) as conn:
            who = conn.execute("SELECT current_user AS name").fetchone()
            assert who is not None and who["name"] == "resolveflow_app"
            seen = conn.execute("SELECT full_name FROM repositories").fetchall()
        assert [r["full_name"] for r in seen] == ["acme/widgets"]  # not globex's
        with db.tenant(globex.id) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE tenants SET name = 'taken'")  # the runtime role may not
