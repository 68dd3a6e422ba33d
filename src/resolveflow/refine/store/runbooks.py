"""Reads for refine (refine/steps.py): the tenant's trusted runbooks. Tenant-scoped: the query
filters by tenant and runs under the tenant's row-level security."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def runbooks(conn: Connection, tenant_id: UUID) -> list[dict[str, Any]]:
    rows = conn.execute(q("refine/store/refine", "runbooks"), {"tenant_id": tenant_id}).fetchall()
    return [dict(row) for row in rows]
