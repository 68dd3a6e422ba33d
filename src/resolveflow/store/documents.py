"""Indexed documents, their chunks (vector + full text), links, embedding spaces, crawl cursors.

A document is replaced as a whole: its row is upserted by (tenant, source, external id), keeping its
id, and its chunks and links are deleted and re-inserted in the caller's transaction, so a reader
sees either the old or the new version, never a mix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q

SCRATCH_TENANT_PREFIX = "rf-eval-"


@dataclass(frozen=True)
class SpaceRow:
    id: int
    provider: str
    model: str
    dimensions: int


@dataclass(frozen=True)
class IndexState:
    space: SpaceRow
    chunk_count: int
    # pgvector 0.8+ scans HNSW iteratively: a filtered scan goes on until it has enough rows.
    iterative_scans: bool = False


@dataclass(frozen=True)
class ChunkRow:
    ordinal: int
    section: str  # head | body | comment
    text: str
    embedding: Iterable[float] | None  # None: found by its words only (see chunking.gets_vector)


@dataclass(frozen=True)
class DocumentRow:
    source: str
    external_id: str
    kind: str
    title: str
    body: str
    content_hash: str
    url: str | None = None
    state: str | None = None
    labels: tuple[str, ...] = ()
    created_at: datetime | None = None
    closed_at: datetime | None = None
    source_updated_at: datetime | None = None
    runbook_tag: str | None = None
    runbook_triggers: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()  # external ids (same source) this document resolves
    chunks: tuple[ChunkRow, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class CrawlCursor:
    source: str
    since: datetime | None
    page: int
    items_seen: int
    finished_at: datetime | None


def vector_literal(values: Iterable[float]) -> str:
    """pgvector's text form. Seven significant digits is float32 precision."""
    return "[" + ",".join(f"{float(v):.7g}" for v in values) + "]"


# --- embedding spaces and the per-tenant index ----------------------------------------------


def ensure_space(conn: Connection, provider: str, model: str, dimensions: int) -> int:
    params = {"provider": provider, "model": model, "dimensions": dimensions}
    row = conn.execute(q("retrieval", "insert_space"), params).fetchone()
    if row is None:  # it existed already (or a concurrent insert won): read it
        row = conn.execute(q("retrieval", "space_id"), params).fetchone()
    assert row is not None
    return int(row["id"])


def ensure_vector_index(conn: Connection, dimensions: int) -> None:
    conn.execute(q("retrieval", "ensure_vector_index"), {"dimensions": dimensions})


def index_state(conn: Connection, tenant_id: UUID) -> IndexState | None:
    row = conn.execute(q("retrieval", "index_state"), {"tenant_id": tenant_id}).fetchone()
    if row is None:
        return None
    space = SpaceRow(row["space_id"], row["provider"], row["model"], row["dimensions"])
    return IndexState(
        space=space,
        chunk_count=int(row["chunk_count"]),
        iterative_scans=_version(row["vector_version"]) >= (0, 8),
    )


def _version(text: str | None) -> tuple[int, ...]:
    """ "0.8.0" -> (0, 8, 0); anything unreadable counts as old."""
    try:
        return tuple(int(part) for part in (text or "").split("."))
    except ValueError:
        return ()


def create_index_state(conn: Connection, tenant_id: UUID, space_id: int) -> None:
    conn.execute(
        q("retrieval", "create_index_state"), {"tenant_id": tenant_id, "space_id": space_id}
    )


def lock_index_state(conn: Connection, tenant_id: UUID) -> int | None:
    row = conn.execute(q("retrieval", "lock_index_state"), {"tenant_id": tenant_id}).fetchone()
    return int(row["space_id"]) if row else None


