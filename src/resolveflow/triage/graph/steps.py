"""The database side of the triage nodes: snapshots, audit, proposals, the hand-off to the gate."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from resolveflow.domain.records import ExecutionState, Proposal
from resolveflow.domain.vocabulary import AuditEvent, Decision, RunStatus, SuggestionKind
from resolveflow.errors import NotFound, ResolveFlowError
from resolveflow.gate import feedback
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.parts import PartRecord
from resolveflow.gate.domain.quiet import MINIMUM
from resolveflow.gate.domain.thresholds import Scored, band_of
from resolveflow.gate.executor import Executor
from resolveflow.gate.quiet import DEFAULT_QUIET, Quiet
from resolveflow.gate.store import executions as execution_store
from resolveflow.gate.store import parts as part_store
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.store import audit
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database
from resolveflow.triage.domain.parts import PartName, TriageParts
from resolveflow.triage.domain.rules import ProposedAction
from resolveflow.triage.graph.state import TriageState
from resolveflow.triage.store import runs as run_store

logger = logging.getLogger(__name__)

WORKFLOW_ACTOR = "workflow:triage"
_RUN_STATUS_FOR_EXECUTION = {
    ExecutionState.SENT: RunStatus.COMPLETED,
    ExecutionState.PARTIAL: RunStatus.COMPLETED,
    ExecutionState.FAILED: RunStatus.FAILED,
    ExecutionState.NOT_SENT: RunStatus.FAILED,
}


def _ids(state: TriageState) -> tuple[UUID, UUID]:
    return UUID(state["tenant_id"]), UUID(state["run_id"])


def _audit_in(conn: Connection, state: TriageState, event: AuditEvent, **details: Any) -> None:
    tenant_id, run_id = _ids(state)
    audit.record(
        conn,
        tenant_id=tenant_id,
        actor=WORKFLOW_ACTOR,
        event=event,
        subject_type="run",
        subject_id=run_id,
        run_id=run_id,
        details=details,
    )


def audit_run(db: Database, state: TriageState, event: AuditEvent, **details: Any) -> None:
    with db.tenant(UUID(state["tenant_id"])) as conn:
        _audit_in(conn, state, event, **details)


def record_snapshot(
    db: Database, state: TriageState, raw: dict[str, Any], facts: dict[str, Any]
) -> None:
    tenant_id, run_id = _ids(state)
    with db.tenant(tenant_id) as conn:
        run_store.insert_snapshot(conn, tenant_id, run_id, raw, facts)
        _audit_in(
            conn,
            state,
            AuditEvent.RUN_EVIDENCE,
            facts={k: v["value"] for k, v in facts.items()},
            check_runs=len(raw.get("check_runs", [])),
            comments=len(raw.get("comments", [])),
        )


def record_config(db: Database, state: TriageState, config: dict[str, Any]) -> None:
    """The repository file's sha and problems in the run's detail, for its page and
    ``runs show`` (kept after the run is over)."""
    tenant_id, run_id = _ids(state)
    detail = {"config_sha": config.get("sha"), "config_errors": list(config.get("errors") or ())}
    with db.tenant(tenant_id) as conn:
        run_store.set_status(conn, tenant_id, run_id, RunStatus.RUNNING, detail)


def create_run_proposal(
    db: Database,
    state: TriageState,
    action: ProposedAction,
    author_kind: str = "workflow",
    quiet: Quiet = DEFAULT_QUIET,
    parts: TriageParts | None = None,
    records: Sequence[PartRecord] = (),
) -> Proposal | None:
    """Record the classification, then propose on behalf of the run's requester (or nothing).
    The run's detail keeps every part, kept or left out, with its score and floor; ``records``
    (the same parts as the gate stores them) are written with the proposal or the no_action."""
    shown: dict[str, Any] = {"parts": parts.as_json()} if parts is not None and parts.parts else {}
    offer = parts.close_offer(state["repository"], state["issue_number"]) if parts else None
    if offer is not None:  # the run page offers it; the run's own proposal is unchanged
        shown["close_duplicate"] = offer.as_json()
    tenant_id, run_id = _ids(state)
    with db.tenant(tenant_id) as conn:
        existing = proposal_store.latest_for_run(conn, tenant_id, run_id)
        if existing is not None:
            # The node is re-running after a crash between its commit and the checkpoint (the
            # status may not have been written yet either: a run at its pause must say so).
            if run_store.run_by_id(conn, tenant_id, run_id).status == RunStatus.RUNNING:
                run_store.set_status(
                    conn,
                    tenant_id,
                    run_id,
                    RunStatus.AWAITING_APPROVAL,
                    {"proposal_id": str(existing.id)},
                )
            return existing
        run_store.insert_classification(
            conn,
            tenant_id=tenant_id,
            run_id=run_id,
            classification=state["classification"],
            rule=state["rule"],
            reason=state["reason"],
            branch=state["branch"],
            route_reason=state.get("route_reason"),
        )
        requester = tenant_store.principal_by_id(conn, tenant_id, UUID(state["requested_by"]))
        if action.empty:
            run_store.set_status(
                conn, tenant_id, run_id, RunStatus.NO_ACTION, {"notes": list(action.notes), **shown}
            )
            part_store.insert_parts(conn, tenant_id, run_id, None, records)
            _audit_in(conn, state, AuditEvent.RUN_NO_ACTION, notes=list(action.notes))
            return None
    if requester is None:
        raise NotFound("the principal who started this run no longer exists")
    proposal = proposal_service.create_proposal(
        db,
        requester,
        repository=state["repository"],
        issue=state["issue_number"],
        comment=action.comment,
        labels=list(action.labels),
        label_notes=action.label_notes,
        suggest=action.suggest and bool(action.labels),
        note="; ".join(action.notes) or None,
        run_id=run_id,
        author_kind=author_kind,
        quiet=quiet,
        parts=records,
    )
    with db.tenant(tenant_id) as conn:
        run_store.set_status(
            conn,
            tenant_id,
            run_id,
            RunStatus.AWAITING_APPROVAL,
            {"proposal_id": str(proposal.id), "notes": list(action.notes), **shown},
        )
    return proposal


def refuse_resume(conn: Connection, state: TriageState, reason: str) -> dict[str, Any]:
    """Recorded in the caller's transaction, the one that read what the refusal is about."""
    logger.warning("resume refused", extra={"run": state.get("run_id"), "reason": reason})
    _audit_in(conn, state, AuditEvent.RUN_RESUME_REFUSED, reason=reason)
    return {"resume_refused": reason, "approval_id": None}


