"""The one path by which a person decides: the CLI, the web pages, the API and a run's controller
all come here.

A decision names a run (its latest proposal) or a proposal. When the proposal belongs to a run,
the run's lease is held and the run must be waiting at its pause, both as its status says and as
its checkpoint says, so a decision never races the run's own steps. The approval or rejection
is recorded by ``gate.approvals``; then the follow-up either happens at once (the CLI: the run
resumes in this process, under the same lease) or is queued for the worker (the web app and the
API answer at once). If queueing fails after the decision committed, the worker's maintenance
job finds the run still waiting with a decided proposal and resumes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol
from uuid import UUID

from resolveflow.domain.records import Principal, Proposal
from resolveflow.domain.user_text import unstorable
from resolveflow.domain.vocabulary import Decision, RunStatus
from resolveflow.errors import InvalidInput, InvalidTransition, NotFound, RunBusy
from resolveflow.gate import approvals
from resolveflow.gate import executions as execution_service
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.actions import ActionChanges
from resolveflow.gate.domain.parts import Drops
from resolveflow.gate.lease import new_owner_id
from resolveflow.gate.run_records import runs as run_records
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

LEASE_WAIT_SECONDS = 3.0  # a run may be a moment from its pause


class FollowUp(StrEnum):
    NOW = "now"  # resume the run in this process (the CLI)
    QUEUE = "queue"  # queue a job for the worker (the web app, the API)


class RunHandle(Protocol):
    """What deciding needs of the run workflow (``triage.graph.runs.RunController``)."""

    def at_pause(self, run_id: UUID) -> bool:
        """The run's checkpoint waits at the approval pause."""
        ...

    def continue_with(self, tenant_id: UUID, run_id: UUID, approval_id: UUID) -> None:
        """Resume the paused run with this decision; the caller holds the run's lease."""
        ...

    def reach_pause(self, tenant_id: UUID, run_id: UUID) -> bool:
        """Drive on to its pause a run whose process died after recording its proposal but
        before the pause was checkpointed; the caller holds the run's lease. True when it
        waits at the pause now."""
        ...


@dataclass(frozen=True)
class Target:
    run_id: UUID | None
    proposal_id: UUID


@dataclass(frozen=True)
class Decided:
    run_id: UUID | None
    proposal_id: UUID
    decision: Decision
    approval_id: UUID
    execution_id: UUID | None
    job_id: int | None
    expires_at: datetime | None = None  # an approval's


def reject_unstorable(*texts: str | None) -> None:
    """Postgres text and jsonb cannot hold U+0000, nor UTF-8 a lone surrogate (a command-line
    argument with undecodable bytes becomes one): say so instead of failing in the database."""
    for text in texts:
        reason = unstorable(text) if text is not None else None
        if reason is not None:
            raise InvalidInput(f"text {reason}")


def find_target(db: Database, principal: Principal, run_or_proposal: UUID) -> Target:
    """A run id (its latest proposal) or a proposal id, in the principal's tenant only."""
    with db.tenant(principal.tenant_id) as conn:
        status = run_records().status(conn, principal.tenant_id, run_or_proposal)
        if status is not None:
            latest = proposal_store.latest_for_run(conn, principal.tenant_id, run_or_proposal)
            if latest is None:
                raise NotFound(f"run {run_or_proposal} has no proposal to decide (status {status})")
            return Target(run_or_proposal, latest.id)
        proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, run_or_proposal)
        return Target(proposal.run_id, proposal.id)


@contextmanager
def _paused(
    db: Database,
    principal: Principal,
    target: Target,
    runs: RunHandle,
    lease_seconds: float,
) -> Iterator[None]:
    """Hold the run's lease and require it to wait at its pause while deciding."""
    if target.run_id is None:
        yield
        return
    tenant_id, owner, records = principal.tenant_id, new_owner_id(), run_records()
    deadline = time.monotonic() + LEASE_WAIT_SECONDS
    while True:
        with db.tenant(tenant_id) as conn:
            if records.acquire_lease(conn, tenant_id, target.run_id, owner, lease_seconds):
                break
        if time.monotonic() > deadline:
            raise RunBusy("the run is busy (still triaging, or being resumed); try again shortly")
        time.sleep(0.1)
    try:
        with db.tenant(tenant_id) as conn:
            status = records.status(conn, tenant_id, target.run_id)
        if status is None:
            raise NotFound(f"no run {target.run_id}")
        paused = status is RunStatus.AWAITING_APPROVAL and (
            runs.at_pause(target.run_id) or runs.reach_pause(tenant_id, target.run_id)
        )
        if not paused:
            raise InvalidTransition(
                f"run {target.run_id} is not waiting for a decision (status {status}); "
                "see `resolveflow runs show`"
            )
        yield
    finally:
        with db.tenant(tenant_id) as conn:
            records.release_lease(conn, tenant_id, target.run_id, owner)


