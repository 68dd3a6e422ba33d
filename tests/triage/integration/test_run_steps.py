"""The triage steps' writes on the caller's connection: a refused resume is recorded in the
transaction that read the approval it refuses, not on a second pooled connection beside it."""

from __future__ import annotations

import uuid

import pytest

from conftest import World
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.store import audit
from resolveflow.store.database import Database
from resolveflow.triage.graph import steps
from resolveflow.triage.graph.state import TriageState
from resolveflow.triage.store import runs as run_store


def _run(db: Database, world: World) -> TriageState:
    tenant_id, run_id = world.tenant.id, uuid.uuid4()
    requester = world.requester(db).id
    with db.tenant(tenant_id) as conn:
        run_store.insert_run(
            conn,
            run_id=run_id,
            tenant_id=tenant_id,
            workflow="triage",
            repository=world.repository,
            issue_number=1,
            requested_by=requester,
        )
    return {"tenant_id": str(tenant_id), "run_id": str(run_id)}


def _refusals(db: Database, state: TriageState) -> list[audit.RecordedEvent]:
    with db.tenant(uuid.UUID(state["tenant_id"])) as conn:
        events = audit.events_for(conn, uuid.UUID(state["tenant_id"]), [state["run_id"]])
    return [e for e in events if e.event == AuditEvent.RUN_RESUME_REFUSED.value]


def test_an_unknown_approval_is_refused_on_one_connection(database_url: str, world: World) -> None:
    # A pool of one: a refusal that wanted a second connection waited for it and timed out.
    with Database(database_url, max_size=1, connect_timeout=1) as db:
        state = _run(db, world)
        outcome = steps.execute_approved(db, None, state, uuid.uuid4())  # type: ignore[arg-type]
        assert outcome == {"resume_refused": "no such approval in this tenant", "approval_id": None}
        assert [e.details for e in _refusals(db, state)] == [
            {"reason": "no such approval in this tenant"}
        ]


def test_a_refusal_rolls_back_with_the_transaction_it_was_recorded_in(
    db: Database, world: World
) -> None:
    state = _run(db, world)
    with pytest.raises(RuntimeError), db.tenant(world.tenant.id) as conn:
        steps.refuse_resume(conn, state, "the approval is for another proposal")
        raise RuntimeError("the caller failed after the check")
    assert _refusals(db, state) == []
