"""Reconciliation: settle executions whose outcome is unknown by looking at the outside system.

Never resends anything. Each action kind says where its hidden marker went and how to find it
(``execution/kinds``); what reconciliation finds moves the execution forward, and what it cannot
prove is left ``unknown`` for a person.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from resolveflow.adapters.github.protocol import GitHub
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AuditEvent, Credential
from resolveflow.errors import ProviderError, ResolveFlowError
from resolveflow.gate.credentials import ApproverTokenLookup, approver_token
from resolveflow.gate.domain.actions import parse_action
from resolveflow.gate.kinds import KindRegistry
from resolveflow.gate.kinds.base import Evidence, KindOffer, Settled, sent_with
from resolveflow.gate.kinds.gitlab_issue_create import GitLabAccess
from resolveflow.gate.lease import GateSettings, new_owner_id
from resolveflow.gate.recorder import Recorder
from resolveflow.gate.store import executions as store
from resolveflow.gate.store.context import ExecutionContext, execution_context
from resolveflow.gate.store.executions import SentWith
from resolveflow.store import audit
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database

__all__ = ["Reconciler", "Settled", "Skipped"]

logger = logging.getLogger(__name__)

_OPEN = (ExecutionState.SENDING, ExecutionState.UNKNOWN)


@dataclass(frozen=True)
class Skipped:
    """An execution reconciliation looked at and left as it was (``state``), with why."""

    execution_id: UUID
    state: ExecutionState
    reason: str


class Reconciler:
    def __init__(
        self,
        db: Database,
        github: GitHub,
        settings: GateSettings,
        owner: str | None = None,
        token_lookup: ApproverTokenLookup | None = None,
        gitlab: GitLabAccess | None = None,
        offered: Sequence[KindOffer] = (),
    ) -> None:
        self.token_lookup = token_lookup
        self.db = db
        self.github = github
        self.settings = settings
        self.owner = owner or new_owner_id()
        self.actor = f"reconciler:{self.owner}"
        record = Recorder(db, self.owner, settings)
        self.kinds = KindRegistry(github, record, gitlab, offered)

    def run(
        self, tenant_ids: list[UUID] | None = None, min_age_seconds: float = 0
    ) -> list[Settled]:
        """Settle what can be settled. ``min_age_seconds`` spaces out re-checks of ``unknown``
        executions (a background worker passes its interval; a person running it passes 0)."""
        return [
            result
            for result in self.survey(tenant_ids, min_age_seconds)
            if isinstance(result, Settled)
        ]

    def survey(
        self, tenant_ids: list[UUID] | None = None, min_age_seconds: float = 0
    ) -> list[Settled | Skipped]:
        """As ``run``, with every execution looked at: those settled here, and those skipped
        with the reason (``reconcile --json`` reports both)."""
        if tenant_ids is None:
            with self.db.unscoped() as conn:
                tenant_ids = [tenant.id for tenant in tenant_store.list_tenants(conn)]
        results: list[Settled | Skipped] = []
        for tenant_id in tenant_ids:
            with self.db.tenant(tenant_id) as conn:
                candidates = store.reconcile_candidates(conn, tenant_id, min_age_seconds)
            results += [self._one_of_many(candidate) for candidate in candidates]
        return results

    def _one_of_many(self, candidate: Execution) -> Settled | Skipped:
        """One candidate's failure (an unreadable token, a store error) is recorded on it and
        never stops the others."""
        try:
            settled = self.reconcile_one(candidate)
        except ResolveFlowError as exc:
            logger.warning(
                "could not reconcile", extra={"execution": str(candidate.id), "error": exc.message}
            )
            self._record_failure(candidate, exc)
            return Skipped(candidate.id, candidate.state, f"could not reconcile: {exc.message}")
        if settled is None:
            reason = "not settled here: another process holds it or settled it meanwhile"
            return Skipped(candidate.id, candidate.state, reason)
        return settled

    def _record_failure(self, execution: Execution, exc: ResolveFlowError) -> None:
        try:
            with self.db.tenant(execution.tenant_id) as conn:
                audit.record(
                    conn,
                    tenant_id=execution.tenant_id,
                    actor=self.actor,
                    event=AuditEvent.EXECUTION_RECONCILE_FAILED,
                    subject_type="execution",
                    subject_id=execution.id,
                    details={"error": type(exc).__name__, "message": exc.message},
                )
        except ResolveFlowError:
            logger.exception("could not record a reconciliation failure")

    def reconcile_one(self, candidate: Execution) -> Settled | None:
        """None when this reconciler settled nothing (someone else holds it, it settled
        meanwhile, or the lease was lost before the result could be recorded)."""
        evidence = self._take_over(candidate)
        if evidence is None:
            return None
        if not evidence.attempted:
            return self.requeue(evidence.execution, "no request had left; returned to the queue")
        try:
            kind = self.kinds.for_action(evidence.action, evidence.execution.tenant_id)
            return kind.reconcile(evidence, self)
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
            steps = store.attempt_summary(conn, execution)
            action = parse_action(context.proposal.action)
            marker_step = self.kinds.for_action(action, tenant_id).spec.steps[0]
            sent = steps[marker_step].sent_with if marker_step in steps else None
            token, check_author = self._reading_credential(conn, context, sent)
        return Evidence(
            execution=execution,
            action=action,
            token=token,
            attempted=frozenset(step for step, seen in steps.items() if seen.may_have_left),
            first_started={
                step: seen.first_started for step, seen in steps.items() if seen.may_have_left
            },
            check_author=check_author,
        )

    def _reading_credential(
        self, conn: Connection, context: ExecutionContext, sent: SentWith | None
    ) -> tuple[str | None, bool]:
        """Read with the credential the marker's request was sent with, and check the author
        against that account. When it was the approver's token and that token is gone or has
        changed, read with the service token and let marker and exact text alone decide."""
        if sent is None or sent.credential is Credential.SERVICE:
            return None, True
        token = approver_token(conn, context, self.token_lookup)
        if token is not None and sent_with(token).token_fingerprint == sent.token_fingerprint:
            return token, True
        return None, False

    # --- the three ways to settle (the Settler protocol the kinds use) ----------------------

    def finish(
        self, execution: Execution, state: ExecutionState, detail: str, **fields: Any
    ) -> Settled | None:
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
        return self._reported(execution, after, detail)

    def leave_unknown(self, execution: Execution, detail: str, **fields: Any) -> Settled | None:
        return self.finish(
            execution,
            ExecutionState.UNKNOWN,
            f"{detail}; a person must decide (executions resolve)",
            **fields,
        )

    def requeue(self, execution: Execution, detail: str, **fields: Any) -> Settled | None:
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
        return self._reported(execution, after, detail)

    def _reported(
        self, execution: Execution, after: Execution | None, detail: str
    ) -> Settled | None:
        """What was recorded, or None: a reconciler that lost its lease reports nothing."""
        if after is None:
            logger.warning("lease lost; nothing recorded", extra={"execution": str(execution.id)})
            return None
        logger.info("reconciled", extra={"execution": str(after.id), "state": after.state.value})
        return Settled(after.id, after.state, detail)
