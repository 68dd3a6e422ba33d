"""The one way documents enter the index: ``Indexer.upsert``.

Every path (GitHub crawl, JSONL corpus, docs folder, evaluation, and later the webhook) calls it.
Per batch: chunk each document, skip those whose content hash is unchanged, embed the new chunks
that get a vector in one embedder call (outside any transaction, on a helper thread while the
previous batch is written), then write the batch in one transaction, each document replaced whole
(row upserted, chunks and links deleted and re-inserted).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from uuid import UUID

import psycopg

from resolveflow.adapters.embedder.protocol import Embedder, EmbeddingSpace
from resolveflow.errors import ResolveFlowError
from resolveflow.retrieval.chunking import (
    DEFAULT_VECTORS_PER_REPORT,
    Chunk,
    chunk_document,
    embedding_text,
    gets_vector,
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
    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        *,
        batch_size: int = DEFAULT_BATCH,
        vectors_per_report: int = DEFAULT_VECTORS_PER_REPORT,
    ):
        self.db = db
        self.embedder = embedder
        self.batch_size = batch_size
        self.vectors_per_report = vectors_per_report

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
        """Index ``documents`` for the tenant; returns what was done once all of it is written.

        The next batch is chunked and embedded on a helper thread while this one is written:
        the model (which releases the GIL) and Postgres then use the two cores at once. Writes
        stay in input order, one transaction per batch.
        """
        started = time.perf_counter()
        space_id = self.prepare(tenant_id)
        total = IngestStats()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rf-embed") as helper:
            ahead: Future[_Prepared] | None = None
            for batch in _batches(documents, self.batch_size):
                following = helper.submit(self._prepare_batch, tenant_id, batch)
                if ahead is not None:
                    self._finish(tenant_id, space_id, ahead.result(), total, on_batch)
                ahead = following
            if ahead is not None:
                self._finish(tenant_id, space_id, ahead.result(), total, on_batch)
        total.seconds = time.perf_counter() - started  # wall time: the batches overlapped
        return total

    def remove(self, tenant_id: UUID, source: str, external_ids: list[str]) -> list[str]:
        """Delete these documents of ``source`` (one transaction; a search after it returns
        no longer sees them). Returns the ids that were there."""
        if not external_ids:
            return []
        with self.db.tenant(tenant_id) as conn:
            removed = store.remove_documents(conn, tenant_id, source, external_ids)
        logger.info("removed documents", extra={"tenant_id": str(tenant_id), "n": len(removed)})
        return removed

    def prune(self, tenant_id: UUID, source: str, keep: set[str]) -> list[str]:
        """Delete the documents of ``source`` whose external id is not in ``keep``."""
        with self.db.tenant(tenant_id) as conn:
            known = store.source_external_ids(conn, tenant_id, source)
        return self.remove(tenant_id, source, [name for name in known if name not in keep])

    def _finish(
        self,
        tenant_id: UUID,
        space_id: int,
        prepared: _Prepared,
        total: IngestStats,
        on_batch: Callable[[IngestStats], None] | None,
    ) -> None:
        done = self._write_batch(tenant_id, space_id, prepared)
        total.add(done)
        if on_batch is not None:
            on_batch(done)

    def _prepare_batch(self, tenant_id: UUID, batch: list[SourceDocument]) -> _Prepared:
        """Skip unchanged documents, chunk the rest and embed the chunks that get a vector."""
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
        texts: list[str] = []
        # Per document: its chunks, each with whether it gets a vector.
        pending: list[tuple[SourceDocument, str, list[tuple[Chunk, bool]]]] = []
        for key, doc in latest.items():
            digest = doc.content_hash()
            if known.get(key) == digest:
                stats.unchanged += 1
                continue
            title = normalize_text(doc.title)
            chunks = [
                (c, gets_vector(doc.kind, c.ordinal, self.vectors_per_report))
                for c in chunk_document(title, doc.body, doc.comments)
            ]
            pending.append((doc, digest, chunks))
            texts.extend(embedding_text(title, c.section, c.text) for c, embed in chunks if embed)
        stats.unchanged += len(batch) - len(latest)
        embed_started = time.perf_counter()
        vectors = iter(self.embedder.embed_documents(texts))
        stats.embed_seconds = time.perf_counter() - embed_started
        rows: list[store.DocumentRow] = []
        for doc, digest, doc_chunks in pending:
            chunk_rows = tuple(
                store.ChunkRow(c.ordinal, c.section, c.text, next(vectors) if embed else None)
                for c, embed in doc_chunks
            )
            rows.append(_row(doc, digest, chunk_rows))
        stats.seconds = time.perf_counter() - started
        return _Prepared(rows, stats)

    def _write_batch(self, tenant_id: UUID, space_id: int, prepared: _Prepared) -> IngestStats:
        started = time.perf_counter()
        stats, rows = prepared.stats, prepared.rows
        if rows:
            dims = self.embedder.space.dimensions
            try:
                # Pipelined: each document costs one round trip (its id), not five.
                with self.db.tenant(tenant_id, pipelined=True) as conn:
                    for row in rows:
                        store.replace_document(conn, tenant_id, space_id, dims, row)
            except ResolveFlowError as exc:
                if isinstance(exc.__cause__, psycopg.errors.ForeignKeyViolation):
                    # The index moved to another space (a rebuild) between check and write.
                    self.prepare(tenant_id)
                raise
        stats.written = len(rows)
        stats.chunks = sum(len(row.chunks) for row in rows)
        # Time this batch cost the caller: its preparation overlapped the previous write.
        stats.seconds += time.perf_counter() - started
        logger.info("indexed batch", extra={"tenant_id": str(tenant_id), **stats.as_json()})
        return stats


@dataclass(frozen=True)
class _Prepared:
    rows: list[store.DocumentRow]
    stats: IngestStats


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
        runbook_triggers=doc.runbook_triggers,
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