def switch_index_space(conn: Connection, tenant_id: UUID, space_id: int, dims: int) -> None:
    """Point the tenant's index at a new space and move its chunks without a vector there; the
    caller moves every chunk with a vector (``update_chunk_vectors``) before commit."""
    conn.execute(q("retrieval", "defer_space_check"))
    conn.execute(q("retrieval", "set_index_space"), {"tenant_id": tenant_id, "space_id": space_id})
    conn.execute(
        q("retrieval", "move_lexical_chunks"),
        {"tenant_id": tenant_id, "space_id": space_id, "dims": dims},
    )


# --- documents --------------------------------------------------------------------------------


def document_hashes(
    conn: Connection, tenant_id: UUID, source: str, external_ids: list[str]
) -> dict[str, str]:
    rows = conn.execute(
        q("retrieval", "document_hashes"),
        {"tenant_id": tenant_id, "source": source, "external_ids": external_ids},
    ).fetchall()
    return {row["external_id"]: row["content_hash"] for row in rows}


def document_versions(
    conn: Connection, tenant_id: UUID, source: str, external_ids: list[str]
) -> dict[str, datetime | None]:
    """The source's update time each stored document was indexed at."""
    rows = conn.execute(
        q("retrieval", "document_versions"),
        {"tenant_id": tenant_id, "source": source, "external_ids": external_ids},
    ).fetchall()
    return {row["external_id"]: row["source_updated_at"] for row in rows}


def replace_document(
    conn: Connection, tenant_id: UUID, space_id: int, dims: int, doc: DocumentRow
) -> UUID:
    """Upsert the document row and replace its chunks and links (in the caller's transaction)."""
    row = conn.execute(
        q("retrieval", "upsert_document"),
        {
            "tenant_id": tenant_id,
            "source": doc.source,
            "external_id": doc.external_id,
            "kind": doc.kind,
            "title": doc.title,
            "url": doc.url,
            "state": doc.state,
            "labels": list(doc.labels),
            "created_at": doc.created_at,
            "closed_at": doc.closed_at,
            "source_updated_at": doc.source_updated_at,
            "runbook_tag": doc.runbook_tag,
            "runbook_triggers": list(doc.runbook_triggers),
            "body": doc.body,
            "content_hash": doc.content_hash,
            "chunk_count": len(doc.chunks),
        },
    ).fetchone()
    assert row is not None
    document_id: UUID = row["id"]
    ids = {"tenant_id": tenant_id, "document_id": document_id}
    conn.execute(q("retrieval", "delete_chunks"), ids)
    if doc.chunks:
        conn.execute(
            q("retrieval", "insert_chunks"),
            {
                **ids,
                "created_at": doc.created_at,
                "space_id": space_id,
                "dims": dims,
                "title": doc.title,
                "ordinals": [c.ordinal for c in doc.chunks],
                "sections": [c.section for c in doc.chunks],
                "texts": [c.text for c in doc.chunks],
                "embeddings": [
                    None if c.embedding is None else vector_literal(c.embedding) for c in doc.chunks
                ],
            },
        )
    conn.execute(q("retrieval", "delete_links"), ids)
    if doc.fixes:
        conn.execute(
            q("retrieval", "insert_links"),
            {**ids, "source": doc.source, "targets": sorted(set(doc.fixes))},
        )
    return document_id


def source_external_ids(conn: Connection, tenant_id: UUID, source: str) -> list[str]:
    rows = conn.execute(
        q("documents", "source_external_ids"), {"tenant_id": tenant_id, "source": source}
    ).fetchall()
    return [row["external_id"] for row in rows]


def remove_documents(
    conn: Connection, tenant_id: UUID, source: str, external_ids: list[str]
) -> list[str]:
    """Delete the documents with their chunks, postings and links; returns the ids removed."""
    params = {"tenant_id": tenant_id, "source": source, "external_ids": external_ids}
    conn.execute(q("documents", "delete_document_chunks"), params)
    rows = conn.execute(q("documents", "delete_documents"), params).fetchall()
    return sorted(row["external_id"] for row in rows)


