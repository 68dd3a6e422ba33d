"""Fusing the vector and full-text branches into one ranking of documents. Pure.

Both branches return chunks; a document's branch score is that of its best chunk, and its branch
rank is its position among documents by that score. Two methods:

- ``rrf``: weighted reciprocal rank fusion, ``w_v / (k + rank_v) + w_l / (k + rank_l)``; equal
  weights and k = 60 is the classic baseline.
- ``weighted``: a convex combination of scores, ``w_v * cosine + w_l * lexical / max_lexical``,
  where the lexical score (BM25: idf × impact summed over the query's terms) is scaled by the best
  lexical score of this query (it has no fixed range). Cosine is known for every candidate, so a
  document found only by words is still placed by meaning. The weights depend on the document's
  kind: reports (issues, pull requests, comments) are found by meaning, written knowledge (runbooks
  and docs, whose titles and headings name the alert or error a question quotes) by its words.

The method and weights in use were chosen on the dev sets (docs/retrieval.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar
from uuid import UUID

Method = Literal["rrf", "weighted"]


class CandidateRow(Protocol):
    """What the fusion reads of a candidate chunk: the store's rows of the main search
    (``store.documents.Candidate``) and of the mail search (``mail.store.messages.MailCandidate``).
    A rank is None when that branch did not find the chunk."""

    @property
    def chunk_id(self) -> int: ...
    @property
    def document_id(self) -> UUID: ...
    @property
    def kind(self) -> str: ...
    @property
    def distance(self) -> float: ...
    @property
    def vrank(self) -> int | None: ...
    @property
    def lexical_score(self) -> float: ...
    @property
    def lrank(self) -> int | None: ...


Row = TypeVar("Row", bound=CandidateRow)


@dataclass(frozen=True)
class FusionParams:
    method: Method = "weighted"
    # Chosen by the worst case across every dev set at once (docs/retrieval.md, "Settings across
    # every dev set"): reports 0.9 / 0.1, runbooks and docs 0.5 / 0.5.
    vector_weight: float = 0.9
    lexical_weight: float = 0.1
    rrf_k: int = 60
    document_vector_weight: float = 0.5
    document_lexical_weight: float = 0.5


# Kinds fused with the document weights (the knowledge an answer is taken from).
DOCUMENT_KINDS = frozenset({"runbook", "doc"})


@dataclass
class DocumentCandidate(Generic[Row]):
    document_id: UUID
    best: Row  # the chunk row with the highest cosine (then lexical score)
    cosine: float
    lexical: float
    vector_rank: int | None = None
    lexical_rank: int | None = None
    fused: float = 0.0


def group_by_document(rows: Sequence[Row]) -> list[DocumentCandidate[Row]]:
    docs: dict[UUID, DocumentCandidate[Row]] = {}
    in_vector: set[UUID] = set()
    in_lexical: set[UUID] = set()
    for row in rows:
        cosine = 1.0 - row.distance
        lexical = row.lexical_score
        key = row.document_id
        if row.vrank is not None:
            in_vector.add(key)
        if row.lrank is not None:
            in_lexical.add(key)
        doc = docs.get(key)
        if doc is None:
            docs[key] = DocumentCandidate(key, row, cosine, lexical)
            continue
        if _better_chunk(row, cosine, lexical, doc):
            doc.best, doc.cosine = row, cosine
        doc.lexical = max(doc.lexical, lexical)
    ordered = sorted(docs.values(), key=lambda d: (-d.cosine, str(d.document_id)))
    for rank, doc in enumerate((d for d in ordered if d.document_id in in_vector), start=1):
        doc.vector_rank = rank
    ordered = sorted(docs.values(), key=lambda d: (-d.lexical, str(d.document_id)))
    for rank, doc in enumerate((d for d in ordered if d.document_id in in_lexical), start=1):
        doc.lexical_rank = rank
    return list(docs.values())


def _better_chunk(
    row: CandidateRow, cosine: float, lexical: float, doc: DocumentCandidate[Row]
) -> bool:
    """Best chunk: highest cosine; a chunk without its own vector shares its head's cosine, so
    ties go to the chunk whose words match better, then to the earlier chunk."""
    best = doc.best
    return (cosine, lexical, -row.chunk_id) > (doc.cosine, best.lexical_score, -best.chunk_id)


def fuse(
    candidates: list[DocumentCandidate[Row]], params: FusionParams
) -> list[DocumentCandidate[Row]]:
    """Score every candidate and return them best first. Ties (frequent under RRF, where two
    documents can hold mirrored ranks) go to the closer meaning, then the better words, then the
    document id, so a ranking does not depend on the ids an index happened to draw."""
    if params.method == "rrf":
        for doc in candidates:
            doc.fused = 0.0
            if doc.vector_rank is not None:
                doc.fused += params.vector_weight / (params.rrf_k + doc.vector_rank)
            if doc.lexical_rank is not None:
                doc.fused += params.lexical_weight / (params.rrf_k + doc.lexical_rank)
    else:
        top_lexical = max((doc.lexical for doc in candidates), default=0.0)
        for doc in candidates:
            lexical = doc.lexical / top_lexical if top_lexical > 0 else 0.0
            w_v, w_l = _weights(doc, params)
            doc.fused = w_v * doc.cosine + w_l * lexical
    return sorted(candidates, key=lambda d: (-d.fused, -d.cosine, -d.lexical, str(d.document_id)))


def _weights(doc: DocumentCandidate[Row], params: FusionParams) -> tuple[float, float]:
    if doc.best.kind in DOCUMENT_KINDS:
        return params.document_vector_weight, params.document_lexical_weight
    return params.vector_weight, params.lexical_weight
