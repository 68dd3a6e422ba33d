"""Reads for answering a question from a tenant's documents (ask/answering.py). Tenant-scoped:
every query filters by tenant and runs under the tenant's row-level security."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class DocumentText:
    """A document whole, as the extractive answer quotes it."""

    id: UUID
    source: str
    external_id: str
    kind: str
    title: str
    url: str | None
    body: str


@dataclass(frozen=True)
class DocumentChunk:
    id: int
    ordinal: int
    text: str


@dataclass(frozen=True)
class CitedChunk:
    """A chunk with its document's title and address, as a citation shows it."""

    id: int
    document_id: UUID
    text: str
    title: str
    url: str | None
    source: str
    external_id: str


@dataclass(frozen=True)
class AskRecord:
    id: UUID
    tenant_id: UUID
    principal_id: UUID | None
    question: str
    retrieved: list[Any]
    features: dict[str, Any] | None
    answerable: bool | None
    abstained: bool
    answer_text: str
    citations: list[Any]
    provider: str
    model: str | None
    generator: str
    prompt_version: str
    created_at: datetime


def term_cover(
    conn: Connection, tenant_id: UUID, terms: list[str], document_ids: list[UUID]
) -> dict[UUID, set[str]]:
    """The subset of ``terms`` each document contains (in any of its chunks)."""
    if not terms or not document_ids:
        return {}
    rows = conn.execute(
        q("ask/store/answers", "term_cover"),
        {"tenant_id": tenant_id, "terms": terms, "document_ids": document_ids},
    ).fetchall()
    return {row["document_id"]: set(row["lexemes"]) for row in rows}


def passage_terms(conn: Connection, terms: list[str], texts: list[str]) -> list[set[str]]:
    """The subset of ``terms`` each of ``texts`` holds, in order (no table is read)."""
    if not texts:
        return []
    if not terms:
        return [set() for _ in texts]
    rows = conn.execute(
        q("ask/store/answers", "passage_terms"), {"terms": terms, "texts": texts}
    ).fetchall()
    held = {int(row["n"]): set(row["lexemes"]) for row in rows}
    return [held.get(n, set()) for n in range(1, len(texts) + 1)]


def head_cosines(
    conn: Connection, tenant_id: UUID, query_vector: str, document_ids: list[UUID]
) -> dict[UUID, float]:
    """Each document's head chunk's cosine to the question."""
    if not document_ids:
        return {}
    rows = conn.execute(
        q("ask/store/answers", "head_cosines"),
        {"tenant_id": tenant_id, "query_vector": query_vector, "document_ids": document_ids},
    ).fetchall()
    return {row["document_id"]: float(row["cosine"]) for row in rows}


def title_cover(
    conn: Connection, tenant_id: UUID, question: str, document_ids: list[UUID]
) -> dict[UUID, float]:
    """Share of each document's title words (stemmed) that the question contains."""
    if not document_ids:
        return {}
    rows = conn.execute(
        q("ask/store/answers", "title_cover"),
        {"tenant_id": tenant_id, "question": question, "document_ids": document_ids},
    ).fetchall()
    return {
        row["document_id"]: (row["matched"] / row["title_terms"] if row["title_terms"] else 0.0)
        for row in rows
    }


def document_text(conn: Connection, tenant_id: UUID, document_id: UUID) -> DocumentText | None:
    params = {"tenant_id": tenant_id, "document_id": document_id}
    return typed.one(conn, DocumentText, q("ask/store/answers", "document_text"), params)


def document_id_by_path(
    conn: Connection, tenant_id: UUID, source: str, external_id: str
) -> UUID | None:
    row = conn.execute(
        q("ask/store/answers", "document_id_by_path"),
        {"tenant_id": tenant_id, "source": source, "external_id": external_id},
    ).fetchone()
    return row["id"] if row else None


def document_chunks(conn: Connection, tenant_id: UUID, document_id: UUID) -> list[DocumentChunk]:
    params = {"tenant_id": tenant_id, "document_id": document_id}
    return typed.every(conn, DocumentChunk, q("ask/store/answers", "document_chunks"), params)