@dataclass(frozen=True)
class LexicalQuery:
    terms: list[str]
    idfs: list[float]
    table_rows: int  # estimated chunks of every tenant


def lexical_query(
    conn: Connection,
    tenant_id: UUID,
    text: str,
    max_terms: int,
    max_term_chunks: int,
    total_chunks: int,
    max_postings: int,
) -> LexicalQuery:
    """The full-text branch's terms for ``text`` (its rarest in the tenant's index, within a
    budget of postings) and each term's BM25 idf among the tenant's ``total_chunks`` chunks."""
    row = conn.execute(
        q("retrieval", "lexical_query"),
        {
            "tenant_id": tenant_id,
            "query_text": text,
            "max_terms": max_terms,
            "max_term_chunks": max_term_chunks,
            "total": total_chunks,
            "max_postings": max_postings,
        },
    ).fetchone()
    if row is None:
        return LexicalQuery([], [], 0)
    return LexicalQuery(
        list(row["terms"]), [float(x) for x in row["idfs"]], int(row["table_rows"] or 0)
    )


@dataclass(frozen=True)
class Candidate:
    """A chunk either branch of the search found, with its branch scores and its document (the
    fusion's input, ``retrieval.fusion.CandidateRow``). A rank is None when that branch did not
    find the chunk."""

    chunk_id: int
    document_id: UUID
    ordinal: int
    section: str
    text: str
    distance: float  # cosine distance; a chunk without a vector has its head's
    vrank: int | None
    lexical_score: float
    lrank: int | None
    source: str
    external_id: str
    kind: str
    title: str
    url: str | None
    state: str | None
    labels: list[str]
    created_at: datetime | None
    closed_at: datetime | None
    runbook_tag: str | None
    resolved_by: list[str]  # the links (or source:id) of the pull requests that fix it


def hybrid_candidates(conn: Connection, params: dict[str, Any]) -> list[Candidate]:
    # Never a prepared (generic) plan: the plan depends on how rare the query's terms are.
    return typed.every(conn, Candidate, q("retrieval", "hybrid_candidates"), params, prepare=False)


def set_ef_search(conn: Connection, ef_search: int, *, iterative: bool = False) -> None:
    conn.execute(q("retrieval", "set_ef_search"), {"ef_search": str(ef_search)})
    if iterative:
        conn.execute(q("retrieval", "set_iterative_scan"))


@dataclass(frozen=True)
class LabelledDocument:
    external_id: str
    title: str
    body: str
    labels: list[str]
    created_at: datetime | None


def labelled_documents(
    conn: Connection, tenant_id: UUID, *, before: datetime | None, source: str | None
) -> list[LabelledDocument]:
    """The tenant's issues that carry a label, oldest first."""
    params = {"tenant_id": tenant_id, "before": before, "source": source}
    return typed.every(conn, LabelledDocument, q("retrieval", "labelled_documents"), params)


@dataclass(frozen=True)
class LabelledWatermark:
    """Where a source's labelled history stands: it moves when that history changes."""

    issues: int
    indexed_at: datetime | None


def labelled_watermark(conn: Connection, tenant_id: UUID, source: str) -> LabelledWatermark:
    params = {"tenant_id": tenant_id, "source": source}
    found = typed.one(conn, LabelledWatermark, q("retrieval", "labelled_watermark"), params)
    return found or LabelledWatermark(0, None)


@dataclass(frozen=True)
class ChunkText:
    """A chunk's text and what its embedding is made of."""

    id: int
    section: str
    text: str
    title: str  # its document's


def chunk_texts(conn: Connection, tenant_id: UUID) -> list[ChunkText]:
    """The chunks that have a vector."""
    params = {"tenant_id": tenant_id}
    return typed.every(conn, ChunkText, q("retrieval", "chunk_texts"), params)


