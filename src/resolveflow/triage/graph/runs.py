"""Starting triage runs, resuming them, and the run side of deciding (``gate.decisions``)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from langgraph.types import Command

from resolveflow.domain.records import Principal, Role, actor_of
from resolveflow.domain.vocabulary import AuditEvent, RunStatus
from resolveflow.errors import (
    InvalidInput,
    NotAuthorized,
    ResolveFlowError,
    RunBusy,
    StoreUnavailable,
    category_class,
)
from resolveflow.gate import decisions
from resolveflow.gate.approvals import AliasLookup, MailboxLookup, RepositoryLabels
from resolveflow.gate.lease import new_owner_id
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.store import audit
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database
from resolveflow.triage.store import runs as run_store

logger = logging.getLogger(__name__)


@dataclass
class RunController:
    """Runs the triage graph for one process. ``graph`` is the compiled graph with checkpointer."""

    db: Database
    graph: Any
    lease_seconds: float
    approval_ttl_seconds: int
    mailboxes: MailboxLookup | None = None  # "mailbox configured" when approving mail
    aliases: AliasLookup | None = None  # "allowed by the project alias" for a GitLab issue

    @contextmanager
    def _leased(self, tenant_id: UUID, run_id: UUID) -> Iterator[None]:
        owner = new_owner_id()
        with self.db.tenant(tenant_id) as conn:
            if not run_store.acquire_lease(conn, tenant_id, run_id, owner, self.lease_seconds):
                raise RunBusy("run is already being resumed by another process")
        try:
            yield
        finally:
            with self.db.tenant(tenant_id) as conn:
                run_store.release_lease(conn, tenant_id, run_id, owner)

    def _config(self, run_id: UUID) -> dict[str, Any]:
        return {"configurable": {"thread_id": str(run_id)}}

    def start(
        self, principal: Principal, repository: str, number: int, run_id: UUID | None = None
    ) -> UUID:
        """``run_id``: chosen beforehand (a webhook's claim names it); a run of that id that
        exists already is ``AlreadyExists``."""
        if not (principal.has(Role.REQUESTER) or principal.has(Role.APPROVER)):
            raise NotAuthorized(f"{principal.subject} may not start runs")
        run_id = run_id or uuid.uuid4()
        with self.db.tenant(principal.tenant_id) as conn:
            if not tenant_store.repository_allowed(conn, principal.tenant_id, repository):
                raise NotAuthorized(f"repository {repository} is not on this tenant's allowlist")
            run_store.insert_run(
                conn,
                run_id=run_id,
                tenant_id=principal.tenant_id,
                workflow="triage",
                repository=repository,
                issue_number=number,
                requested_by=principal.id,
            )
            audit.record(
                conn,
                tenant_id=principal.tenant_id,
                actor=actor_of(principal),
                event=AuditEvent.RUN_STARTED,
                subject_type="run",
                subject_id=run_id,
                run_id=run_id,
                details={"target": f"{repository}#{number}"},
            )
        state = _initial_state(principal.tenant_id, run_id, repository, number, principal.id)
        with self._leased(principal.tenant_id, run_id):
            self._drive(principal.tenant_id, run_id, state)
        return run_id

    def _drive(self, tenant_id: UUID, run_id: UUID, value: Any) -> None:
        """Run the graph; an unexpected failure ends the run ``failed`` with a reason, never
        leaves it ``running`` with none."""
        try:
            # "sync": each step's checkpoint is saved before the next step starts. LangGraph's
            # default ("async") saves them in the background, so a process killed mid-run could
            # lose every checkpoint of steps whose writes were committed (load and chaos).
            self.graph.invoke(value, self._config(run_id), durability="sync")
        except StoreUnavailable:
            # The database went away under the run (a cut connection, a failover): nothing says
            # the run failed. It stays as it is, its lease lapses, and a retry or maintenance
            # drives it on from its last checkpoint.
            logger.warning("triage run interrupted by the database", extra={"run": str(run_id)})
            raise
        except Exception as exc:
            reason = (
                exc.message
                if isinstance(exc, ResolveFlowError)
                else (f"internal error: {type(exc).__name__}: {exc}")
            )
            logger.exception("triage run failed", extra={"run": str(run_id)})
            with self.db.tenant(tenant_id) as conn:
                run = run_store.run_by_id(conn, tenant_id, run_id)
                if run.status in (RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL):
                    run_store.set_status(
                        conn, tenant_id, run_id, RunStatus.FAILED, {"error": reason}
                    )
                    audit.record(
                        conn,
                        tenant_id=tenant_id,
                        actor="workflow:triage",
                        event=AuditEvent.RUN_FAILED,
                        subject_type="run",
                        subject_id=run_id,
                        run_id=run_id,
                        details={"error": reason},
                    )
            # Same category as the cause, so the CLI and the web report it the same way.
            raise category_class(exc)(f"run {run_id} failed: {reason}") from exc

    # --- deciding: the one path in service.decisions, with this controller as the run --------

    def deciding(self) -> decisions.Deciding:
        """Decisions taken in this process resume the run here, under the decision's lease."""
        return decisions.Deciding(
            runs=self,
            follow_up=decisions.FollowUp.NOW,
            ttl_seconds=self.approval_ttl_seconds,
            lease_seconds=self.lease_seconds,
            mailboxes=self.mailboxes,
            aliases=self.aliases,
        )

    def approve(
        self,
        principal: Principal,
        run_or_proposal: UUID,
        digest: str,
        labels: RepositoryLabels | None = None,
    ) -> decisions.Decided:
        """``labels``: where "labels exist" reads a repository's labels that no run's evidence
        has (the command's own, as the web's is the request's)."""
        how = replace(self.deciding(), labels=labels)
        return decisions.approve(self.db, principal, run_or_proposal, digest, how)

    def reject(self, principal: Principal, run_or_proposal: UUID, reason: str) -> decisions.Decided:
        return decisions.reject(self.db, principal, run_or_proposal, reason, self.deciding())

    def at_pause(self, run_id: UUID) -> bool:
        snapshot = self.graph.get_state(self._config(run_id))
        return tuple(snapshot.next) == ("await_approval",)

    def reach_pause(self, tenant_id: UUID, run_id: UUID) -> bool:
        snapshot = self.graph.get_state(self._config(run_id))
        if tuple(snapshot.next):
            self._drive(tenant_id, run_id, None)  # on from the last checkpoint (proposal reused)
        elif snapshot.created_at is None:  # no checkpoint at all: over from the request
            with self.db.tenant(tenant_id) as conn:
                run = run_store.run_by_id(conn, tenant_id, run_id)
            state = _initial_state(
                tenant_id, run_id, run.repository, run.issue_number, run.requested_by
            )
            self._drive(tenant_id, run_id, state)
        else:
            return False  # finished: nothing to reach
        return self.at_pause(run_id)

    def continue_with(self, tenant_id: UUID, run_id: UUID, approval_id: UUID) -> None:
        self._resume(tenant_id, run_id, approval_id)

    def resume(self, principal: Principal, run_id: UUID) -> None:
        """Continue a run that a crash interrupted: one stopped before its pause is driven on to
        the pause; one whose proposal was decided meanwhile continues with that decision."""
        with self.db.tenant(principal.tenant_id) as conn:
            run = run_store.run_by_id(conn, principal.tenant_id, run_id)  # the tenant check
        with self._leased(principal.tenant_id, run_id):
            snapshot = self.graph.get_state(self._config(run_id))
            waiting = tuple(snapshot.next)
            if not waiting and snapshot.created_at is None and run.status == RunStatus.RUNNING:
                # Killed before its first checkpoint: the run starts over from its request.
                state = _initial_state(
                    principal.tenant_id,
                    run_id,
                    run.repository,
                    run.issue_number,
                    run.requested_by,
                )
                self._drive(principal.tenant_id, run_id, state)
                return
            if not waiting:
                raise InvalidInput(f"run {run_id} has finished (status {run.status})")
            if waiting != ("await_approval",):
                self._drive(principal.tenant_id, run_id, None)  # on from the last checkpoint
                return
            with self.db.tenant(principal.tenant_id) as conn:
                latest = proposal_store.latest_for_run(conn, principal.tenant_id, run_id)
                decision = (
                    proposal_store.approval_for_proposal(conn, principal.tenant_id, latest.id)
                    if latest
                    else None
                )
            if decision is None:
                raise InvalidInput("the run's proposal has not been decided yet")
            self._resume(principal.tenant_id, run_id, decision.id)

    def resume_with(self, principal: Principal, run_id: UUID, value: Any) -> None:
        """Resume with an arbitrary value (tests use this to forge one); the graph checks it."""
        with self.db.tenant(principal.tenant_id) as conn:
            run_store.run_by_id(conn, principal.tenant_id, run_id)
        with self._leased(principal.tenant_id, run_id):
            self._drive(principal.tenant_id, run_id, Command(resume=value))

    def _resume(self, tenant_id: UUID, run_id: UUID, approval_id: UUID) -> None:
        snapshot = self.graph.get_state(self._config(run_id))
        if tuple(snapshot.next) != ("await_approval",):
            logger.info("run is not paused; nothing to resume", extra={"run": str(run_id)})
            return
        self._drive(tenant_id, run_id, Command(resume={"approval_id": str(approval_id)}))


def _initial_state(
    tenant_id: UUID, run_id: UUID, repository: str, number: int, requested_by: UUID
) -> dict[str, Any]:
    return {
        "tenant_id": str(tenant_id),
        "run_id": str(run_id),
        "repository": repository,
        "issue_number": number,
        "requested_by": str(requested_by),
    }
