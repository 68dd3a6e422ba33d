"""Model calls, investigation records and the per-principal daily budget of model calls."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class ModelCallRow:
    tenant_id: UUID
    run_id: UUID | None
    principal_id: UUID | None
    purpose: str  # diagnosis | critique
    provider: str
    model: str
    served_model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    attempts: int
    outcome: str
    error: str | None


def reserve_model_call(conn: Connection, tenant_id: UUID, principal_id: UUID, limit: int) -> bool:
    """Count one call against today's budget; False (and nothing counted) when it is spent."""
    row = conn.execute(
        q("investigation", "reserve_model_call"),
        {"tenant_id": tenant_id, "principal_id": principal_id, "limit": limit},
    ).fetchone()
    return row is not None


def insert_model_call(conn: Connection, call: ModelCallRow) -> None:
    conn.execute(q("investigation", "insert_model_call"), vars(call))


@dataclass(frozen=True)
class ModelCallRecord:
    """A recorded model call, as a run's page lists it."""

    id: UUID
    purpose: str
    provider: str
    model: str
    served_model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    attempts: int
    outcome: str
    error: str | None
    created_at: datetime


def model_calls_for_run(conn: Connection, tenant_id: UUID, run_id: UUID) -> list[ModelCallRecord]:
    params = {"tenant_id": tenant_id, "run_id": run_id}
    return rows.every(conn, ModelCallRecord, q("investigation", "model_calls_for_run"), params)


def insert_investigation(
    conn: Connection,
    *,
    tenant_id: UUID,
    run_id: UUID,
    provider: str,
    model: str | None,
    relevance_floor: float,
    snippets: list[dict[str, Any]],
    diagnosis: dict[str, Any] | None,
    critique: str | None,
    gates: list[dict[str, Any]],
    outcome: str,
    reason: str,
) -> UUID:
    row = conn.execute(
        q("investigation", "insert_investigation"),
        {
            "tenant_id": tenant_id,
            "run_id": run_id,
            "provider": provider,
            "model": model,
            "relevance_floor": relevance_floor,
            "snippets": Jsonb(snippets),
            "best_relevance": _best_relevance(snippets),
            "diagnosis": Jsonb(diagnosis) if diagnosis is not None else None,
            "critique": critique,
            "gates": Jsonb(gates),
            "outcome": outcome,
            "reason": reason,
        },
    ).fetchone()
    assert row is not None
    investigation_id: UUID = row["id"]
    return investigation_id


@dataclass(frozen=True)
class InvestigationRecord:
    id: UUID
    provider: str
    model: str | None
    relevance_floor: float
    snippets: list[Any]
    diagnosis: dict[str, Any] | None
    critique: str | None
    gates: list[Any]
    outcome: str  # approve | escalate
    reason: str
    created_at: datetime


def investigations_for_run(
    conn: Connection, tenant_id: UUID, run_id: UUID
) -> list[InvestigationRecord]:
    params = {"tenant_id": tenant_id, "run_id": run_id}
    query = q("investigation", "investigations_for_run")
    return rows.every(conn, InvestigationRecord, query, params)


def _best_relevance(snippets: list[dict[str, Any]]) -> float | None:
    """The best related document's relevance (its own column: what the duplicate suggestion was
    made with), clamped to the column's range."""
    found = [
        float(s["relevance"])
        for s in snippets
        if isinstance(s.get("relevance"), int | float) and not isinstance(s["relevance"], bool)
    ]
    return min(2.0, max(-1.0, *found)) if found else None
