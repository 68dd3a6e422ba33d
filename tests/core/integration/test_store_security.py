"""Row-level security, runtime-role privileges, state guards and leases, on a real Postgres."""

from __future__ import annotations

import psycopg
import pytest

from conftest import World, expire_lease, make_world, propose_and_approve
from resolveflow.domain.records import ExecutionState
from resolveflow.domain.vocabulary import AttemptStep, Credential
from resolveflow.errors import InvalidTransition, NotAuthorized
from resolveflow.gate.store import executions
from resolveflow.store.database import Database


def test_pooled_connection_switching_tenants_sees_none_of_the_previous_tenants_rows(
    database_url: str,
) -> None:
    with Database(database_url, max_size=1) as db:
        a = make_world(db, "tenant-a", "a/repo")
        b = make_world(db, "tenant-b", "b/repo")
        propose_and_approve(db, b)
        with db.tenant(b.tenant.id) as conn:
            pid_b = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
            assert conn.execute("SELECT count(*) AS n FROM proposals").fetchone()["n"] == 1
        with db.tenant(a.tenant.id) as conn:
            # Same physical connection, as the pool has only one.
            assert conn.execute("SELECT pg_backend_pid() AS pid").fetchone() == pid_b
            for table in (
                "proposals",
                "approvals",
                "executions",
                "principals",
                "audit_events",
                "repositories",
            ):
                rows = conn.execute(f"SELECT tenant_id FROM {table}").fetchall()
                assert all(row["tenant_id"] == a.tenant.id for row in rows), table
            assert conn.execute("SELECT count(*) AS n FROM proposals").fetchone()["n"] == 0
        with db.unscoped() as conn:
            assert conn.execute("SELECT count(*) AS n FROM proposals").fetchone()["n"] == 0
            assert conn.execute("SELECT current_user AS u").fetchone()["u"] == "resolveflow_app"


def test_rows_cannot_be_written_into_another_tenant(db: Database, world: World) -> None:
    other = make_world(db, "globex", "globex/app")
    with pytest.raises(NotAuthorized), db.tenant(world.tenant.id) as conn:
        conn.execute(
            "INSERT INTO audit_events (tenant_id, actor, event, subject_type, subject_id) "
            "VALUES (%s, 'x', 'x', 'x', 'x')",
            [other.tenant.id],
        )


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE approvals SET reason = 'changed'",
        "DELETE FROM approvals",
        "DELETE FROM audit_events",
        "UPDATE audit_events SET actor = 'someone else'",
        "UPDATE proposals SET digest = repeat('0', 64)",
        "DELETE FROM proposals",
        "UPDATE execution_attempts SET owner = 'x'",
        "DELETE FROM attempt_outcomes",
        "UPDATE executions SET digest = repeat('0', 64)",
    ],
)
def test_runtime_role_cannot_change_immutable_records(
    statement: str, db: Database, world: World
) -> None:
    propose_and_approve(db, world)
    with (
        pytest.raises(NotAuthorized, match="permission denied"),
        db.tenant(world.tenant.id) as conn,
    ):
        conn.execute(statement)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE principals SET token_revoked_at = NULL",
        "UPDATE principals SET token_revoked_at = clock_timestamp()",
    ],
)
def test_a_revoked_api_token_stays_revoked(statement: str, db: Database, world: World) -> None:
    from resolveflow.accounts import admin

    admin.revoke_token(db, "acme", "alex")
    with (
        pytest.raises(InvalidTransition, match="revoked already"),
        db.tenant(world.tenant.id) as conn,
    ):
        conn.execute(statement + " WHERE subject = 'alex'")  # type: ignore[arg-type]


def test_superuser_is_not_how_the_application_connects(
    db: Database, superuser: psycopg.Connection
) -> None:
    assert superuser.execute(
        "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
    ).fetchone() == (True,)
    with db.unscoped() as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert row == {"rolsuper": False, "rolbypassrls": False}


def test_execution_state_never_moves_backwards(db: Database, world: World, superuser) -> None:
    _, approved = propose_and_approve(db, world)
    superuser.execute(
        "UPDATE executions SET state = 'sending' WHERE id = %s", [approved.execution.id]
    )
    superuser.execute("UPDATE executions SET state = 'sent' WHERE id = %s", [approved.execution.id])
    with pytest.raises(InvalidTransition), db.tenant(world.tenant.id) as conn:
        conn.execute(
            "UPDATE executions SET state = 'pending' WHERE id = %s", [approved.execution.id]
        )


def test_a_late_owner_cannot_overwrite_a_newer_owners_result(
    db: Database, world: World, superuser
) -> None:
    _, approved = propose_and_approve(db, world)
    tenant = world.tenant.id
    with db.tenant(tenant) as conn:
        claimed = executions.claim_by_id(conn, tenant, approved.execution.id, "old-owner", 30)
    assert claimed is not None
    expire_lease(superuser, claimed.id)
    with db.tenant(tenant) as conn:
        taken = executions.take_over_for_reconcile(conn, tenant, claimed.id, "new-owner", 30)
        assert taken is not None
        assert executions.claim_by_id(conn, tenant, claimed.id, "third", 30) is None
    with db.tenant(tenant) as conn:
        late = executions.finish(
            conn, claimed, owner="old-owner", state=ExecutionState.SENT, detail="late"
        )
        assert late is None
        with pytest.raises(Exception, match="lease"):
            executions.insert_attempt(
                conn,
                claimed,
                step=AttemptStep.COMMENT,
                owner="old-owner",
                credential=Credential.SERVICE,
                lease_seconds=30,
                deadline_seconds=60,
            )
    with db.tenant(tenant) as conn:
        newer = executions.finish(
            conn, taken, owner="new-owner", state=ExecutionState.UNKNOWN, detail="newer"
        )
        assert newer is not None and newer.detail == "newer"


def test_abandoned_claim_with_no_attempt_goes_back_to_the_queue(
    db: Database, world: World, fake_github, github_client, superuser
) -> None:
    from conftest import execution_state, make_executor, make_reconciler

    _, approved = propose_and_approve(db, world)
    with db.tenant(world.tenant.id) as conn:
        executions.claim_by_id(conn, world.tenant.id, approved.execution.id, "crashed", 30)
    assert make_reconciler(db, github_client).run() == []  # the lease still runs
    expire_lease(superuser, approved.execution.id)
    [settled] = make_reconciler(db, github_client).run()
    assert settled.state is ExecutionState.PENDING
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    assert fake_github.writes_applied == 1


# Tables whose tenant column is the deployment's own routing, not a tenant's data: read before
# any tenant is known (a GitHub App's webhook names only its installation), written by an admin.
ROUTING_TABLES = {
    "github_app_installations": "which tenant an installation of the deployment's App serves",
}


def test_every_table_with_a_tenant_column_has_forced_row_level_security(superuser) -> None:
    rows = superuser.execute(
        "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' "
        "WHERE n.nspname = 'public' AND c.relkind = 'r'"
    ).fetchall()
    assert len(rows) > 20
    unforced = [name for name, rls, forced in rows if not (rls and forced)]
    assert [name for name in unforced if name not in ROUTING_TABLES] == []
