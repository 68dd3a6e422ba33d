"""The schema at start-up: the SQL migrations, the libraries' own tables, and the fingerprint
that lets a start whose schema is already current skip both.

Every process that opens the database brings its schema up to date first (``bootstrap/app.open_app``).
A complete upgrade takes the migration lock, reads the migrations and runs LangGraph's and
procrastinate's idempotent setup, which means importing both: a few hundred milliseconds on every
CLI command. So a complete upgrade ends by recording a fingerprint of what it installed
(``store.migrate.fingerprint``); a start that finds the same fingerprint has nothing to do, and
any difference (a new or changed migration file, another library version) makes it run the
complete upgrade again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from resolveflow.store.database import Connection, Database
from resolveflow.store.migrate import (
    available_migrations,
    fingerprint,
    is_current,
    migration_lock,
    record_fingerprint,
    upgrade,
)

if TYPE_CHECKING:
    from resolveflow.store.token_cipher import TokenCipher

# The libraries whose schema ``setup_libraries`` installs: another version of either may bring
# its own schema changes, so it makes the next start run the complete upgrade again.
LIBRARY_SCHEMAS = ("langgraph-checkpoint-postgres", "procrastinate")


def schema_fingerprint() -> str:
    """What a complete upgrade with this code installs: the migrations and the libraries."""
    from importlib.metadata import version  # pydantic has imported it already: no cost

    libraries = [f"{name}=={version(name)}" for name in LIBRARY_SCHEMAS]
    return fingerprint(available_migrations(), libraries)


def after_upgrade(cipher: TokenCipher | None) -> Callable[[Connection], None]:
    """What runs as the owner under the migration lock after the SQL files: the libraries'
    schema, then (with a key) the sealing of GitHub tokens a migration set aside, which only
    Python can encrypt; last, the fingerprint that lets later starts skip all of this."""

    def after(conn: Connection) -> None:
        setup_libraries(conn)
        if cipher is not None:
            _seal_waiting_tokens(conn, cipher)
        record_fingerprint(conn, schema_fingerprint())

    return after


def _seal_waiting_tokens(conn: Connection, cipher: TokenCipher) -> None:
    from resolveflow.store.tenants import seal_waiting_tokens

    seal_waiting_tokens(conn, cipher)


def migrate(url: str, cipher: TokenCipher | None = None) -> list[str]:
    """SQL migrations, then the LangGraph checkpoint tables (created by the saver's own setup),
    both as the owner; the runtime role is then granted use of the checkpoint tables.

    A schema whose fingerprint matches this code's is left as it is (one query); only tokens a
    migration set aside are still sealed when a key is configured, since the key may be new.
    """
    probe = Database(url)
    with probe.owner_connection() as conn:
        if is_current(conn, schema_fingerprint()):
            if cipher is not None:
                with migration_lock(conn):
                    _seal_waiting_tokens(conn, cipher)
            return []
        return [m.version for m in upgrade(conn, after=after_upgrade(cipher))]


def setup_libraries(conn: Connection) -> None:
    """Schema that libraries own (LangGraph's checkpoints, procrastinate's queue), as the owner,
    under the migration lock."""
    from resolveflow.store.queue import setup_queue

    setup_checkpoints(conn)
    setup_queue(conn)


def setup_checkpoints(conn: Connection) -> None:
    """The saver's setup is idempotent (it keeps its own migration table)."""
    from resolveflow.store.checkpoints import checkpoint_saver
    from resolveflow.store.queries import q

    checkpoint_saver(conn).setup()
    granted = conn.execute(q("triage/store/runs", "checkpoint_tables_granted")).fetchone()
    if not (granted and granted["granted"]):
        conn.execute(q("triage/store/runs", "grant_checkpoint_tables"))
