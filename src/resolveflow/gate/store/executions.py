"""Executions (state moves forward only, guarded by a trigger) and their insert-only attempts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptOutcome, AttemptStep, Credential
from resolveflow.errors import LeaseLost, NotFound
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q

_COLUMNS = (
    "id",
    "tenant_id",
    "proposal_id",
    "approval_id",
    "idempotency_key",
    "digest",
    "lease_owner",
    "lease_expires_at",
    "not_before",
    "rate_limit_waits",
    "comment_id",
    "comment_url",
    "labels_done",
    "detail",
    "result_ref",
    "result_url",
    "created_at",
    "updated_at",
)


def to_execution(row: dict[str, Any]) -> Execution:
    values = {name: row[name] for name in _COLUMNS}
    # Rows from joins that name their columns may not carry it (migration 0021).
    values["pace_slot_at"] = row.get("pace_slot_at")
    values["notice_at"] = row.get("notice_at")  # migration 0027
    values["watch_digest"] = row.get("watch_digest")
    return Execution(state=ExecutionState(row["state"]), **values)


def _one(conn: Connection, name: str, params: dict[str, Any]) -> Execution | None:
    row = conn.execute(q("gate/store/executions", name), params).fetchone()
    return to_execution(row) if row else None


def insert_execution(
    conn: Connection, *, tenant_id: UUID, proposal_id: UUID, approval_id: UUID, digest: str
) -> Execution:
    execution = _one(
        conn,
        "insert_execution",
        {
            "tenant_id": tenant_id,
            "proposal_id": proposal_id,
            "approval_id": approval_id,
            "digest": digest,
            # One execution per approved digest in a tenant: the same action never runs twice.
            "idempotency_key": f"{tenant_id}:{digest}",
        },
    )
    assert execution is not None
    return execution


def execution_by_id(conn: Connection, tenant_id: UUID, execution_id: UUID) -> Execution:
    execution = _one(conn, "execution_by_id", {"tenant_id": tenant_id, "id": execution_id})
    if execution is None:
        raise NotFound(f"no execution {execution_id}")
    return execution


def execution_for_proposal(
    conn: Connection, tenant_id: UUID, proposal_id: UUID
) -> Execution | None:
    return _one(
        conn, "execution_for_proposal", {"tenant_id": tenant_id, "proposal_id": proposal_id}
    )


@dataclass(frozen=True)
class ListedExecution:
    """An execution in the tenant's list, with the action of the proposal it carries out."""

    execution: Execution
    action: dict[str, Any]


def list_executions(
    conn: Connection, tenant_id: UUID, state: str | None, limit: int
) -> list[ListedExecution]:
    found = conn.execute(
        q("gate/store/executions", "list_executions"),
        {"tenant_id": tenant_id, "state": state, "limit": limit},
    ).fetchall()
    return [ListedExecution(to_execution(row), row["action"]) for row in found]


def claim_next_due(
    conn: Connection, tenant_id: UUID, owner: str, lease_seconds: float
) -> Execution | None:
    return _one(
        conn,
        "claim_next_due",
        {"tenant_id": tenant_id, "owner": owner, "lease_seconds": lease_seconds},
    )


def claim_by_id(
    conn: Connection, tenant_id: UUID, execution_id: UUID, owner: str, lease_seconds: float
) -> Execution | None:
    return _one(
        conn,
        "claim_by_id",
        {
            "tenant_id": tenant_id,
            "id": execution_id,
            "owner": owner,
            "lease_seconds": lease_seconds,
        },
    )


def take_over_for_reconcile(
    conn: Connection, tenant_id: UUID, execution_id: UUID, owner: str, lease_seconds: float
) -> Execution | None:
    return _one(
        conn,
        "take_over_for_reconcile",
        {
            "tenant_id": tenant_id,
            "id": execution_id,
            "owner": owner,
            "lease_seconds": lease_seconds,
        },
    )


def reconcile_candidates(
    conn: Connection, tenant_id: UUID, min_age_seconds: float = 0
) -> list[Execution]:
    rows = conn.execute(
        q("gate/store/executions", "reconcile_candidates"),
        {"tenant_id": tenant_id, "min_age_seconds": min_age_seconds},
    ).fetchall()
    return [to_execution(row) for row in rows]


