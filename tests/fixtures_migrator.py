"""A database the way a managed Postgres gives one (RDS, Cloud SQL, Azure, Neon, Supabase): the
administrator creates a login role that is no superuser, its database, the `vector` extension,
and lets it administer the runtime role; that migrator owns the tables, so row-level security
(FORCE) binds it as it binds the runtime role. docs/operations.md."""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


def as_user(url: str, user: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=f"{user}@{host}").geturl()


@contextmanager
def migrator_database(pg_server: Any, prefix: str = "managed") -> Iterator[tuple[str, str]]:
    """(the migrator's URL, a superuser's URL of the same database); both dropped afterwards."""
    suffix = uuid.uuid4().hex[:10]
    role, database = f"rf_migrator_{suffix}", f"{prefix}_{suffix}"
    root = pg_server.get_uri()
    with psycopg.connect(root, autocommit=True) as admin_conn:
        admin_conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS CREATEROLE")  # type: ignore[arg-type]
        admin_conn.execute(f"CREATE DATABASE {database} OWNER {role}")  # type: ignore[arg-type]
        # The runtime role, created here if this cluster has none yet (the migration creates it
        # itself when the migrator may create roles).
        admin_conn.execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'resolveflow_app')"
            " THEN CREATE ROLE resolveflow_app NOLOGIN NOSUPERUSER NOBYPASSRLS; END IF; END $$"
        )
        admin_conn.execute(f"GRANT resolveflow_app TO {role} WITH ADMIN OPTION")  # type: ignore[arg-type]
    superuser_url = pg_server.get_uri(database)
    with psycopg.connect(superuser_url, autocommit=True) as admin_db:
        admin_db.execute("CREATE EXTENSION IF NOT EXISTS vector")  # the allow-listed extension
    try:
        yield as_user(superuser_url, role), superuser_url
    finally:
        with psycopg.connect(root, autocommit=True) as admin_conn:
            admin_conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")  # type: ignore[arg-type]
            admin_conn.execute(f"DROP OWNED BY {role}")  # type: ignore[arg-type]  # its grants too
            admin_conn.execute(f"REVOKE resolveflow_app FROM {role} CASCADE")  # type: ignore[arg-type]
            admin_conn.execute(f"DROP ROLE IF EXISTS {role}")  # type: ignore[arg-type]
