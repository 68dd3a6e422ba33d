"""The domain's words and the database's rules are the same lists."""

from __future__ import annotations

import re
from itertools import product
from typing import Any

import psycopg
import pytest

from conftest import World, propose_and_approve
from resolveflow.domain.vocabulary import (
    EXECUTION_MOVES,
    AttemptOutcome,
    AttemptStep,
    Credential,
    Decision,
    ExecutionState,
    NotificationKind,
    NotificationState,
    RunStatus,
)
from resolveflow.store.database import Database


def test_the_state_trigger_allows_exactly_the_domains_moves(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    _, approved = propose_and_approve(db, world)
    execution_id = approved.execution.id
    allowed = set()
    for before, after in product(ExecutionState, ExecutionState):
        # Put the row in ``before`` with triggers off, then ask the trigger about ``after``.
        superuser.execute("SET session_replication_role = replica")
        superuser.execute(
            "UPDATE executions SET state = %s WHERE id = %s", (before.value, execution_id)
        )
        superuser.execute("SET session_replication_role = origin")
        try:
            with superuser.transaction():
                superuser.execute(
                    "UPDATE executions SET state = %s WHERE id = %s", (after.value, execution_id)
                )
                raise _Undo
        except _Undo:
            allowed.add((before, after))
        except psycopg.DatabaseError as exc:  # SQLSTATE RFX01, the trigger's own
            assert exc.sqlstate == "RFX01", exc
    assert allowed == set(EXECUTION_MOVES)


class _Undo(Exception):
    """Roll the probe back: the trigger said yes."""


def _check_values(superuser: psycopg.Connection[Any], table: str, column: str) -> set[str]:
    rows = superuser.execute(
        "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_class t ON t.oid = c.conrelid WHERE t.relname = %s AND c.contype = 'c'",
        (table,),
    ).fetchall()
    for (definition,) in rows:
        if re.search(rf"\b{column}\b", definition) and "ARRAY" in definition:
            return set(re.findall(r"'([a-z_]+)'::text", definition))
    raise AssertionError(f"no CHECK on {table}.{column}")


@pytest.mark.parametrize(
    ("table", "column", "words"),
    [
        ("executions", "state", ExecutionState),
        ("execution_attempts", "step", AttemptStep),
        ("execution_attempts", "credential", Credential),
        ("attempt_outcomes", "outcome", AttemptOutcome),
        ("approvals", "decision", Decision),
        ("runs", "status", RunStatus),
        ("notifications", "kind", NotificationKind),
        ("notifications", "state", NotificationState),
    ],
)
def test_check_constraints_hold_exactly_the_enums_values(
    superuser: psycopg.Connection[Any], table: str, column: str, words: Any
) -> None:
    assert _check_values(superuser, table, column) == {word.value for word in words}


def test_an_unknown_word_is_refused_by_the_database(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    _, approved = propose_and_approve(db, world)
    with pytest.raises(psycopg.errors.CheckViolation):
        superuser.execute(
            "INSERT INTO execution_attempts (tenant_id, execution_id, step, owner, credential) "
            "VALUES (%s, %s, 'teleport', 'me', 'service')",
            (world.tenant.id, approved.execution.id),
        )