def finish(
    conn: Connection,
    execution: Execution,
    *,
    owner: str,
    state: ExecutionState,
    detail: str | None,
    from_states: tuple[ExecutionState, ...] = (ExecutionState.SENDING,),
    comment_id: int | None = None,
    comment_url: str | None = None,
    labels_done: bool = False,
    result_ref: str | None = None,
    result_url: str | None = None,
) -> Execution | None:
    """Record a final (or unknown) state; None when ``owner`` no longer holds the lease."""
    return _one(
        conn,
        "finish",
        {
            "tenant_id": execution.tenant_id,
            "id": execution.id,
            "owner": owner,
            "state": state.value,
            "detail": detail,
            "from_states": [s.value for s in from_states],
            "comment_id": comment_id,
            "comment_url": comment_url,
            "labels_done": labels_done,
            "result_ref": result_ref,
            "result_url": result_url,
        },
    )


def record_comment(
    conn: Connection, execution: Execution, *, owner: str, comment_id: int, comment_url: str
) -> Execution | None:
    return _one(
        conn,
        "record_comment",
        {
            "tenant_id": execution.tenant_id,
            "id": execution.id,
            "owner": owner,
            "comment_id": comment_id,
            "comment_url": comment_url,
        },
    )


def release_for_retry(
    conn: Connection,
    execution: Execution,
    *,
    owner: str,
    wait_seconds: float,
    detail: str,
    count_wait: bool,
    from_states: tuple[ExecutionState, ...] = (ExecutionState.SENDING,),
    comment_id: int | None = None,
    comment_url: str | None = None,
) -> Execution | None:
    return _one(
        conn,
        "release_for_retry",
        {
            "tenant_id": execution.tenant_id,
            "id": execution.id,
            "owner": owner,
            "wait_seconds": wait_seconds,
            "detail": detail,
            "count_wait": 1 if count_wait else 0,
            "from_states": [s.value for s in from_states],
            "comment_id": comment_id,
            "comment_url": comment_url,
        },
    )


def await_grace(
    conn: Connection,
    execution: Execution,
    *,
    owner: str,
    detail: str,
    comment_id: int,
    comment_url: str,
    notice_at: datetime,
    watch_digest: str,
    due: datetime,
) -> Execution | None:
    """Back to the queue until ``due`` with the notice's facts; None when the lease was lost."""
    return _one(
        conn,
        "await_grace",
        {
            "tenant_id": execution.tenant_id,
            "id": execution.id,
            "owner": owner,
            "detail": detail,
            "comment_id": comment_id,
            "comment_url": comment_url,
            "notice_at": notice_at,
            "watch_digest": watch_digest,
            "due": due,
        },
    )


@dataclass(frozen=True)
class CloseDuplicateRecord:
    """One live close-as-duplicate of an issue in our records (``state`` None: not executed)."""

    original: int
    state: ExecutionState | None
    proposal_id: UUID


def live_close_duplicates(
    conn: Connection, tenant_id: UUID, repository: str, issue: int
) -> list[CloseDuplicateRecord]:
    rows = conn.execute(
        q("gate/store/executions", "live_close_duplicates"),
        {"tenant_id": tenant_id, "repository": repository, "issue": issue},
    ).fetchall()
    return [
        CloseDuplicateRecord(
            int(row["original"]),
            ExecutionState(row["state"]) if row["state"] else None,
            row["proposal_id"],
        )
        for row in rows
    ]


def resolve_by_person(
    conn: Connection, tenant_id: UUID, execution_id: UUID, *, was_sent: bool, detail: str
) -> Execution | None:
    return _one(
        conn,
        "resolve_by_person",
        {"tenant_id": tenant_id, "id": execution_id, "was_sent": was_sent, "detail": detail},
    )


