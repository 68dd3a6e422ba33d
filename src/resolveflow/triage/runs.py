"""Looking at triage runs: what was seen, how it was classified, what was proposed, what happened."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.domain.vocabulary import RunStatus
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.actions import parse_action
from resolveflow.store import audit
from resolveflow.store.database import Database
from resolveflow.triage.store import runs as run_store

RUN_STATUSES = tuple(status.value for status in RunStatus)


def _run_summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": str(row["id"]),
        "status": row["status"],
        "target": f"{row['repository']}#{row['issue_number']}",
        "classification": row.get("classification"),
        "rule": row.get("rule"),
        "branch": row.get("branch"),
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }


def list_runs(
    db: Database, principal: Principal, status: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    if status is not None and status not in RUN_STATUSES:
        from resolveflow.errors import InvalidInput

        raise InvalidInput(f"unknown status {status!r}; one of {', '.join(RUN_STATUSES)}")
    with db.tenant(principal.tenant_id) as conn:
        rows = run_store.list_runs(conn, principal.tenant_id, status, limit)
    return [_run_summary(row) for row in rows]


def describe_run(db: Database, principal: Principal, run_id: UUID) -> dict[str, Any]:
    with db.tenant(principal.tenant_id) as conn:
        row = run_store.run_by_id(conn, principal.tenant_id, run_id)
        snapshot = run_store.snapshot_for_run(conn, principal.tenant_id, run_id)
        proposal = run_store.latest_proposal_for_run(conn, principal.tenant_id, run_id)
        events = audit.events_for(conn, principal.tenant_id, [str(run_id)])
    view = _run_summary(row)
    view.update(
        reason=row.get("reason"),
        route_reason=row.get("route_reason"),
        detail=row["detail"],
        facts=snapshot["facts"] if snapshot else None,
        proposal=None,
        proposal_id=None,
        digest=None,
    )
    if proposal is not None:
        # The version carried out, never a later one (issue 11: one could be written after it
        # before such edits were refused, and then looked decidable).
        started = proposal_service.carried_out(db, principal, proposal.id)
        shown = UUID(started["id"]) if started else proposal.id
        described = proposal_service.describe(db, principal, shown)
        parse_action(described["action"])
        view.update(proposal=described, proposal_id=described["id"], digest=described["digest"])
        events += _events(
            db,
            principal,
            [described["id"]] + ([described["execution"]["id"]] if described["execution"] else []),
        )
    from resolveflow.triage.investigation import investigation_view

    view["investigation"] = investigation_view(db, principal.tenant_id, run_id)
    view["timeline"] = [
        {
            "at": e["at"].isoformat(),
            "actor": e["actor"],
            "event": e["event"],
            "details": e["details"],
        }
        for e in sorted(events, key=lambda e: (e["at"], e["id"]))
    ]
    return view


def _events(db: Database, principal: Principal, ids: list[str]) -> list[dict[str, Any]]:
    with db.tenant(principal.tenant_id) as conn:
        return audit.events_for(conn, principal.tenant_id, ids)
