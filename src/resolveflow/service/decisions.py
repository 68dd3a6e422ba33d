"""Decisions taken in the web app or the API: recorded at once, carried out by the worker.

An approval (or rejection) is recorded by ``service.proposals`` exactly as on the command line;
then a job is queued that resumes the run from its checkpoint (the run's own ``execute`` step
hands the execution to the executor gate) or, for a proposal without a run, executes it. If the
queueing ever fails after the decision was committed, the worker's maintenance job finds the run
still waiting with a decided proposal and resumes it, and the executor drains due executions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from uuid import UUID

from resolveflow.domain.records import Principal, Proposal
from resolveflow.errors import InvalidInput, InvalidTransition, NotFound, RunBusy
from resolveflow.execution.lease import new_owner_id
from resolveflow.service import executions as execution_service
from resolveflow.service import proposals as proposal_service
from resolveflow.store import proposals as proposal_store
from resolveflow.store import queue
from resolveflow.store import runs as run_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

LEASE_WAIT_SECONDS = 3.0


def reject_nul(*texts: str | None) -> None:
    """Postgres text and jsonb cannot hold U+0000; say so instead of failing in the database."""
    if any(text is not None and "\x00" in text for text in texts):
        raise InvalidInput("text may not contain NUL characters (U+0000)")


@dataclass(frozen=True)
class Target:
    run_id: UUID | None
    proposal_id: UUID


@dataclass(frozen=True)
class Decided:
    run_id: UUID | None
    proposal_id: UUID
    decision: str
    approval_id: UUID
    execution_id: UUID | None
    job_id: int | None


def find_target(db: Database, principal: Principal, run_or_proposal: UUID) -> Target:
    """A run id (its latest proposal) or a proposal id, in the principal's tenant only."""
    with db.tenant(principal.tenant_id) as conn:
        run = run_store.find_run(conn, principal.tenant_id, run_or_proposal)
        if run is not None:
            latest = run_store.latest_proposal_for_run(conn, principal.tenant_id, run["id"])
            if latest is None:
                raise NotFound(f"run {run_or_proposal} has no proposal (status {run['status']})")
            return Target(run["id"], latest.id)
        proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, run_or_proposal)
        return Target(proposal.run_id, proposal.id)


@contextmanager
def _paused(
    db: Database, principal: Principal, target: Target, lease_seconds: float
) -> Iterator[None]:
    """While deciding, hold the run's lease and require it to wait at its pause, as
    ``RunController`` does: a decision never races the run's own steps."""
    if target.run_id is None:
        yield
        return
    tenant_id, owner = principal.tenant_id, new_owner_id()
    deadline = time.monotonic() + LEASE_WAIT_SECONDS  # the run may be a moment from its pause
    while True:
        with db.tenant(tenant_id) as conn:
            if run_store.acquire_lease(conn, tenant_id, target.run_id, owner, lease_seconds):
                break
        if time.monotonic() > deadline:
            raise RunBusy("the run is busy (still triaging, or being resumed); try again shortly")
        time.sleep(0.1)
    try:
        with db.tenant(tenant_id) as conn:
            run = run_store.run_by_id(conn, tenant_id, target.run_id)
        if run["status"] != "awaiting_approval":
            raise InvalidTransition(
                f"run {target.run_id} is not waiting for a decision (status {run['status']})"
            )
        yield
    finally:
        with db.tenant(tenant_id) as conn:
            run_store.release_lease(conn, tenant_id, target.run_id, owner)


def _queue_follow_up(
    db: Database, principal: Principal, target: Target, execution_id: UUID | None
) -> int | None:
    with db.tenant(principal.tenant_id) as conn:
        if target.run_id is not None:
            return queue.defer(
                conn,
                queue.RESUME_RUN,
                queueing_lock=f"resume:{target.run_id}",
                tenant_id=str(principal.tenant_id),
                run_id=str(target.run_id),
                principal_id=str(principal.id),
            )
        if execution_id is not None:
            return queue.defer(
                conn,
                queue.EXECUTE,
                queueing_lock=f"execute:{execution_id}",
                tenant_id=str(principal.tenant_id),
                execution_id=str(execution_id),
            )
    return None


def approve(
    db: Database,
    principal: Principal,
    run_or_proposal: UUID,
    digest: str,
    ttl_seconds: int,
    lease_seconds: float = 300.0,
) -> Decided:
    target = find_target(db, principal, run_or_proposal)
    with _paused(db, principal, target, lease_seconds):
        result = proposal_service.approve(db, principal, target.proposal_id, digest, ttl_seconds)
        job = _queue_follow_up(db, principal, target, result.execution.id)
    return Decided(
        target.run_id, target.proposal_id, "approved", result.approval.id, result.execution.id, job
    )


def reject(
    db: Database,
    principal: Principal,
    run_or_proposal: UUID,
    reason: str,
    lease_seconds: float = 300.0,
) -> Decided:
    reject_nul(reason)
    target = find_target(db, principal, run_or_proposal)
    with _paused(db, principal, target, lease_seconds):
        rejection = proposal_service.reject(db, principal, target.proposal_id, reason)
        job = _queue_follow_up(db, principal, target, None)
    return Decided(target.run_id, target.proposal_id, "rejected", rejection.id, None, job)


def edit(
    db: Database,
    principal: Principal,
    run_or_proposal: UUID,
    *,
    comment: str | None,
    labels: list[str] | None,
) -> Proposal:
    """A new version of the latest proposal; it needs its own approval."""
    reject_nul(comment, *(labels or []))
    target = find_target(db, principal, run_or_proposal)
    return proposal_service.edit_proposal(
        db,
        principal,
        target.proposal_id,
        comment=comment,
        labels=labels,
        drop_comment=comment is not None and not comment.strip(),
    )


def resolve(
    db: Database, principal: Principal, execution_id: UUID, *, was_sent: bool, note: str | None
) -> str:
    reject_nul(note)
    after = execution_service.resolve(db, principal, execution_id, was_sent=was_sent, note=note)
    return after.state.value
