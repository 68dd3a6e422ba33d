"""SQL migrations: files ``NNNN_name.sql`` in ``store/migrations``, applied in order and recorded.

Each file runs in its own transaction as the connecting (owner) user, under an advisory lock so two
processes upgrading at once apply every file exactly once.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any

import psycopg

from resolveflow.errors import ConfigError
from resolveflow.store import rows as typed
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


@dataclass(frozen=True)
class AppliedMigration:
    version: str
    name: str
    checksum: str
    applied_at: datetime


def _applied(conn: psycopg.Connection[Any]) -> dict[str, AppliedMigration]:
    conn.execute(q("migrations", "create_table"))
    applied = typed.every(conn, AppliedMigration, q("migrations", "applied"))
    return {row.version: row for row in applied}


@contextmanager
def migration_lock(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """The one advisory lock every migrator holds while it changes the schema."""
    conn.execute(q("migrations", "lock"), [_LOCK_KEY])
    try:
        yield
    finally:
        conn.execute(q("migrations", "unlock"), [_LOCK_KEY])


def upgrade(
    conn: psycopg.Connection[Any],
    after: Callable[[psycopg.Connection[Any]], None] | None = None,
) -> list[Migration]:
    """Apply every migration not yet applied; return the ones applied now. Idempotent.

    ``after`` runs under the same lock (schema set up by libraries, such as LangGraph's
    checkpoint tables), so concurrent upgraders never race on catalog changes.
    """
    with migration_lock(conn):
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


# --- the start-up check ------------------------------------------------------------------------
#
# Every process that opens the database brings its schema up to date first. Taking the lock,
# reading the migrations and running the libraries' own idempotent setup costs a few hundred
# milliseconds (LangGraph and procrastinate have to be imported for it), on every CLI command. A
# complete upgrade therefore ends by writing a fingerprint of everything it installed as the
# migrations table's comment; a start whose fingerprint matches has nothing to do, and any
# difference (a new migration file, a changed one, another library version) means a complete
# upgrade again.


def fingerprint(migrations: Sequence[Migration], extra: Iterable[str] = ()) -> str:
    """One hash of every migration (version and checksum) and of ``extra`` (the versions of the
    libraries whose schema the upgrade's ``after`` installs)."""
    digest = hashlib.sha256()
    for migration in migrations:
        digest.update(f"{migration.version}:{migration.checksum}\n".encode())
    for item in extra:
        digest.update(f"{item}\n".encode())
    return digest.hexdigest()


def is_current(conn: psycopg.Connection[Any], expected: str) -> bool:
    """Whether the last complete upgrade recorded ``expected``: one query, no lock."""
    row = conn.execute(q("migrations", "fingerprint")).fetchone()
    return row is not None and _column(row, "fingerprint") == expected


def record_fingerprint(conn: psycopg.Connection[Any], value: str) -> None:
    # COMMENT takes a literal, not a bind parameter: the client-side cursor quotes the value.
    psycopg.ClientCursor(conn).execute(q("migrations", "record_fingerprint"), [value])


def _column(row: Any, name: str) -> Any:
    return row[name] if isinstance(row, dict) else row[0]


def status(conn: psycopg.Connection[Any]) -> list[MigrationStatus]:
    applied = _applied(conn)
    result = []
    for migration in available_migrations():
        row = applied.get(migration.version)
        result.append(
            MigrationStatus(
                version=migration.version,
                name=migration.name,
                applied_at=row.applied_at if row else None,
                modified=row is not None and row.checksum != migration.checksum,
            )
        )
    return result
