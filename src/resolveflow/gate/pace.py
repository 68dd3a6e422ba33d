"""Before every mutating request, a slot in its credential's pace (gate/domain/pace.py).

``Pacer.admit`` runs in a transaction of the gate: in the claiming one for a kind whose first
request is started with the claim, else in one of its own just before the request's attempt row.
A slot due within ``inline_wait_seconds`` is waited for in place; a later one gives the execution
back to the queue holding that slot (``pace_slot_at``), with "waiting for GitHub's pace, next at
HH:MM:SS" as its detail, and asks for it to be picked up then (a job scheduled at the slot, when
a scheduler is wired; otherwise the next drain finds it due). Executions are claimed in queue
order and take slots in claim order, so the queue's order is the sending order.

A 403 or 429 that still comes back is the gate's rate-limit path, as before: it waits for
Retry-After (``Recorder.rate_limited``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from resolveflow.domain.records import Execution
from resolveflow.domain.vocabulary import AuditEvent, Credential
from resolveflow.gate.domain.pace import PaceTarget, held_slot_usable, pace_key, waiting_detail
from resolveflow.gate.lease import PaceSettings
from resolveflow.gate.store import pace as store
from resolveflow.gate.store.executions import SentWith
from resolveflow.store import audit
from resolveflow.store import github_app as github_app_store
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)

# Called in the releasing transaction with the execution given back and the seconds until its
# slot: wiring schedules an ``execute`` job then.
Scheduler = Callable[[Connection, Execution, float], None]


@dataclass(frozen=True)
class Admitted:
    wait_seconds: float  # before the request may leave


class Pacer:
    def __init__(
        self,
        db: Database,
        owner: str,
        settings: PaceSettings,
        schedule: Scheduler | None = None,
    ) -> None:
        self.db = db
        self.owner = owner
        self.settings = settings
        self.schedule = schedule

    def paces(self, target: PaceTarget) -> bool:
        return target in self.settings.paces

    def admit_now(
        self, execution: Execution, target: PaceTarget, sent_with: SentWith
    ) -> Admitted | Execution:
        """``admit`` in a transaction of its own."""
        if not self.paces(target):
            return Admitted(0.0)
        with self.db.tenant(execution.tenant_id) as conn:
            return self.admit(conn, execution, target, sent_with)

    def admit(
        self, conn: Connection, execution: Execution, target: PaceTarget, sent_with: SentWith
    ) -> Admitted | Execution:
        """How long to wait before the request, or the execution given back to the queue (as
        ``conn``'s transaction will commit it; unchanged if this owner lost its lease)."""
        pace = self.settings.paces.get(target)
        if pace is None:
            return Admitted(0.0)
        if execution.pace_slot_at is not None:
            store.use_held_slot(conn, execution, owner=self.owner)
            now = store.database_now(conn)
            held = execution.pace_slot_at
            if held_slot_usable(held, now, self.settings.hold_grace_seconds):
                return Admitted(max(0.0, (held - now).total_seconds()))
        installation = None
        if target is PaceTarget.GITHUB and sent_with.credential is Credential.SERVICE:
            # with a GitHub App, the installation covering the repository (None without one)
            installation = github_app_store.proposal_installation(
                conn, execution.tenant_id, execution.proposal_id
            )
        key = pace_key(
            target,
            sent_with.credential,
            sent_with.token_fingerprint,
            execution.tenant_id,
            installation,
        )
        slot, now = store.reserve_slot(conn, key, pace)
        wait = (slot - now).total_seconds()
        if wait <= self.settings.inline_wait_seconds:
            return Admitted(wait)
        detail = waiting_detail(target, slot)
        after = store.release_for_pace(conn, execution, owner=self.owner, slot=slot, detail=detail)
        if after is None:
            logger.warning("lease lost while pacing", extra={"execution": str(execution.id)})
            return execution
        audit.record(
            conn,
            tenant_id=execution.tenant_id,
            actor=f"executor:{self.owner}",
            event=AuditEvent.EXECUTION_DEFERRED,
            subject_type="execution",
            subject_id=execution.id,
            details={
                "proposal_id": str(execution.proposal_id),
                "detail": detail,
                "wait_seconds": round(wait, 3),
                "reason": "pace",
            },
        )
        if self.schedule is not None:
            self.schedule(conn, after, wait)
        logger.info("execution paced", extra={"execution": str(execution.id), "detail": detail})
        return after
