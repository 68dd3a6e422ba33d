"""The run statuses the triage steps write are the ``RunStatus`` enum, and the enum is exactly
what the database's check on ``runs.status`` allows (``store/migrations/0002_triage.sql``)."""

from __future__ import annotations

import re
from pathlib import Path

import resolveflow.store.migrations as migrations
from resolveflow.domain.vocabulary import RunStatus

MIGRATION = Path(migrations.__file__).parent / "0002_triage.sql"


def test_run_status_matches_the_database_check() -> None:
    sql = MIGRATION.read_text("utf-8")
    found = re.search(r"status IN \(([^)]*)\)", sql)
    assert found is not None
    allowed = set(re.findall(r"'([a-z_]+)'", found.group(1)))
    assert allowed == {status.value for status in RunStatus}


def test_the_steps_write_no_status_as_a_bare_string() -> None:
    source = Path(__file__).parents[3] / "src" / "resolveflow" / "triage" / "graph"
    values = "|".join(status.value for status in RunStatus)
    bare = re.compile(rf"""set_status\([^)]*["']({values})["']""", re.DOTALL)
    for module in ("steps.py", "runs.py", "build.py"):
        assert not bare.search((source / module).read_text("utf-8")), module
