"""Reads for the passage page: a cited chunk's document and that document's chunks in order.
Tenant-scoped: every query filters by tenant and runs under the tenant's row-level security."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def passage_document(conn: Connection, tenant_id: UUID, chunk_id: int) -> dict[str, Any] | None:
    row = conn.execute(
        q("ask/store/passages", "passage_document"), {"tenant_id": tenant_id, "chunk_id": chunk_id}
    ).fetchone()
    return dict(row) if row else None


def passage_chunks(conn: Connection, tenant_id: UUID, document_id: UUID) -> list[dict[str, Any]]:
    rows = conn.execute(
        q("ask/store/passages", "passage_chunks"),
        {"tenant_id": tenant_id, "document_id": document_id},
    ).fetchall()
    return [dict(row) for row in rows]
