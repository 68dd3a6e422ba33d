"""Retention: the worker's maintenance prunes webhook deliveries after
``RESOLVEFLOW_WEBHOOK_RETENTION_DAYS``, and nothing else: executions, attempts, outcomes,
approvals and audit events stay, however old, so an execution that is (or could still become)
``unknown`` keeps its whole record. Rows are backdated, never waited for."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pydantic import ValidationError

from conftest import propose_and_approve
from fixtures_web import REPO, WEBHOOK_SECRET, Web, issue_payload
from resolveflow.config import WebhookSettings
from resolveflow.sandbox.forge.server import Delay
from resolveflow.triage import webhook_secrets
from resolveflow.worker import Jobs

pytest_plugins = ["fixtures_web"]

KEPT = (
    "executions",
    "execution_attempts",
    "attempt_outcomes",
    "approvals",
    "proposals",
    "audit_events",
)


def _count(superuser: Any, table: str, where: str = "true") -> int:
    return int(superuser.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0])


def _keys(superuser: Any, table: str) -> set[str]:
    """Every row's primary key, as text."""
    (pk,) = superuser.execute(
        "SELECT string_agg(a.attname, ',') FROM pg_index i JOIN pg_attribute a"
        " ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)"
        " WHERE i.indrelid = %s::regclass AND i.indisprimary",
        [table],
    ).fetchone()
    return {str(row[0]) for row in superuser.execute(f"SELECT ({pk})::text FROM {table}")}


def _backdate(superuser: Any, table: str, days: int, where: str = "true") -> None:
    """Move every timestamp of the rows ``days`` into the past (keeps their order and checks)."""
    columns = [
        name
        for (name,) in superuser.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
            " AND data_type = 'timestamp with time zone'",
            [table],
        ).fetchall()
    ]
    if columns:
        moves = ", ".join(f"{c} = {c} - make_interval(days => {days})" for c in columns)
        superuser.execute(f"UPDATE {table} SET {moves} WHERE {where}")


def test_old_deliveries_are_pruned_and_executions_with_their_records_never_are(
    web: Web, superuser: Any
) -> None:
    old = web.webhook("issues", issue_payload(1)).json()["delivery"]
    web.work()  # the old delivery's run starts: it leaves a run claim
    assert _count(superuser, "webhook_run_claims") == 1
    # An execution whose outcome is unknown: the request left and its answer never came.
    web.fake.inject(Delay(0.2, apply_write=False), method="POST", path="/comments")
    _, approved = propose_and_approve(web.db, web.world, issue=1)
    final = web.app.executor().execute_one(web.world.tenant.id, approved.execution.id)
    assert final.state.value == "unknown"
    for table in KEPT:  # a year old, all of it
        _backdate(superuser, table, 365)
    _backdate(superuser, "webhook_deliveries", 31, f"delivery_id = '{old}'")
    _backdate(superuser, "webhook_events", 31, f"delivery_id = '{old}'")
    recent = web.webhook("issues", issue_payload(1, action="edited")).json()["delivery"]
    before = {table: _keys(superuser, table) for table in KEPT}
    assert all(before.values())

    result = Jobs(web.app).maintenance()

    assert result["pruned"] == 1
    assert _count(superuser, "webhook_deliveries", f"delivery_id = '{old}'") == 0
    assert _count(superuser, "webhook_events", f"delivery_id = '{old}'") == 0
    assert _count(superuser, "webhook_run_claims") == 0  # went with its delivery
    assert _count(superuser, "webhook_deliveries", f"delivery_id = '{recent}'") == 1
    assert _count(superuser, "webhook_events", f"delivery_id = '{recent}'") == 1
    for table in KEPT:  # maintenance may add (an audit event), never take away
        assert before[table] <= _keys(superuser, table), table
    state = superuser.execute(
        "SELECT state FROM executions WHERE id = %s", [approved.execution.id]
    ).fetchone()[0]
    assert state == "unknown"
    assert web.fake.comments(REPO, 1) == []


def test_a_tenants_own_deliveries_are_pruned_too(web: Web, superuser: Any) -> None:
    secret = webhook_secrets.set_secret(web.db, web.app.token_cipher(), "acme").secret
    assert secret is not None
    body = json.dumps(issue_payload(1)).encode()
    mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    response = web.client.post(
        "/webhooks/github/acme",
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={mac}",
        },
    )
    assert response.status_code == 202, response.text
    _backdate(superuser, "webhook_deliveries", 31)
    _backdate(superuser, "webhook_events", 31)
    assert Jobs(web.app).prune_webhook_deliveries() == 1
    assert _count(superuser, "webhook_deliveries") == 0
    assert _count(superuser, "webhook_events") == 0


@pytest.fixture
def owner_without_superuser(superuser: Any) -> Iterator[str]:
    """The webhook tables and the pruning function owned by a role that is not a superuser, as
    on a Postgres where ResolveFlow migrates as an ordinary owner: row-level security (forced)
    then binds the function too, and only its per-tenant scopes let it reach tenants' rows."""
    role = f"rf_owner_{uuid.uuid4().hex[:8]}"
    superuser.execute(f"CREATE ROLE {role} NOSUPERUSER NOBYPASSRLS")
    superuser.execute(f"GRANT SELECT ON tenants TO {role}")
    for table in ("webhook_deliveries", "webhook_events", "webhook_run_claims"):
        superuser.execute(f"ALTER TABLE {table} OWNER TO {role}")
    superuser.execute(f"ALTER FUNCTION rf_prune_webhook_deliveries(interval) OWNER TO {role}")
    yield role
    superuser.execute(f"REASSIGN OWNED BY {role} TO CURRENT_USER")
    superuser.execute(f"DROP OWNED BY {role}")
    superuser.execute(f"DROP ROLE {role}")


def test_pruning_reaches_every_tenants_rows_under_forced_row_level_security(
    web: Web, superuser: Any, owner_without_superuser: str
) -> None:
    secret = webhook_secrets.set_secret(web.db, web.app.token_cipher(), "acme").secret
    assert secret is not None
    for path, key in (("/webhooks/github/acme", secret), ("/webhooks/github", WEBHOOK_SECRET)):
        body = json.dumps(issue_payload(1)).encode()
        mac = hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
        response = web.client.post(
            path,
            content=body,
            headers={
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": f"sha256={mac}",
            },
        )
        assert response.status_code == 202, response.text
    _backdate(superuser, "webhook_deliveries", 31)
    _backdate(superuser, "webhook_events", 31)
    assert Jobs(web.app).prune_webhook_deliveries() == 2
    assert _count(superuser, "webhook_deliveries") == 0
    assert _count(superuser, "webhook_events") == 0


def test_a_delivery_younger_than_the_retention_is_kept(web: Web, superuser: Any) -> None:
    delivery = web.webhook("issues", issue_payload(1)).json()["delivery"]
    _backdate(superuser, "webhook_deliveries", 29)
    assert Jobs(web.app).prune_webhook_deliveries() == 0
    assert _count(superuser, "webhook_deliveries", f"delivery_id = '{delivery}'") == 1


def test_the_runtime_role_can_only_prune_by_age_and_never_under_three_days(web: Web) -> None:
    with web.db.unscoped() as conn:  # the application's own role
        with pytest.raises(psycopg.errors.InvalidParameterValue), conn.transaction():
            conn.execute("SELECT rf_prune_webhook_deliveries(interval '1 day')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("DELETE FROM webhook_deliveries")
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("DELETE FROM executions")
    with pytest.raises(ValidationError):
        WebhookSettings(retention_days=2)
