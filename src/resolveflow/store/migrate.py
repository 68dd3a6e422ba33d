"""SQL migrations: files ``NNNN_name.sql`` in ``store/migrations``, applied in order and recorded.

Each file runs in its own transaction as the connecting (owner) user, under an advisory lock so two
processes upgrading at once apply every file exactly once.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any

import psycopg

from resolveflow.errors import ConfigError
from resolveflow.store.queries import q

logger = logging.getLogger(__name__)

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x5245534F4C5645  # "RESOLVE": one advisory lock for every migrator


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    sql: str = field(repr=False)

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class MigrationStatus:
    version: str
    name: str
    applied_at: datetime | None
    modified: bool  # the file changed after it was applied


def available_migrations() -> list[Migration]:
    folder = resources.files("resolveflow.store.migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if match:
            found.append(Migration(match.group(1), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if len(set(versions)) != len(versions):
        raise ConfigError("two migration files share a version number")
    return found


def _applied(conn: psycopg.Connection[Any]) -> dict[str, dict[str, Any]]:
    conn.execute(q("migrations", "create_table"))
    rows = conn.execute(q("migrations", "applied")).fetchall()
    return {row["version"]: row for row in rows}


def upgrade(
    conn: psycopg.Connection[Any],
    after: Callable[[psycopg.Connection[Any]], None] | None = None,
) -> list[Migration]:
    """Apply every migration not yet applied; return the ones applied now. Idempotent.

    ``after`` runs under the same lock (schema set up by libraries, such as LangGraph's
    checkpoint tables), so concurrent upgraders never race on catalog changes.
    """
    conn.execute(q("migrations", "lock"), [_LOCK_KEY])
    try:
        applied = _applied(conn)
        done: list[Migration] = []
        for migration in available_migrations():
            if migration.version in applied:
                continue
            with conn.transaction():
                # Migration text ships inside the package; it is never built from input.
                conn.execute(migration.sql)
                conn.execute(
                    q("migrations", "record"),
                    {
                        "version": migration.version,
                        "name": migration.name,
                        "checksum": migration.checksum,
                    },
                )
            logger.info("migration applied", extra={"version": migration.version})
            done.append(migration)
        if after is not None:
            after(conn)
        return done
    finally:
        conn.execute(q("migrations", "unlock"), [_LOCK_KEY])


def status(conn: psycopg.Connection[Any]) -> list[MigrationStatus]:
    applied = _applied(conn)
    result = []
    for migration in available_migrations():
        row = applied.get(migration.version)
        result.append(
            MigrationStatus(
                version=migration.version,
                name=migration.name,
                applied_at=row["applied_at"] if row else None,
                modified=row is not None and row["checksum"] != migration.checksum,
            )
        )
    return result
