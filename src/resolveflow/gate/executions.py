"""Looking at executions and settling the ones only a person can settle."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any
from uuid import UUID

from resolveflow.domain.records import Execution, ExecutionState, Principal, Role, actor_of
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import InvalidTransition
from resolveflow.gate import kind_rules
from resolveflow.gate.domain.actions import parse_action
from resolveflow.gate.domain.policy import require_role
from resolveflow.gate.store import executions as execution_store
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.store import audit
from resolveflow.store.database import Database


def execution_view(execution: Execution) -> dict[str, Any]:
    return {
        "id": str(execution.id),
        "state": execution.state.value,
        "proposal_id": str(execution.proposal_id),
        "approval_id": str(execution.approval_id),
        "digest": execution.digest,
        "idempotency_key": execution.idempotency_key,
        "comment_id": execution.comment_id,
        "comment_url": execution.comment_url,
        "labels_done": execution.labels_done,
        "result_ref": execution.result_ref,
        "result_url": execution.result_url,
        "detail": execution.detail,
        "rate_limit_waits": execution.rate_limit_waits,
        "not_before": execution.not_before.isoformat(),
        "lease_owner": execution.lease_owner,
        "lease_expires_at": execution.lease_expires_at.isoformat()
        if execution.lease_expires_at
        else None,
        "created_at": execution.created_at.isoformat(),
        "updated_at": execution.updated_at.isoformat(),
    }


def list_executions(
    db: Database, principal: Principal, state: str | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    if state is not None:
        state = ExecutionState(state).value
    with db.tenant(principal.tenant_id) as conn:
        listed = execution_store.list_executions(conn, principal.tenant_id, state, limit)
        readers = kind_rules.readers(conn, principal)
    views = []
    for row in listed:
        view = execution_view(row.execution)
        action = parse_action(row.action)
        view["kind"] = action.kind
        view["target"] = action.summary  # an email's names no recipient (only their count)
        if not readers.may_read(row.action):
            # The row stays (the work exists); a server's answer may quote a recipient.
            view["detail"] = readers.hidden(row.action)
        views.append(view)
    return views


def show_execution(db: Database, principal: Principal, execution_id: UUID) -> dict[str, Any]:
    with db.tenant(principal.tenant_id) as conn:
        execution = execution_store.execution_by_id(conn, principal.tenant_id, execution_id)
        proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, execution.proposal_id)
        # As for the proposal (``proposals.describe``): no grant for its mailbox, no email.
        kind_rules.require_readable(conn, principal, proposal.action)
        attempts = execution_store.attempts_for_execution(conn, principal.tenant_id, execution.id)
        events = audit.events_for(
            conn, principal.tenant_id, [str(execution.id), str(execution.proposal_id)]
        )
    view = execution_view(execution)
    action = parse_action(proposal.action)
    view["kind"], view["target"] = action.kind, action.summary
    view["attempts"] = [
        {
            key: (
                value.isoformat()
                if hasattr(value, "isoformat")
                else str(value)
                if isinstance(value, UUID)
                else value
            )
            for key, value in asdict(attempt).items()
        }
        for attempt in attempts
    ]
    view["timeline"] = [
        {
            "at": event.at.isoformat(),
            "actor": event.actor,
            "event": event.event,
            "details": event.details,
        }
        for event in events
    ]
    return view


def resolve(
    db: Database, principal: Principal, execution_id: UUID, *, was_sent: bool, note: str | None
) -> Execution:
    """A person settles an unknown outcome after looking at the outside system. Nothing is ever
    resent."""
    require_role(principal, Role.APPROVER)
    with db.tenant(principal.tenant_id) as conn:
        current = execution_store.execution_by_id(conn, principal.tenant_id, execution_id)
        # Settling whether an email went out means reading its mailbox's mail first.
        proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, current.proposal_id)
        kind_rules.require_readable(conn, principal, proposal.action)
        if current.state is not ExecutionState.UNKNOWN:
            raise InvalidTransition(
                f"only an unknown execution can be resolved; this one is {current.state.value}"
                + (
                    " (run `resolveflow reconcile` first)"
                    if current.state is ExecutionState.SENDING
                    else ""
                )
            )
        detail = f"resolved by {principal.subject}: {'was sent' if was_sent else 'not sent'}"
        if note:
            detail += f" ({note})"
        after = execution_store.resolve_by_person(
            conn, principal.tenant_id, execution_id, was_sent=was_sent, detail=detail
        )
        if after is None:
            raise InvalidTransition("the execution is being reconciled right now; try again")
        audit.record(
            conn,
            tenant_id=principal.tenant_id,
            actor=actor_of(principal),
            event=AuditEvent.EXECUTION_RESOLVED,
            subject_type="execution",
            subject_id=execution_id,
            details={"was_sent": was_sent, "state": after.state.value, "note": note},
        )
    return after
