"""The one way documents enter the index: ``Indexer.upsert``.

Every path (GitHub crawl, JSONL corpus, docs folder, evaluation, and later the webhook) calls it.
Per batch: chunk each document, skip those whose content hash is unchanged, embed all new chunks
in one embedder call (outside any transaction), then write the batch in one transaction, each
document replaced whole (row upserted, chunks and links deleted and re-inserted).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from uuid import UUID

import psycopg

from resolveflow.adapters.embedder import Embedder, EmbeddingSpace
from resolveflow.domain.errors import ResolveFlowError
from resolveflow.retrieval.chunking import (
    Chunk,
    chunk_document,
    embedding_text,
    normalize_text,
)
from resolveflow.retrieval.errors import EmbeddingSpaceMismatch
from resolveflow.retrieval.records import SourceDocument
from resolveflow.store import documents as store
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)

DEFAULT_BATCH = 64


@dataclass
class IngestStats:
    documents: int = 0  # seen
    written: int = 0  # inserted or changed
    unchanged: int = 0
    chunks: int = 0  # written
    embed_seconds: float = 0.0
    seconds: float = 0.0

    def add(self, other: IngestStats) -> None:
        self.documents += other.documents
        self.written += other.written
        self.unchanged += other.unchanged
        self.chunks += other.chunks
        self.embed_seconds += other.embed_seconds
        self.seconds += other.seconds

    def as_json(self) -> dict[str, float | int]:
        rate = self.documents / self.seconds if self.seconds else 0.0
        return {
            "documents": self.documents,
            "written": self.written,
            "unchanged": self.unchanged,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "documents_per_second": round(rate, 1),
        }


def space_id_for(conn: Connection, space: EmbeddingSpace) -> int:
    space_id = store.ensure_space(conn, space.provider, space.model, space.dimensions)
    store.ensure_vector_index(conn, space.dimensions)
    return space_id


def check_space(state: store.IndexState | None, space: EmbeddingSpace) -> None:
    if state is None:
        return
    indexed = EmbeddingSpace(state.space.provider, state.space.model, state.space.dimensions)
    if indexed != space:
        raise EmbeddingSpaceMismatch.between(str(indexed), str(space))


class Indexer:
    def __init__(self, db: Database, embedder: Embedder, *, batch_size: int = DEFAULT_BATCH):
        self.db = db
        self.embedder = embedder
        self.batch_size = batch_size

    def prepare(self, tenant_id: UUID) -> int:
        """Bind the tenant's index to the embedder's space (first use) or check it matches."""
        space = self.embedder.space
        with self.db.tenant(tenant_id) as conn:
            state = store.index_state(conn, tenant_id)
            check_space(state, space)
            if state is not None:
                return state.space.id
            space_id = space_id_for(conn, space)
            store.create_index_state(conn, tenant_id, space_id)
        with self.db.tenant(tenant_id) as conn:  # a concurrent first use may have won
            state = store.index_state(conn, tenant_id)
            check_space(state, space)
            assert state is not None
            return state.space.id

    def upsert(
        self,
        tenant_id: UUID,
        documents: Iterable[SourceDocument],
        on_batch: Callable[[IngestStats], None] | None = None,
    ) -> IngestStats:
        """Index ``documents`` for the tenant; returns what was done."""
        space_id = self.prepare(tenant_id)
        total = IngestStats()
        for batch in _batches(documents, self.batch_size):
            done = self._upsert_batch(tenant_id, space_id, batch)
            total.add(done)
            if on_batch is not None:
                on_batch(done)
        return total

    def _upsert_batch(
        self, tenant_id: UUID, space_id: int, batch: list[SourceDocument]
    ) -> IngestStats:
        started = time.perf_counter()
        stats = IngestStats(documents=len(batch))
        latest = {(doc.source, doc.external_id): doc for doc in batch}  # last one wins
        with self.db.tenant(tenant_id) as conn:
            known: dict[tuple[str, str], str] = {}
            for source in {key[0] for key in latest}:
                ids = [key[1] for key in latest if key[0] == source]
                for external_id, digest in store.document_hashes(
                    conn, tenant_id, source, ids
                ).items():
                    known[(source, external_id)] = digest
        rows: list[store.DocumentRow] = []
        texts: list[str] = []
        pending: list[tuple[SourceDocument, str, list[Chunk]]] = []
        for key, doc in latest.items():
            digest = doc.content_hash()
            if known.get(key) == digest:
                stats.unchanged += 1
                continue
            title = normalize_text(doc.title)
            chunks = chunk_document(title, doc.body, doc.comments)
            pending.append((doc, digest, chunks))
            texts.extend(embedding_text(title, c.section, c.text) for c in chunks)
        stats.unchanged += len(batch) - len(latest)
        embed_started = time.perf_counter()
        vectors = self.embedder.embed_documents(texts)
        stats.embed_seconds = time.perf_counter() - embed_started
        offset = 0
        for doc, digest, doc_chunks in pending:
            chunk_rows = tuple(
                store.ChunkRow(c.ordinal, c.section, c.text, vectors[offset + i])
                for i, c in enumerate(doc_chunks)
            )
            offset += len(doc_chunks)
            rows.append(_row(doc, digest, chunk_rows))
        if rows:
            dims = self.embedder.space.dimensions
            try:
                with self.db.tenant(tenant_id) as conn:
                    for row in rows:
                        store.replace_document(conn, tenant_id, space_id, dims, row)
            except ResolveFlowError as exc:
                if isinstance(exc.__cause__, psycopg.errors.ForeignKeyViolation):
                    # The index moved to another space (a rebuild) between check and write.
                    self.prepare(tenant_id)
                raise
        stats.written = len(rows)
        stats.chunks = sum(len(row.chunks) for row in rows)
        stats.seconds = time.perf_counter() - started
        logger.info("indexed batch", extra={"tenant_id": str(tenant_id), **stats.as_json()})
        return stats


def _row(doc: SourceDocument, digest: str, chunks: tuple[store.ChunkRow, ...]) -> store.DocumentRow:
    return store.DocumentRow(
        source=doc.source,
        external_id=doc.external_id,
        kind=doc.kind,
        title=normalize_text(doc.title),
        body=normalize_text(doc.body),
        content_hash=digest,
        url=doc.url,
        state=doc.state,
        labels=tuple(sorted({normalize_text(label) for label in doc.labels if label.strip()})),
        created_at=doc.created_at,
        closed_at=doc.closed_at,
        source_updated_at=doc.updated_at,
        runbook_tag=doc.runbook_tag,
        fixes=doc.fixes(),
        chunks=chunks,
    )


def _batches(items: Iterable[SourceDocument], size: int) -> Iterator[list[SourceDocument]]:
    batch: list[SourceDocument] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
