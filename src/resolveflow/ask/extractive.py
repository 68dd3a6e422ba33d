"""The extractive answer (provider ``none``): the most useful sections of the top document, quoted
and each cited to its chunk; the page a stub points to; a close runner-up's best section. Titles
and quotes come from the database."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from resolveflow.ask.domain.answers import Citation, runner_up_is_close
from resolveflow.ask.store import answers as store
from resolveflow.ask.store.answers import CitedChunk, DocumentChunk, DocumentText
from resolveflow.ask.text import SNIPPET_CHARS, choose_sections, cited_part, pointed_page, quote
from resolveflow.ask.text import sections as markdown_sections
from resolveflow.retrieval.records import Hit
from resolveflow.store.database import Database

RUNNER_UP_SECTIONS = 1  # sections quoted from a close runner-up


def extractive(
    db: Database,
    tenant_id: UUID,
    question: str,
    ranked: Sequence[tuple[Hit, float]],
    runner_up_ratio: float,
) -> tuple[str, list[Citation]] | None:
    """The answer's text and citations from the ranked hits (each with its rank score); None
    when the top document was removed since the search."""
    citations: list[Citation] = []
    parts: list[str] = []
    top_hit = ranked[0][0]
    top = _quote(db, tenant_id, question, top_hit.document_id, top_hit, citations, parts)
    if top is None:
        return None
    pointed = _follow_stub(db, tenant_id, question, top, citations, parts)
    if len(ranked) > 1 and runner_up_is_close(ranked[0][1], ranked[1][1], runner_up_ratio):
        runner_up = ranked[1][0]
        if runner_up.document_id != pointed:  # already quoted in full
            parts.append("A close match; check which of the two fits:")
            found = _quote(
                db,
                tenant_id,
                question,
                runner_up.document_id,
                runner_up,
                citations,
                parts,
                RUNNER_UP_SECTIONS,
            )
            if found is None:
                parts.pop()
    return "\n\n".join(parts), citations


def _follow_stub(
    db: Database,
    tenant_id: UUID,
    question: str,
    stub: DocumentText,
    citations: list[Citation],
    parts: list[str],
) -> UUID | None:
    """A stub ("See [Node RAID Degraded](./NodeRAIDDegraded.md)") answers nothing itself: the page
    it points to is quoted too, when that page is in the tenant's index from the same source.
    Returns that page's id."""
    path = pointed_page(stub.body or "", stub.external_id)
    if path is None:
        return None
    with db.tenant(tenant_id) as conn:
        target = store.document_id_by_path(conn, tenant_id, stub.source, path)
    if target is None or target == stub.id:
        return None
    if _quote(db, tenant_id, question, target, None, citations, parts) is None:
        return None
    return target


def _quote(
    db: Database,
    tenant_id: UUID,
    question: str,
    document_id: UUID,
    hit: Hit | None,
    citations: list[Citation],
    parts: list[str],
    limit: int | None = None,
) -> DocumentText | None:
    """Append a document's chosen sections (at most ``limit``; a runner-up gets the sections
    sharing most words with the question) to the answer; the document, or None if it is gone.
    Without a search hit (a stub's page), its first chunk stands in for the matched passage."""
    with db.tenant(tenant_id) as conn:
        document = store.document_text(conn, tenant_id, document_id)
        chunks = store.document_chunks(conn, tenant_id, document_id)
    if document is None or (hit is None and not chunks):
        return None
    fallback = hit.chunk_id if hit is not None else chunks[0].id
    parts.append(f"From “{document.title}”:")
    found = markdown_sections(document.body or "")
    chosen = choose_sections(question, found, actions_first=limit is None)[:limit]
    start = len(citations)
    for n, section in enumerate(chosen, start=start + 1):
        chunk_id = _chunk_of(chunks, section.heading, section.text, fallback)
        passage = quote(section.text)
        citations.append(citation(n, chunk_id, document, section.heading, passage))
        label = f"{section.heading}: " if section.heading else ""
        parts.append(cited_part(label, passage, n))
    if len(citations) == start:  # no text worth quoting: cite the matched passage
        snippet = hit.snippet if hit is not None else quote(chunks[0].text, SNIPPET_CHARS)
        citations.append(citation(start + 1, fallback, document, "", snippet))
        parts.append(cited_part("", snippet, start + 1))
    return document


def _chunk_of(chunks: list[DocumentChunk], heading: str, text: str, fallback: int) -> int:
    """The chunk that holds a section: the first one containing its heading, else the start of
    its text."""
    probes = [p for p in (heading and f"# {heading}", text[:80].strip()) if p]
    for probe in probes:
        for chunk in chunks:
            if probe in chunk.text:
                return chunk.id
    return fallback


def citation(
    n: int, chunk_id: int, document: DocumentText | CitedChunk, section: str, text: str
) -> Citation:
    """``document``: the quoted document, or the cited chunk with its document's fields."""
    document_id = document.document_id if isinstance(document, CitedChunk) else document.id
    return Citation(
        n=n,
        chunk_id=chunk_id,
        document_id=str(document_id),
        title=document.title,
        path=document.external_id,
        url=document.url,
        section=section,
        quote=text,
    )