def execute_approved(
    db: Database, executor: Executor, state: TriageState, approval_id: UUID
) -> dict[str, Any]:
    """Only an approval, in this tenant, of this run's latest proposal continues the run."""
    tenant_id, run_id = _ids(state)
    with db.tenant(tenant_id) as conn:
        approval = proposal_store.approval_by_id(conn, tenant_id, approval_id)
        if approval is None:
            return refuse_resume(conn, state, "no such approval in this tenant")
        proposal = proposal_store.proposal_by_id(conn, tenant_id, approval.proposal_id)
        latest = proposal_store.latest_for_run(conn, tenant_id, run_id)
        if proposal.run_id != run_id or latest is None or latest.id != proposal.id:
            return refuse_resume(conn, state, "the approval is for another proposal")
        if approval.decision is Decision.REJECTED:
            run_store.set_status(
                conn, tenant_id, run_id, RunStatus.REJECTED, {"reason": approval.reason}
            )
            return {"outcome": RunStatus.REJECTED.value, "resume_refused": None}
        execution = execution_store.execution_for_proposal(conn, tenant_id, proposal.id)
        if execution is None:
            return refuse_resume(conn, state, "the approval has no execution")
        run_store.set_status(
            conn, tenant_id, run_id, RunStatus.EXECUTING, {"execution_id": str(execution.id)}
        )
    try:
        final = executor.execute_one(tenant_id, execution.id)
    except ResolveFlowError as exc:
        # The execution stays claimed or pending; the worker and reconciliation settle it.
        logger.warning("execution did not finish", extra={"run": str(run_id), "error": exc.message})
        return {"outcome": f"executing: {exc.message}", "resume_refused": None}
    status = _RUN_STATUS_FOR_EXECUTION.get(final.state)
    if status is not None:
        with db.tenant(tenant_id) as conn:
            run_store.set_status(
                conn, tenant_id, run_id, status, {"execution_state": final.state.value}
            )
    return {"outcome": final.state.value, "resume_refused": None}


def mark_failed(db: Database, state: TriageState, reason: str) -> None:
    tenant_id, run_id = _ids(state)
    with db.tenant(tenant_id) as conn:
        run_store.set_status(conn, tenant_id, run_id, RunStatus.FAILED, {"error": reason})
        _audit_in(conn, state, AuditEvent.RUN_FAILED, error=reason)


@dataclass(frozen=True)
class PartHistory:
    """What this repository's decisions say of a run's parts: the floor each kind's decisions
    were fitted to, where fitted (with how), and how the learned labels of the labels part's
    score band fared, once there are ``MINIMUM`` of them (its label's confidence then comes from
    it, not from its score alone: ``triage/domain/label_notes.py``)."""

    floors: dict[PartName, tuple[float, str]]
    acceptance: dict[PartName, float]


def part_history(
    db: Database, state: TriageState, parts: TriageParts, kinds: Mapping[PartName, SuggestionKind]
) -> PartHistory:
    """``PartHistory`` of the kept parts with a score and a floor, from one read of the
    repository's decisions (issue 31's fit: a floor never below the part's own, which stands
    until there are enough decisions)."""
    scored = [
        (p.name, p.score, p.floor)
        for p in parts.kept
        if p.score is not None and p.floor is not None and p.name in kinds
    ]
    if not scored:
        return PartHistory({}, {})
    tenant_id, _ = _ids(state)
    with db.tenant(tenant_id) as conn:
        found = feedback.scored_examples_in(conn, tenant_id, state["repository"])
    floors: dict[PartName, tuple[float, str]] = {}
    acceptance: dict[PartName, float] = {}
    for name, score, floor in scored:
        fitted = feedback.fitted_from(found, kinds[name], floor)
        if fitted.fitted:
            floors[name] = (fitted.value, fitted.why)
        if name is PartName.LABELS:
            labels = [
                Scored(e.score, e.approved)
                for e in found
                if e.kind is SuggestionKind.LABEL and e.score is not None
            ]
            figure = band_of(score, labels)
            if figure.decisions >= MINIMUM:
                acceptance[name] = figure.approved / figure.decisions
    return PartHistory(floors, acceptance)
