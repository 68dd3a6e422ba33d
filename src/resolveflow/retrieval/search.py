"""Hybrid search within one tenant: pgvector cosine + Postgres full text, fused per document.

The tenant filter applies before ranking in both branches. Before pgvector 0.8 (pgserver ships
0.6) there is no iterative index scan, so an HNSW scan filtered by tenant could return fewer than
the wanted rows (the index returns ``ef_search`` candidates across all tenants, then the filter
drops the others). We use:

- exact search (the tenant's rows only, by its btree index) when the tenant holds at most
  ``exact_max_chunks`` chunks: exact, and a few milliseconds at that size;
- otherwise HNSW: on pgvector 0.8+ with its iterative scan (strict order), which goes on until
  enough of the tenant's rows are found; before 0.8 with ``ef_search`` raised in proportion to
  the tenant's share of the table; either way exact search as a fallback if the scan still comes
  back short.

Everything a result needs is read by one SQL statement (one snapshot), see store/sql/retrieval.sql.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.adapters.embedder.protocol import Embedder, Vectors
from resolveflow.errors import InvalidInput
from resolveflow.metrics import RETRIEVAL_SECONDS
from resolveflow.retrieval.chunking import query_text
from resolveflow.retrieval.fusion import DocumentCandidate, fuse, group_by_document
from resolveflow.retrieval.ingest import check_space
from resolveflow.retrieval.params import SearchParams as SearchParams  # noqa: PLC0414 (re-export)
from resolveflow.retrieval.records import BranchScores, Hit
from resolveflow.retrieval.relevance import relevance
from resolveflow.store import documents as store
from resolveflow.store.database import Database
from resolveflow.telemetry import span

logger = logging.getLogger(__name__)

MAX_K = 100
LEXICAL_QUERY_CHARS = 2000
MIN_TERM_CHUNKS = 50  # a whole issue as the query: its first ~300 words are plenty


@dataclass(frozen=True)
class SearchTiming:
    embed_ms: float
    database_ms: float
    exact: bool
    ef_search: int | None
    iterative: bool = False  # pgvector 0.8+'s iterative HNSW scan


class Searcher:
    def __init__(self, db: Database, embedder: Embedder, params: SearchParams | None = None):
        self.db = db
        self.embedder = embedder
        self.params = params or SearchParams()
        self.last_timing: SearchTiming | None = None

    def search(
        self,
        tenant_id: UUID,
        text: str,
        *,
        k: int = 10,
        as_of: datetime | None = None,
        exclude: tuple[str, str] | None = None,
        vector: Vectors | None = None,
    ) -> list[Hit]:
        """The ``k`` best documents for ``text``; ``as_of`` keeps only documents created before
        it; ``exclude`` = (source, external id) drops that document (a query that is itself
        indexed); ``vector`` is the embedding of ``query_text(text)`` when the caller has it
        already (not embedded again)."""
        if not 1 <= k <= MAX_K:
            raise InvalidInput(f"k must be between 1 and {MAX_K}")
        cleaned = query_text(text)
        if not cleaned:
            raise InvalidInput("the search text is empty")
        # The query is embedded first, outside any transaction, so that one pipelined
        # transaction does the rest: index state, terms, ef_search and the search itself.
        started = time.perf_counter()
        with span("retrieval.embed"):
            embedded = self.embedder.embed_query(cleaned) if vector is None else vector
            query_vector = store.vector_literal(embedded)
        embed_ms = (time.perf_counter() - started) * 1000
        wanted = max(self.params.candidates, 3 * (k + (1 if exclude else 0)))
        started = time.perf_counter()
        ef_search: int | None = None
        with (
            span("retrieval.hybrid", tenant_id=str(tenant_id), k=k),
            self.db.tenant(tenant_id, pipelined=True) as conn,
        ):
            state = store.index_state(conn, tenant_id)
            if state is None or state.chunk_count == 0:
                return []
            space = self.embedder.space
            check_space(state, space)
            params: dict[str, Any] = {
                "tenant_id": tenant_id,
                "space_id": state.space.id,
                "query_vector": query_vector,
                "vector_limit": wanted,
                "lexical_limit": wanted,
                "as_of": as_of,
            }
            # Small indexes keep every term: pruning is for cost, and there is none to save.
            max_term_chunks = max(
                MIN_TERM_CHUNKS, int(self.params.max_term_share * state.chunk_count)
            )
            lexical = store.lexical_query(
                conn,
                tenant_id,
                cleaned[:LEXICAL_QUERY_CHARS],
                self.params.max_terms,
                max_term_chunks,
                state.chunk_count,
                self.params.max_postings,
            )
            params["terms"], params["idfs"] = lexical.terms, lexical.idfs
            exact = state.chunk_count <= self.params.exact_max_chunks
            iterative = not exact and state.iterative_scans
            if not exact:
                # An iterative scan goes on past ef_search until the tenant's rows are found;
                # without one, ef_search must be raised by the tenant's share of the table.
                share = 1.0 if iterative else state.chunk_count / max(lexical.table_rows, 1)
                ef_search = _ef_search(wanted, min(1.0, share), self.params)
                store.set_ef_search(conn, ef_search, iterative=iterative)
            rows = store.hybrid_candidates(conn, {**params, "exact": exact})
            vector_rows = sum(1 for row in rows if row.vrank is not None)
            if not exact and vector_rows < min(wanted, state.chunk_count):
                # The filtered index scan came back short: rank this tenant's rows exactly.
                logger.info(
                    "hnsw scan short, exact fallback",
                    extra={"got": vector_rows, "wanted": wanted, "ef_search": ef_search},
                )
                rows = store.hybrid_candidates(conn, {**params, "exact": True})
                exact, iterative = True, False
        database_ms = (time.perf_counter() - started) * 1000
        self.last_timing = SearchTiming(embed_ms, database_ms, exact, ef_search, iterative)
        RETRIEVAL_SECONDS.labels("hybrid", "embed").observe(embed_ms / 1000)
        RETRIEVAL_SECONDS.labels("hybrid", "database").observe(database_ms / 1000)
        if exclude is not None:
            rows = [r for r in rows if (r.source, r.external_id) != exclude]
        ranked = fuse(group_by_document(rows), self.params.fusion)[:k]
        weight = sum(lexical.idfs)
        return [_hit(doc.best, doc, space, weight) for doc in ranked]


def _ef_search(wanted: int, share: float, params: SearchParams) -> int:
    """Enough candidates that ``wanted`` of them are likely this tenant's, with a 20 % margin (a
    scan that still comes back short falls back to exact search)."""
    needed = math.ceil(1.2 * wanted / max(share, 1e-6))
    return int(min(params.ef_search_max, max(params.ef_search_min, needed)))


def _hit(
    row: store.Candidate, doc: DocumentCandidate[store.Candidate], space: Any, weight: float
) -> Hit:
    """The document's hit; ``weight`` is the summed idf of the query's terms (0: none kept)."""
    return Hit(
        document_id=row.document_id,
        chunk_id=row.chunk_id,
        source=row.source,
        external_id=row.external_id,
        kind=row.kind,
        title=row.title,
        url=row.url,
        state=row.state,
        labels=tuple(row.labels),
        created_at=row.created_at,
        closed_at=row.closed_at,
        runbook_tag=row.runbook_tag,
        section=row.section,
        snippet=_snippet(row.text),
        scores=BranchScores(
            cosine=doc.cosine,
            vector_rank=doc.vector_rank,
            lexical=doc.lexical,
            lexical_rank=doc.lexical_rank,
            lexical_share=doc.lexical / weight if weight > 0 else 0.0,
        ),
        fused=doc.fused,
        relevance=relevance(space, doc.cosine),
        resolved_by=tuple(row.resolved_by),
    )


def _snippet(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
