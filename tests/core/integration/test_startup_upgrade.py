"""The start-up check (``resolveflow.bootstrap.schema``): a schema that a complete upgrade by this code
left behind is not upgraded again (one query, no LangGraph or procrastinate), and any difference
(a new migration file, another version of a library with a schema) brings the complete upgrade back,
so every command still brings the database up to date before it uses it."""

from __future__ import annotations

import psycopg
import pytest

from resolveflow.bootstrap import schema as schema_setup
from resolveflow.store import migrate as migrations
from resolveflow.store.migrate import Migration


@pytest.fixture
def library_setups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the complete upgrades: each runs the libraries' setup once."""
    calls: list[str] = []
    real = schema_setup.setup_libraries

    def counted(conn: psycopg.Connection[dict[str, object]]) -> None:
        calls.append("setup")
        real(conn)

    monkeypatch.setattr(schema_setup, "setup_libraries", counted)
    return calls


def test_a_current_schema_is_checked_with_one_query_and_left_alone(
    database_url: str, library_setups: list[str]
) -> None:
    # The test database comes from a template upgraded without the fingerprint: an older install.
    assert schema_setup.migrate(database_url) == []
    assert library_setups == ["setup"]
    assert schema_setup.migrate(database_url) == []
    assert schema_setup.migrate(database_url) == []
    assert library_setups == ["setup"]


def test_a_new_migration_file_is_applied_by_the_next_start(
    database_url: str, library_setups: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema_setup.migrate(database_url)
    shipped = migrations.available_migrations()
    newer = [*shipped, Migration("9999", "startup_probe", "CREATE TABLE startup_probe (id int)")]
    monkeypatch.setattr(migrations, "available_migrations", lambda: newer)
    monkeypatch.setattr(schema_setup, "available_migrations", lambda: newer)

    assert schema_setup.migrate(database_url) == ["9999"]
    assert library_setups == ["setup", "setup"]
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT to_regclass('startup_probe') IS NOT NULL").fetchone() == (True,)
    assert schema_setup.migrate(database_url) == []
    assert library_setups == ["setup", "setup"]


def test_another_library_version_runs_the_libraries_setup_again(
    database_url: str, library_setups: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema_setup.migrate(database_url)
    # One more library in the list changes the fingerprint as a new version of one would.
    monkeypatch.setattr(schema_setup, "LIBRARY_SCHEMAS", (*schema_setup.LIBRARY_SCHEMAS, "psycopg"))
    schema_setup.migrate(database_url)
    assert library_setups == ["setup", "setup"]


def test_db_upgrade_records_the_fingerprint_too(
    database_url: str, library_setups: list[str]
) -> None:
    with psycopg.connect(database_url, autocommit=True, row_factory=psycopg.rows.dict_row) as conn:
        migrations.upgrade(conn, after=schema_setup.after_upgrade(None))
    schema_setup.migrate(database_url)
    assert library_setups == ["setup"]
