"""Reconciliation: settle executions whose outcome is unknown by looking at the outside system.

Never resends anything. Each action kind says where its hidden marker went and how to find it
(``execution/kinds``); what reconciliation finds moves the execution forward, and what it cannot
prove is left ``unknown`` for a person.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from resolveflow.adapters.github.protocol import GitHub
from resolveflow.domain.actions import parse_action
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep, AuditEvent
from resolveflow.errors import ProviderError
from resolveflow.execution.credentials import ApproverTokenLookup, approver_token
from resolveflow.execution.kinds import KindRegistry
from resolveflow.execution.kinds.base import Evidence, Settled
from resolveflow.execution.lease import GateSettings, new_owner_id
from resolveflow.execution.outcomes import Recorder
from resolveflow.store import audit
from resolveflow.store import executions as store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.context import execution_context
from resolveflow.store.database import Database

__all__ = ["Reconciler", "Settled"]

logger = logging.getLogger(__name__)

_OPEN = (ExecutionState.SENDING, ExecutionState.UNKNOWN)


class Reconciler:
    def __init__(
        self,
        db: Database,
        github: GitHub,
        settings: GateSettings,
        owner: str | None = None,
        token_lookup: ApproverTokenLookup | None = None,
    ) -> None:
        self.token_lookup = token_lookup
        self.db = db
        self.github = github
        self.settings = settings
        self.owner = owner or new_owner_id()
        self.actor = f"reconciler:{self.owner}"
        self.kinds = KindRegistry(github, Recorder(db, self.owner, settings))

    def run(
        self, tenant_ids: list[UUID] | None = None, min_age_seconds: float = 0
    ) -> list[Settled]:
        """Settle what can be settled. ``min_age_seconds`` spaces out re-checks of ``unknown``
        executions (a background worker passes its interval; a person running it passes 0)."""
        if tenant_ids is None:
            with self.db.unscoped() as conn:
                tenant_ids = [tenant.id for tenant in tenant_store.list_tenants(conn)]
        results: list[Settled] = []
        for tenant_id in tenant_ids:
            with self.db.tenant(tenant_id) as conn:
                candidates = store.reconcile_candidates(conn, tenant_id, min_age_seconds)
            for candidate in candidates:
                settled = self.reconcile_one(candidate)
                if settled is not None:
                    results.append(settled)
        return results

    def reconcile_one(self, candidate: Execution) -> Settled | None:
        evidence = self._take_over(candidate)
        if evidence is None:
            return None  # someone else holds it, or it settled meanwhile
        if not evidence.attempted:
            return self.requeue(evidence.execution, "no request had left; returned to the queue")
        try:
            return self.kinds.for_action(evidence.action).reconcile(evidence, self)
        except ProviderError as exc:
            return self.leave_unknown(
                evidence.execution, f"could not check the outside system: {exc.message}"
            )

    def _take_over(self, candidate: Execution) -> Evidence | None:
        tenant_id = candidate.tenant_id
        with self.db.tenant(tenant_id) as conn:
            execution = store.take_over_for_reconcile(
                conn, tenant_id, candidate.id, self.owner, self.settings.lease_seconds
            )
            if execution is None:
                return None
            context = execution_context(conn, execution)
            attempted = frozenset(
                step for step in AttemptStep if store.step_attempted(conn, execution, step)
            )
            first_started = {
                step: started
                for step in attempted
                if (started := store.first_attempt_started(conn, execution, step)) is not None
            }
            token = approver_token(conn, context, self.token_lookup)
        return Evidence(
            execution=execution,
            action=parse_action(context.proposal.action),
            token=token,
            attempted=attempted,
            first_started=first_started,
        )

    # --- the three ways to settle (the Settler protocol the kinds use) ----------------------

    def finish(
        self, execution: Execution, state: ExecutionState, detail: str, **fields: Any
    ) -> Settled:
        with self.db.tenant(execution.tenant_id) as conn:
            after = store.finish(
                conn,
                execution,
                owner=self.owner,
                state=state,
                detail=detail,
                from_states=_OPEN,
                **fields,
            )
            changed = (
                state is not execution.state
                or detail != execution.detail
                or any(value != getattr(execution, name) for name, value in fields.items())
            )
            if after is not None and changed:  # a repeated "still unknown" is not news
                audit.record(
                    conn,
                    tenant_id=execution.tenant_id,
                    actor=self.actor,
                    event=AuditEvent.reconciled(state),
                    subject_type="execution",
                    subject_id=execution.id,
                    details={"detail": detail, "from": execution.state.value},
                )
        logger.info("reconciled", extra={"execution": str(execution.id), "state": state.value})
        return Settled(execution.id, state, detail)

    def leave_unknown(self, execution: Execution, detail: str, **fields: Any) -> Settled:
        return self.finish(
            execution,
            ExecutionState.UNKNOWN,
            f"{detail}; a person must decide (executions resolve)",
            **fields,
        )

    def requeue(self, execution: Execution, detail: str, **fields: Any) -> Settled:
        with self.db.tenant(execution.tenant_id) as conn:
            after = store.release_for_retry(
                conn,
                execution,
                owner=self.owner,
                wait_seconds=0,
                detail=detail,
                count_wait=False,
                from_states=_OPEN,
                **fields,
            )
            if after is not None:
                audit.record(
                    conn,
                    tenant_id=execution.tenant_id,
                    actor=self.actor,
                    event=AuditEvent.EXECUTION_REQUEUED,
                    subject_type="execution",
                    subject_id=execution.id,
                    details={"detail": detail},
                )
        return Settled(execution.id, ExecutionState.PENDING, detail)