def insert_attempt(
    conn: Connection,
    execution: Execution,
    *,
    step: AttemptStep,
    owner: str,
    credential: Credential,
    lease_seconds: float,
    deadline_seconds: float,
    token_fingerprint: str | None = None,
    with_claim: bool = False,
) -> UUID:
    """Record that a request is about to leave; raises LeaseLost unless ``owner`` holds the lease.

    ``deadline_seconds``: by then the request has finished or been abandoned; no reconciler takes
    the execution over before. ``with_claim``: the attempt is part of the transaction that just
    claimed the execution, whose lease is therefore fresh and needs no renewal.
    """
    row = conn.execute(
        q("gate/store/executions", "insert_attempt_with_claim" if with_claim else "insert_attempt"),
        {
            "tenant_id": execution.tenant_id,
            "execution_id": execution.id,
            "step": step.value,
            "owner": owner,
            "credential": credential.value,
            "lease_seconds": lease_seconds,
            "deadline_seconds": deadline_seconds,
            "token_fingerprint": token_fingerprint,
        },
    ).fetchone()
    if row is None:
        raise LeaseLost()
    attempt_id: UUID = row["id"]
    return attempt_id


def insert_outcome(
    conn: Connection,
    *,
    tenant_id: UUID,
    attempt_id: UUID,
    outcome: AttemptOutcome,
    http_status: int | None = None,
    provider_ref: str | None = None,
    message: str | None = None,
) -> None:
    conn.execute(
        q("gate/store/executions", "insert_outcome"),
        {
            "attempt_id": attempt_id,
            "tenant_id": tenant_id,
            "outcome": outcome.value,
            "http_status": http_status,
            "provider_ref": provider_ref,
            "message": message,
        },
    )


@dataclass(frozen=True)
class Attempt:
    """One attempt at a step of an execution, with its outcome once it has one."""

    id: UUID
    step: str  # an ``AttemptStep`` value
    owner: str
    credential: str  # a ``Credential`` value
    token_fingerprint: str | None
    started_at: datetime
    deadline_at: datetime | None
    outcome: str | None  # an ``AttemptOutcome`` value; None while the attempt is open
    http_status: int | None
    provider_ref: str | None
    message: str | None
    finished_at: datetime | None


def attempts_for_execution(conn: Connection, tenant_id: UUID, execution_id: UUID) -> list[Attempt]:
    params = {"tenant_id": tenant_id, "execution_id": execution_id}
    return typed.every(conn, Attempt, q("gate/store/executions", "attempts_for_execution"), params)


@dataclass(frozen=True)
class PriorExecution:
    """An earlier execution of the same digest or lineage whose request may have landed."""

    id: UUID
    action: dict[str, Any]
    first_started: datetime


def prior_uncertain(conn: Connection, execution: Execution) -> list[PriorExecution]:
    rows = conn.execute(
        q("gate/store/executions", "prior_uncertain"),
        {
            "tenant_id": execution.tenant_id,
            "id": execution.id,
            "digest": execution.digest,
            "proposal_id": execution.proposal_id,
        },
    ).fetchall()
    return [PriorExecution(row["id"], row["action"], row["first_started"]) for row in rows]


@dataclass(frozen=True)
class SentWith:
    credential: Credential
    token_fingerprint: str | None


@dataclass(frozen=True)
class CarriedOut:
    proposal_id: UUID
    version: int
    state: ExecutionState


def carried_out_version(conn: Connection, tenant_id: UUID, lineage_id: UUID) -> CarriedOut | None:
    """The latest version of a lineage whose execution may have written something."""
    row = conn.execute(
        q("gate/store/executions", "carried_out_version"),
        {"tenant_id": tenant_id, "lineage_id": lineage_id},
    ).fetchone()
    return CarriedOut(row["id"], row["version"], ExecutionState(row["state"])) if row else None


@dataclass(frozen=True)
class StepAttempts:
    """What the attempts of one step say, for reconciliation."""

    may_have_left: bool
    first_started: datetime
    sent_with: SentWith


def attempt_summary(conn: Connection, execution: Execution) -> dict[AttemptStep, StepAttempts]:
    rows = conn.execute(
        q("gate/store/executions", "attempt_summary"),
        {"tenant_id": execution.tenant_id, "execution_id": execution.id},
    ).fetchall()
    return {
        AttemptStep(row["step"]): StepAttempts(
            row["may_have_left"],
            row["first_started"],
            SentWith(Credential(row["credential"]), row["token_fingerprint"]),
        )
        for row in rows
    }
