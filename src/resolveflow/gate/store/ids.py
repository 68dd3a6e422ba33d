"""Ids of a tenant's runs, proposals and executions that fall in a range (a short id's)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q

IdTable = Literal["runs", "proposals", "executions"]


def ids_in_range(
    conn: Connection, table: IdTable, tenant_id: UUID, low: UUID, high: UUID, limit: int
) -> list[UUID]:
    rows = conn.execute(
        q("gate/store/ids", f"{table}_by_prefix"),
        {"tenant_id": tenant_id, "low": low, "high": high, "limit": limit},
    ).fetchall()
    return [row["id"] for row in rows]