def update_chunk_vectors(
    conn: Connection,
    tenant_id: UUID,
    space_id: int,
    dims: int,
    ids: list[int],
    embeddings: Sequence[Iterable[float]],
) -> None:
    conn.execute(
        q("retrieval", "update_chunk_vectors"),
        {
            "tenant_id": tenant_id,
            "space_id": space_id,
            "dims": dims,
            "ids": ids,
            "embeddings": [vector_literal(e) for e in embeddings],
        },
    )


@dataclass(frozen=True)
class IndexSummary:
    """What a tenant's index holds."""

    documents: int
    chunks: int
    links: int
    kinds: dict[str, int]  # documents of each kind


def index_summary(conn: Connection, tenant_id: UUID) -> IndexSummary:
    row = conn.execute(q("retrieval", "index_summary"), {"tenant_id": tenant_id}).fetchone()
    kinds = conn.execute(q("retrieval", "documents_per_kind"), {"tenant_id": tenant_id}).fetchall()
    assert row is not None
    return IndexSummary(
        row["documents"], row["chunks"], row["links"], {r["kind"]: r["n"] for r in kinds}
    )


# --- crawl cursors ----------------------------------------------------------------------------


def get_cursor(conn: Connection, tenant_id: UUID, source: str) -> CrawlCursor | None:
    row = conn.execute(
        q("retrieval", "get_cursor"), {"tenant_id": tenant_id, "source": source}
    ).fetchone()
    if row is None:
        return None
    return CrawlCursor(
        row["source"], row["since"], row["page"], int(row["items_seen"]), row["finished_at"]
    )


def save_cursor(conn: Connection, tenant_id: UUID, cursor: CrawlCursor) -> None:
    conn.execute(
        q("retrieval", "save_cursor"),
        {
            "tenant_id": tenant_id,
            "source": cursor.source,
            "since": cursor.since,
            "page": cursor.page,
            "items_seen": cursor.items_seen,
            "finished_at": cursor.finished_at,
        },
    )


# --- scratch tenants (evaluation), removed through the owner connection ------------------------


def stale_scratch_tenants(conn: Connection, older_than_seconds: float) -> list[UUID]:
    rows = conn.execute(
        q("retrieval", "stale_scratch_tenants"), {"older_than_seconds": older_than_seconds}
    ).fetchall()
    return [row["id"] for row in rows]


def delete_scratch_tenant(conn: Connection, tenant_id: UUID) -> None:
    """Only scratch tenants can be removed this way."""
    conn.execute(q("retrieval", "delete_tenant"), {"id": tenant_id})


def kept_index(conn: Connection, key: str) -> UUID | None:
    """The scratch tenant that holds the complete index kept for ``key``, if any."""
    row = conn.execute(q("retrieval", "kept_index"), {"key": key}).fetchone()
    return row["id"] if row else None


def keep_index(conn: Connection, tenant_id: UUID, key: str) -> bool:
    """Keep this scratch tenant's index for ``key``; False when another already holds it."""
    row = conn.execute(q("retrieval", "keep_index"), {"id": tenant_id, "key": key}).fetchone()
    return row is not None


def use_kept_index(conn: Connection, tenant_id: UUID) -> None:
    conn.execute(q("retrieval", "use_kept_index"), {"id": tenant_id})


def kept_indexes_beyond(conn: Connection, keep: int) -> list[UUID]:
    rows = conn.execute(q("retrieval", "kept_indexes_beyond"), {"keep": keep}).fetchall()
    return [row["id"] for row in rows]


def fixing_pulls(
    conn: Connection, tenant_id: UUID, source: str, external_ids: Sequence[str]
) -> dict[str, list[str]]:
    """For each external id, the pull requests (same source) whose text says they fix it."""
    rows = conn.execute(
        q("retrieval", "fixing_pulls"),
        {"tenant_id": tenant_id, "source": source, "external_ids": list(external_ids)},
    ).fetchall()
    found: dict[str, list[str]] = {}
    for row in rows:
        found.setdefault(row["target"], []).append(row["pull"])
    return found
