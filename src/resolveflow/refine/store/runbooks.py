"""Reads for refine (refine/steps.py): the tenant's trusted runbooks. Tenant-scoped: the query
filters by tenant and runs under the tenant's row-level security."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class StoredRunbook:
    """An indexed runbook, whole."""

    source: str
    external_id: str
    title: str
    url: str | None
    runbook_tag: str
    runbook_triggers: list[str]
    body: str


def runbooks(conn: Connection, tenant_id: UUID) -> list[StoredRunbook]:
    params = {"tenant_id": tenant_id}
    return rows.every(conn, StoredRunbook, q("refine/store/refine", "runbooks"), params)