def chunks_by_id(conn: Connection, tenant_id: UUID, ids: list[int]) -> dict[int, CitedChunk]:
    if not ids:
        return {}
    params = {"tenant_id": tenant_id, "ids": ids}
    found = typed.every(conn, CitedChunk, q("ask/store/answers", "chunks_by_id"), params)
    return {chunk.id: chunk for chunk in found}


def insert_ask_record(conn: Connection, tenant_id: UUID, record: dict[str, Any]) -> UUID:
    """Store one asked question and its answer (insert-only, migration 0014); its id."""
    row = conn.execute(
        q("ask/store/answers", "insert_ask_record"),
        {
            **record,
            "tenant_id": tenant_id,
            "retrieved": Jsonb(record["retrieved"]),
            "features": Jsonb(record["features"]) if record["features"] is not None else None,
            "citations": Jsonb(record["citations"]),
        },
    ).fetchone()
    assert row is not None
    return UUID(str(row["id"]))


def ask_record(conn: Connection, tenant_id: UUID, record_id: UUID) -> AskRecord | None:
    params = {"tenant_id": tenant_id, "id": record_id}
    return typed.one(conn, AskRecord, q("ask/store/answers", "ask_record"), params)


MAX_HEADINGS = 400  # a settings reference has one heading per setting


@dataclass(frozen=True)
class QuestionTerm:
    lexeme: str
    word: str  # the question's own word it was read from, as shown to people
    chunks: int  # 0: the index has never seen it


@dataclass(frozen=True)
class PageHead:
    id: UUID
    external_id: str
    title: str
    head: str
    headings: list[str]


@dataclass(frozen=True)
class Calibration:
    space_id: int
    chunk_count: int
    unrelated: float
    related: float
    computed_at: datetime


def question_terms(conn: Connection, tenant_id: UUID, question: str) -> list[QuestionTerm]:
    params = {"tenant_id": tenant_id, "question": question}
    return typed.every(conn, QuestionTerm, q("ask/store/answers", "question_terms"), params)


def known_names(conn: Connection, tenant_id: UUID, names: list[str]) -> int:
    if not names:
        return 0
    row = conn.execute(
        q("ask/store/answers", "known_names"), {"tenant_id": tenant_id, "names": names}
    ).fetchone()
    return int(row["known"]) if row else 0


def page_heads(
    conn: Connection, tenant_id: UUID, document_ids: list[UUID], head_chars: int
) -> list[PageHead]:
    if not document_ids:
        return []
    params = {
        "tenant_id": tenant_id,
        "document_ids": document_ids,
        "head_chars": head_chars,
        "max_headings": MAX_HEADINGS,
    }
    return typed.every(conn, PageHead, q("ask/store/answers", "page_heads"), params)


def calibration_titles(conn: Connection, tenant_id: UUID, limit: int) -> list[str]:
    rows = conn.execute(
        q("ask/store/answers", "calibration_titles"), {"tenant_id": tenant_id, "limit": limit}
    ).fetchall()
    return [str(row["title"]) for row in rows]


def nearest_cosine(
    conn: Connection, tenant_id: UUID, space_id: int, query_vector: str
) -> float | None:
    row = conn.execute(
        q("ask/store/answers", "nearest_cosine"),
        {"tenant_id": tenant_id, "space_id": space_id, "query_vector": query_vector},
    ).fetchone()
    return None if row is None or row["cosine"] is None else float(row["cosine"])


def calibration(conn: Connection, tenant_id: UUID) -> Calibration | None:
    params = {"tenant_id": tenant_id}
    return typed.one(conn, Calibration, q("ask/store/answers", "calibration"), params)


def save_calibration(
    conn: Connection,
    tenant_id: UUID,
    space_id: int,
    chunk_count: int,
    points: tuple[float, float],
) -> None:
    unrelated, related = points
    conn.execute(
        q("ask/store/answers", "save_calibration"),
        {
            "tenant_id": tenant_id,
            "space_id": space_id,
            "chunk_count": chunk_count,
            "unrelated": unrelated,
            "related": related,
        },
    )
