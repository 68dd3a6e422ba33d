"""``index rebuild``: re-embed every chunk of a tenant with the configured embedder.

Embedding happens first, with no lock held (it can take minutes). Then one transaction locks the
tenant's index row (indexing for this tenant waits; searches go on and see the old index), embeds
any chunk written in the meantime, points the index at the new space and replaces every vector.
Searches see the old space or the new one, never a mix.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from resolveflow.adapters.embedder.protocol import Embedder, Vectors
from resolveflow.retrieval.chunking import embedding_text
from resolveflow.retrieval.ingest import space_id_for
from resolveflow.store import documents as store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

EMBED_BATCH = 256
WRITE_BATCH = 1000


@dataclass(frozen=True)
class RebuildStats:
    chunks: int
    previous_space: str | None
    space: str
    seconds: float

    def as_json(self) -> dict[str, object]:
        return {
            "chunks": self.chunks,
            "previous_space": self.previous_space,
            "space": self.space,
            "seconds": round(self.seconds, 3),
        }


def _embed(
    embedder: Embedder,
    rows: list[store.ChunkText],
    into: dict[int, Vectors],
    progress: Callable[[int], None] | None,
) -> None:
    for start in range(0, len(rows), EMBED_BATCH):
        part = rows[start : start + EMBED_BATCH]
        texts = [embedding_text(r.title, r.section, r.text) for r in part]
        for row, vector in zip(part, embedder.embed_documents(texts), strict=True):
            into[row.id] = vector
        if progress is not None:
            progress(len(part))


def rebuild(
    db: Database,
    embedder: Embedder,
    tenant_id: UUID,
    progress: Callable[[int], None] | None = None,
) -> RebuildStats:
    started = time.perf_counter()
    space = embedder.space
    with db.tenant(tenant_id) as conn:
        state = store.index_state(conn, tenant_id)
        space_id = space_id_for(conn, space)
        if state is None:
            store.create_index_state(conn, tenant_id, space_id)
            return RebuildStats(0, None, str(space), time.perf_counter() - started)
        rows = store.chunk_texts(conn, tenant_id)
    previous = f"{state.space.provider}/{state.space.model}/{state.space.dimensions}"
    vectors: dict[int, Vectors] = {}
    _embed(embedder, rows, vectors, progress)
    with db.tenant(tenant_id) as conn:
        store.lock_index_state(conn, tenant_id)
        current = store.chunk_texts(conn, tenant_id)
        _embed(embedder, [r for r in current if r.id not in vectors], vectors, progress)
        store.switch_index_space(conn, tenant_id, space_id, space.dimensions)
        ids = [r.id for r in current]
        for start in range(0, len(ids), WRITE_BATCH):
            part = ids[start : start + WRITE_BATCH]
            store.update_chunk_vectors(
                conn, tenant_id, space_id, space.dimensions, part, [vectors[i] for i in part]
            )
    stats = RebuildStats(len(ids), previous, str(space), time.perf_counter() - started)
    logger.info("index rebuilt", extra={"tenant_id": str(tenant_id), **stats.as_json()})
    return stats
