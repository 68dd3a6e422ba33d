"""A managed Postgres's shape (RDS, Cloud SQL, Azure, Neon, Supabase): no superuser for the
product. An administrator creates the database, the `vector` extension and lets the migrator
administer the runtime role; the migrator (owner of the tables, not a superuser) upgrades the
schema; the runtime role owns nothing, so row-level security holds. docs/operations.md."""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from resolveflow.service import admin
from resolveflow.store.database import Database
from resolveflow.store.migrate import upgrade
from resolveflow.wiring import setup_libraries


def as_user(url: str, user: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=f"{user}@{host}").geturl()


@pytest.fixture
def migrator_url(pg_server: Any) -> Iterator[str]:
    suffix = uuid.uuid4().hex[:10]
    role, database = f"rf_migrator_{suffix}", f"managed_{suffix}"
    root = pg_server.get_uri()
    with psycopg.connect(root, autocommit=True) as admin_conn:
        # What the service's administrator does once: a login role that is no superuser, its
        # database, and the runtime role for it to administer (created here if this cluster has
        # none yet; the migration creates it itself when the migrator may create roles).
        admin_conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS CREATEROLE")
        admin_conn.execute(f"CREATE DATABASE {database} OWNER {role}")
        admin_conn.execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'resolveflow_app')"
            " THEN CREATE ROLE resolveflow_app NOLOGIN NOSUPERUSER NOBYPASSRLS; END IF; END $$"
        )
        admin_conn.execute(f"GRANT resolveflow_app TO {role} WITH ADMIN OPTION")
    with psycopg.connect(pg_server.get_uri(database), autocommit=True) as admin_db:
        admin_db.execute("CREATE EXTENSION IF NOT EXISTS vector")  # the allow-listed extension
    yield as_user(pg_server.get_uri(database), role)
    with psycopg.connect(root, autocommit=True) as admin_conn:
        admin_conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        admin_conn.execute(f"DROP OWNED BY {role}")  # its grants of the runtime role too
        admin_conn.execute(f"REVOKE resolveflow_app FROM {role} CASCADE")
        admin_conn.execute(f"DROP ROLE IF EXISTS {role}")


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