def _follow_up(
    db: Database,
    principal: Principal,
    target: Target,
    how: FollowUp,
    runs: RunHandle,
    approval_id: UUID,
    execution_id: UUID | None,
) -> int | None:
    if how is FollowUp.NOW:
        if target.run_id is not None:
            runs.continue_with(principal.tenant_id, target.run_id, approval_id)
        return None  # a proposal without a run waits for `resolveflow execute`
    # Imported here: the CLI decides with FollowUp.NOW and starts without the job queue.
    from resolveflow.store import queue

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


@dataclass(frozen=True)
class Deciding:
    """Where a decision comes from and what happens after it."""

    runs: RunHandle
    follow_up: FollowUp
    ttl_seconds: int
    lease_seconds: float
    # Reads the repository's labels for "labels exist" when no run's evidence has them (one per
    # request or command: it keeps what it read)
    labels: approvals.RepositoryLabels | None = None
    # The tenant's mailboxes in the policy file, for "mailbox configured" on email.send
    mailboxes: approvals.MailboxLookup | None = None
    # The tenant's GitLab project aliases, for "allowed by the project alias"
    aliases: approvals.AliasLookup | None = None


def approve(
    db: Database, principal: Principal, run_or_proposal: UUID, digest: str, how: Deciding
) -> Decided:
    target = find_target(db, principal, run_or_proposal)
    with _paused(db, principal, target, how.runs, how.lease_seconds):
        lookups = (how.labels, how.mailboxes, how.aliases)
        result = approvals.approve(
            db, principal, target.proposal_id, digest, how.ttl_seconds, *lookups
        )
        job = _follow_up(
            db,
            principal,
            target,
            how.follow_up,
            how.runs,
            result.approval.id,
            result.execution.id,
        )
    return Decided(
        target.run_id,
        target.proposal_id,
        Decision.APPROVED,
        result.approval.id,
        result.execution.id,
        job,
        result.approval.expires_at,
    )


def reject(
    db: Database, principal: Principal, run_or_proposal: UUID, reason: str, how: Deciding
) -> Decided:
    reject_unstorable(reason)
    target = find_target(db, principal, run_or_proposal)
    with _paused(db, principal, target, how.runs, how.lease_seconds):
        rejection = approvals.reject(db, principal, target.proposal_id, reason)
        job = _follow_up(db, principal, target, how.follow_up, how.runs, rejection.id, None)
    return Decided(target.run_id, target.proposal_id, Decision.REJECTED, rejection.id, None, job)


def edit(
    db: Database, principal: Principal, run_or_proposal: UUID, changes: ActionChanges
) -> Proposal:
    """A new version of the latest proposal; it needs its own approval."""
    reject_unstorable(*changes.texts())
    target = find_target(db, principal, run_or_proposal)
    return proposal_service.edit_proposal(db, principal, target.proposal_id, changes)


def drop(db: Database, principal: Principal, run_or_proposal: UUID, drops: Drops) -> Proposal:
    """A new version of the latest proposal without the parts, labels or items named; it needs
    its own approval."""
    reject_unstorable(*drops.parts, *drops.labels, *drops.items)
    target = find_target(db, principal, run_or_proposal)
    return proposal_service.drop_parts(db, principal, target.proposal_id, drops)


def resolve(
    db: Database, principal: Principal, execution_id: UUID, *, was_sent: bool, note: str | None
) -> str:
    reject_unstorable(note)
    after = execution_service.resolve(db, principal, execution_id, was_sent=was_sent, note=note)
    return after.state.value
