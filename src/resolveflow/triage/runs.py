"""Looking at triage runs: what was seen, how it was classified, what was proposed, what happened."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.adapters.github.protocol import GitHub
from resolveflow.domain.records import Principal, Proposal
from resolveflow.domain.vocabulary import RunStatus
from resolveflow.errors import InvalidInput
from resolveflow.gate import parts as part_service
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.actions import parse_action
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.store import audit
from resolveflow.store.database import Database
from resolveflow.triage.store import runs as run_store
from resolveflow.triage.store.runs import Run

RUN_STATUSES = tuple(status.value for status in RunStatus)


def _run_summary(run: Run) -> dict[str, Any]:
    return {
        "run_id": str(run.id),
        "status": run.status,
        "target": f"{run.repository}#{run.issue_number}",
        "classification": run.classification,
        "rule": run.rule,
        "branch": run.branch,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
    }


def list_runs(
    db: Database, principal: Principal, status: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    if status is not None and status not in RUN_STATUSES:
        raise InvalidInput(f"unknown status {status!r}; one of {', '.join(RUN_STATUSES)}")
    with db.tenant(principal.tenant_id) as conn:
        runs = run_store.list_runs(conn, principal.tenant_id, status, limit)
    return [_run_summary(run) for run in runs]


def describe_run(db: Database, principal: Principal, run_id: UUID) -> dict[str, Any]:
    with db.tenant(principal.tenant_id) as conn:
        run = run_store.run_by_id(conn, principal.tenant_id, run_id)
        snapshot = run_store.snapshot_for_run(conn, principal.tenant_id, run_id)
        proposal = proposal_store.latest_for_run(conn, principal.tenant_id, run_id)
        events = audit.events_for(conn, principal.tenant_id, [str(run_id)])
    view = _run_summary(run)
    view.update(
        reason=run.reason,
        route_reason=run.route_reason,
        detail=run.detail,
        facts=snapshot.facts if snapshot else None,
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
    # Every part the run made, kept or left out, with its score, floor and band.
    place = run.repository or ""
    view["parts"] = [p.as_json() for p in part_service.run_parts(db, principal, run_id, place)]
    view["timeline"] = [
        {
            "at": e.at.isoformat(),
            "actor": e.actor,
            "event": e.event,
            "details": e.details,
        }
        for e in sorted(events, key=lambda e: (e.at, e.id))
    ]
    return view


def _events(db: Database, principal: Principal, ids: list[str]) -> list[audit.RecordedEvent]:
    with db.tenant(principal.tenant_id) as conn:
        return audit.events_for(conn, principal.tenant_id, ids)


def close_as_offered(db: Database, principal: Principal, github: GitHub, run_id: UUID) -> Proposal:
    """The close-after-grace a run's duplicate part offered (the run's record keeps the offer),
    proposed now, by one click on the run page: the issue, the original and the default notice
    and grace period; ``create_close_duplicate_proposal`` checks the issue is open, claims it
    (a second click is refused, naming the first) and refuses chains and circles."""
    with db.tenant(principal.tenant_id) as conn:
        run = run_store.run_by_id(conn, principal.tenant_id, run_id)
    offer = run.detail.get("close_duplicate")
    original = offer.get("original") if isinstance(offer, dict) else None
    if not isinstance(original, int) or isinstance(original, bool):
        raise InvalidInput("this run offers no close as a duplicate")
    return proposal_service.create_close_duplicate_proposal(
        db,
        principal,
        github,
        repository=run.repository,
        issue=run.issue_number,
        original=original,
        note=f"offered by triage run {run_id}: its duplicate part names #{original}",
    )
