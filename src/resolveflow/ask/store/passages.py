"""Reads for the passage page: a cited chunk's document and that document's chunks in order.
Tenant-scoped: every query filters by tenant and runs under the tenant's row-level security."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from resolveflow.store import rows
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class PassageDocument:
    id: UUID
    source: str
    external_id: str
    kind: str
    title: str | None
    url: str | None
    indexed_at: datetime


@dataclass(frozen=True)
class PassageChunk:
    id: int
    ordinal: int
    section: str | None
    text: str


def passage_document(conn: Connection, tenant_id: UUID, chunk_id: int) -> PassageDocument | None:
    params = {"tenant_id": tenant_id, "chunk_id": chunk_id}
    return rows.one(conn, PassageDocument, q("ask/store/passages", "passage_document"), params)


def passage_chunks(conn: Connection, tenant_id: UUID, document_id: UUID) -> list[PassageChunk]:
    params = {"tenant_id": tenant_id, "document_id": document_id}
    return rows.every(conn, PassageChunk, q("ask/store/passages", "passage_chunks"), params)
