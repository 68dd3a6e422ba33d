"""Runs (status moves forward only), evidence snapshots, classifications and run leases."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.domain.vocabulary import RunStatus
from resolveflow.errors import NotFound
from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class Run:
    """A run with its classification (none until the run is classified)."""

    id: UUID
    tenant_id: UUID
    workflow: str
    # Nullable columns, but every run is inserted with them (``insert_run``).
    repository: str
    issue_number: int
    requested_by: UUID
    status: str  # a ``RunStatus`` value
    detail: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    classification: str | None
    rule: str | None
    reason: str | None
    branch: str | None
    route_reason: str | None


@dataclass(frozen=True)
class EvidenceSnapshot:
    """The issue as the run saw it (``raw``) and the facts read from it."""

    raw: dict[str, Any]
    facts: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class ResumableRun:
    """A run to drive on, and the principal to resume it as."""

    id: UUID
    # Nullable column, but every run is inserted with it (``insert_run``), and an approval
    # names its approver.
    resume_as: UUID


def insert_run(
    conn: Connection,
    *,
    run_id: UUID,
    tenant_id: UUID,
    workflow: str,
    repository: str,
    issue_number: int,
    requested_by: UUID,
) -> None:
    conn.execute(
        q("triage/store/runs", "insert_run"),
        {
            "id": run_id,
            "tenant_id": tenant_id,
            "workflow": workflow,
            "repository": repository,
            "issue_number": issue_number,
            "requested_by": requested_by,
        },
    )


def run_by_id(conn: Connection, tenant_id: UUID, run_id: UUID) -> Run:
    run = rows.one(
        conn, Run, q("triage/store/runs", "run_by_id"), {"tenant_id": tenant_id, "id": run_id}
    )
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run


def find_run(conn: Connection, tenant_id: UUID, run_id: UUID) -> Run | None:
    params = {"tenant_id": tenant_id, "id": run_id}
    return rows.one(conn, Run, q("triage/store/runs", "run_by_id"), params)


def list_runs(conn: Connection, tenant_id: UUID, status: str | None, limit: int) -> list[Run]:
    params = {"tenant_id": tenant_id, "status": status, "limit": limit}
    return rows.every(conn, Run, q("triage/store/runs", "list_runs"), params)


def set_status(
    conn: Connection, tenant_id: UUID, run_id: UUID, status: RunStatus, detail: dict[str, Any]
) -> None:
    row = conn.execute(
        q("triage/store/runs", "set_status"),
        {"tenant_id": tenant_id, "id": run_id, "status": status.value, "detail": Jsonb(detail)},
    ).fetchone()
    if row is None:
        raise NotFound(f"no run {run_id}")


def insert_snapshot(
    conn: Connection, tenant_id: UUID, run_id: UUID, raw: dict[str, Any], facts: dict[str, Any]
) -> None:
    conn.execute(
        q("triage/store/runs", "insert_snapshot"),
        {"tenant_id": tenant_id, "run_id": run_id, "raw": Jsonb(raw), "facts": Jsonb(facts)},
    )


def snapshot_for_run(conn: Connection, tenant_id: UUID, run_id: UUID) -> EvidenceSnapshot | None:
    params = {"tenant_id": tenant_id, "run_id": run_id}
    return rows.one(conn, EvidenceSnapshot, q("triage/store/runs", "snapshot_for_run"), params)


def insert_classification(
    conn: Connection,
    *,
    tenant_id: UUID,
    run_id: UUID,
    classification: str,
    rule: str,
    reason: str,
    branch: str,
    route_reason: str | None,
) -> None:
    conn.execute(
        q("triage/store/runs", "insert_classification"),
        {
            "tenant_id": tenant_id,
            "run_id": run_id,
            "classification": classification,
            "rule": rule,
            "reason": reason,
            "branch": branch,
            "route_reason": route_reason,
        },
    )


def acquire_lease(
    conn: Connection, tenant_id: UUID, run_id: UUID, owner: str, seconds: float
) -> bool:
    row = conn.execute(
        q("triage/store/runs", "acquire_lease"),
        {"tenant_id": tenant_id, "run_id": run_id, "owner": owner, "seconds": seconds},
    ).fetchone()
    return row is not None


def release_lease(conn: Connection, tenant_id: UUID, run_id: UUID, owner: str) -> None:
    conn.execute(
        q("triage/store/runs", "release_lease"),
        {"tenant_id": tenant_id, "run_id": run_id, "owner": owner},
    )


def stalled_runs(
    conn: Connection, tenant_id: UUID, min_age_seconds: float, limit: int = 50
) -> list[ResumableRun]:
    """Runs still awaiting approval although their latest proposal was decided this long ago; to
    be resumed as the principal who decided."""
    params = {"tenant_id": tenant_id, "min_age_seconds": min_age_seconds, "limit": limit}
    return rows.every(conn, ResumableRun, q("triage/store/runs", "stalled_runs"), params)


def interrupted_runs(
    conn: Connection, tenant_id: UUID, min_age_seconds: float, limit: int = 50
) -> list[ResumableRun]:
    """Runs a dead process left ``running`` or ``executing``: no live lease, untouched this long;
    to be resumed as the principal who requested them."""
    params = {"tenant_id": tenant_id, "min_age_seconds": min_age_seconds, "limit": limit}
    return rows.every(conn, ResumableRun, q("triage/store/runs", "interrupted_runs"), params)
