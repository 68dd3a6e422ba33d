"""A cited passage in its document, for the passage page: the document's chunks in reading
order with the cited one marked. The principal's tenant only; another tenant's chunk is not found.

Consecutive body chunks overlap by about a paragraph (retrieval/chunking.py) so that a sentence
cut at a boundary is whole in one of them. Shown one after the other, the overlap would read
twice, so each overlap is shown once: cut from the start of the later chunk, or from the end of
the earlier one when the later one is the cited passage (which is always shown whole).
"""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.ask.store import passages as store
from resolveflow.ask.store.passages import PassageDocument
from resolveflow.domain.records import Principal
from resolveflow.errors import NotFound
from resolveflow.retrieval.chunking import OVERLAP_CHARS
from resolveflow.store.database import Database

MIN_OVERLAP = 20  # a shorter shared edge is a coincidence, not the chunker's overlap
MAX_OVERLAP = 2 * OVERLAP_CHARS  # the chunker carries at most about OVERLAP_CHARS


@dataclass(frozen=True)
class Part:
    chunk_id: int
    text: str
    cited: bool


@dataclass(frozen=True)
class Passage:
    document: PassageDocument
    parts: list[Part]
    chunk_id: int


def passage(db: Database, principal: Principal, chunk_id: int) -> Passage:
    """The document holding ``chunk_id`` and its parts in order; ``NotFound`` for a chunk that
    does not exist in the principal's tenant."""
    tenant_id = principal.tenant_id
    with db.tenant(tenant_id) as conn:
        document = store.passage_document(conn, tenant_id, chunk_id)
        if document is None:
            raise NotFound(f"no passage {chunk_id}")
        chunks = store.passage_chunks(conn, tenant_id, document.id)
    texts = [(c.id, c.text) for c in chunks]
    return Passage(document, parts(texts, chunk_id), chunk_id)


def parts(chunks: list[tuple[int, str]], cited: int) -> list[Part]:
    """The chunks' texts with each overlap shown once (the cited chunk whole)."""
    texts = [text for _, text in chunks]
    for i in range(1, len(texts)):
        shared = overlap(texts[i - 1], texts[i])
        if not shared:
            continue
        if chunks[i][0] == cited:
            texts[i - 1] = texts[i - 1][: len(texts[i - 1]) - shared].rstrip()
        else:
            texts[i] = texts[i][shared:].lstrip()
    return [Part(cid, text, cid == cited) for (cid, _), text in zip(chunks, texts, strict=True)]


def overlap(earlier: str, later: str) -> int:
    """The length of the longest start of ``later`` that ends ``earlier`` (0 below the minimum)."""
    for size in range(min(len(earlier), len(later), MAX_OVERLAP), MIN_OVERLAP - 1, -1):
        if earlier.endswith(later[:size]):
            return size
    return 0
