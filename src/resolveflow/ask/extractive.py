"""The passages an answer quotes, and the extractive answer (provider ``none``) made of them.

Within the pages the ranking chose: the top page's passage that answers (``choice.py``; a
runbook's Diagnosis and Mitigation when it has them), and the next one when it scores close;
the page a stub points to; a close runner-up page's best passage. Each is quoted whole under
its heading path and cited to the chunk that holds it. A model is given the same passages.
Titles and quotes come from the database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from resolveflow.ask.choice import PassageScore, PassageScorer, ScoredUnit, close_runner_up
from resolveflow.ask.domain.answers import Citation, runner_up_is_close
from resolveflow.ask.store import answers as store
from resolveflow.ask.store.answers import CitedChunk, DocumentChunk, DocumentText
from resolveflow.ask.text import (
    ACTION_SECTIONS,
    SNIPPET_CHARS,
    cited_part,
    pointed_page,
    quote,
    units,
    within_page,
)
from resolveflow.retrieval.records import Hit
from resolveflow.store.database import Database

RUNNER_UP_SECTIONS = 1  # passages quoted from a close runner-up page
CLOSE_MATCH = "A close match; check which of the two fits:"


@dataclass(frozen=True)
class Quote:
    document: DocumentText
    chunk_id: int
    section: str  # the heading path ("" when none)
    text: str
    score: PassageScore | None  # None: the matched chunk's snippet, nothing better found
    runner_up: bool = False  # from the runner-up page


@dataclass(frozen=True)
class Choice:
    quotes: list[Quote]
    # The top page's best passage when the quotes are a runbook's actions instead: an alert's
    # runbook is about the alert, its Diagnosis and Mitigation rarely repeat its words.
    matched: PassageScore | None = None

    @property
    def best(self) -> PassageScore | None:
        """The passage that holds most of what the question asks."""
        scores = [q.score for q in self.quotes if q.score is not None]
        scores += [self.matched] if self.matched is not None else []
        return max(scores, key=lambda s: (s.named, s.coverage, s.cosine), default=None)


def choose(
    db: Database,
    tenant_id: UUID,
    scorer: PassageScorer,
    ranked: Sequence[tuple[Hit, float]],
    runner_up_ratio: float,
) -> Choice | None:
    """The passages to quote from the ranked hits (each with its rank score); None when the
    top document was removed since the search."""
    top_hit = ranked[0][0]
    page = _page(db, tenant_id, scorer, top_hit.document_id, top_hit, runner_up_ratio)
    if page is None:
        return None
    quotes, matched = page
    pointed = _follow_stub(db, tenant_id, scorer, quotes[0].document, quotes, runner_up_ratio)
    if len(ranked) > 1 and runner_up_is_close(ranked[0][1], ranked[1][1], runner_up_ratio):
        runner_up = ranked[1][0]
        if runner_up.document_id != pointed:  # already quoted in full
            found = _page(db, tenant_id, scorer, runner_up.document_id, runner_up, None)
            quotes.extend(
                Quote(q.document, q.chunk_id, q.section, q.text, q.score, runner_up=True)
                for q in (found[0] if found else [])[:RUNNER_UP_SECTIONS]
            )
    return Choice(quotes, matched)


def extractive(choice: Choice) -> tuple[str, list[Citation]]:
    """The answer's text and citations: each page's title, then its quoted passages."""
    citations: list[Citation] = []
    parts: list[str] = []
    previous: Quote | None = None
    for n, chosen in enumerate(choice.quotes, start=1):
        first_runner_up = chosen.runner_up and (previous is None or not previous.runner_up)
        if first_runner_up:
            parts.append(CLOSE_MATCH)
        if first_runner_up or previous is None or chosen.document.id != previous.document.id:
            parts.append(f"From “{chosen.document.title}”:")
        document = chosen.document
        citations.append(citation(n, chosen.chunk_id, document, chosen.section, chosen.text))
        label = f"{chosen.section}: " if chosen.section else ""
        parts.append(cited_part(label, chosen.text, n))
        previous = chosen
    return "\n\n".join(parts), citations


def _follow_stub(
    db: Database,
    tenant_id: UUID,
    scorer: PassageScorer,
    stub: DocumentText,
    quotes: list[Quote],
    ratio: float,
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
    found = _page(db, tenant_id, scorer, target, None, ratio)
    if found is None:
        return None
    quotes.extend(found[0])
    return target


def _page(
    db: Database,
    tenant_id: UUID,
    scorer: PassageScorer,
    document_id: UUID,
    hit: Hit | None,
    ratio: float | None,
) -> tuple[list[Quote], PassageScore | None] | None:
    """A page's passages to quote: its Diagnosis and Mitigation when it is a runbook that has
    them, else its best passage and (``ratio`` given) the next when close; the matched chunk's
    snippet when it has no passage worth quoting. None when the page is gone. Without a search
    hit (a stub's page), its first chunk stands in for the matched passage. With them, the
    page's best passage's score when the quotes are a runbook's actions."""
    with db.tenant(tenant_id) as conn:
        document = store.document_text(conn, tenant_id, document_id)
        chunks = store.document_chunks(conn, tenant_id, document_id)
    if document is None or (hit is None and not chunks):
        return None
    fallback = hit.chunk_id if hit is not None else chunks[0].id
    ranked = scorer.ranked(units(document.body or ""))
    chosen = _actions(ranked) if ratio is not None else []
    matched = ranked[0].score if chosen else None
    if not chosen and ranked:
        runner_up = close_runner_up(ranked, ratio) if ratio is not None else None
        chosen = [ranked[0], *([runner_up] if runner_up is not None else [])]
    quotes = [
        Quote(
            document,
            _chunk_of(chunks, s.unit.path[-1] if s.unit.path else "", s.unit.text, fallback),
            within_page(s.unit.path, document.title),
            quote(s.unit.text),
            s.score,
        )
        for s in chosen
    ]
    if not quotes:  # no text worth quoting: the matched passage
        snippet = hit.snippet if hit is not None else quote(chunks[0].text, SNIPPET_CHARS)
        quotes.append(Quote(document, fallback, "", snippet, None))
    return quotes, matched


def _actions(ranked: list[ScoredUnit]) -> list[ScoredUnit]:
    """A runbook's sections an on-call engineer acts on, in order, when it has them."""
    by_name: dict[str, ScoredUnit] = {}
    for scored in sorted(ranked, key=lambda s: len(s.unit.path)):
        name = scored.unit.path[-1].strip().lower() if scored.unit.path else ""
        if name in ACTION_SECTIONS and name not in by_name:
            by_name[name] = scored
    return [by_name[name] for name in ACTION_SECTIONS if name in by_name]


def _chunk_of(chunks: list[DocumentChunk], heading: str, text: str, fallback: int) -> int:
    """The chunk that holds a passage: the first one containing its text's start, else its
    heading."""
    probes = [p for p in (text[:80].strip(), heading and f"# {heading}") if p]
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
