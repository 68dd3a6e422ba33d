"""The passages an answer quotes, and the extractive answer (provider ``none``) made of them.

Within the pages the ranking chose: the best passage among the first ``POOLED_PAGES`` pages'
(``choice.py``), the next one when it scores close, and the best of whichever of the ranking's
first two pages is not quoted yet when the two are close;
a runbook's Diagnosis and Mitigation when the top page has them, and a stub with the page it
points to. Each is quoted under its heading path within its page (a long one from its start,
with its best paragraph when that lies past the cut) and cited to the chunk that holds it. A
model is given the same passages. Titles and quotes come from the database."""

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
    quote_with,
    units,
    within_page,
)
from resolveflow.retrieval.records import Hit
from resolveflow.store.database import Database

# The pages whose passages compete for the quote: the ranking's first three. A page ranked
# second or third often holds the passage that answers when the first is a long guide that
# matches the question's general words (Cargo book: the answering passage quoted for 13 of 39
# questions against 9 from the first page alone; Rust book 8 against 6).
POOLED_PAGES = 3
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
    top document was removed since the search. A runbook's Diagnosis and Mitigation when the
    top page has them, or a stub's link and the page it points to (``_runbook``); otherwise the
    best passage among the first ``POOLED_PAGES`` pages, and the next one from another section
    when it scores close (from another page only when the ranking finds that page close)."""
    top_hit = ranked[0][0]
    top = _read(db, tenant_id, top_hit.document_id, top_hit)
    if top is None:
        return None
    top_ranked = scorer.ranked(units(top.document.body or ""))
    stub = pointed_page(top.document.body or "", top.document.external_id) is not None
    if _actions(top_ranked) or stub:
        pointed = _pointed(db, tenant_id, top.document) if stub else None
        return _runbook(db, tenant_id, scorer, top, top_ranked, pointed, ranked, runner_up_ratio)
    pages, close = [top], [True]
    for hit, score in ranked[1:POOLED_PAGES]:
        read = _read(db, tenant_id, hit.document_id, hit)
        if read is not None:
            pages.append(read)
            close.append(runner_up_is_close(ranked[0][1], score, runner_up_ratio))
    pooled = [(0, s) for s in top_ranked]
    pooled += [
        (n, s)
        for n, page in enumerate(pages[1:], 1)
        for s in scorer.ranked(units(page.document.body or ""))
    ]
    pooled.sort(key=lambda pair: -pair[1].score.score)  # stable: the ranking's order on ties
    if not pooled:  # no text worth quoting: the matched passage
        return Choice([Quote(top.document, top.fallback, "", top_hit.snippet, None)])
    # A second page is quoted beside the first only when the ranking finds it close too: a
    # passage alone close in score is often from an unrelated page.
    first = pooled[0][0]
    second = close_runner_up([p for p in pooled if p[0] == first or close[p[0]]], runner_up_ratio)
    chosen = [pooled[0], *([second] if second is not None else [])]
    # The ranking's first two pages, when close, are both quoted (each its best passage), as a
    # runbook's are: near-twin pages are the ranking's typical confusion, told apart at a
    # glance. The passage chosen may be the second's, so the one left out may be the first.
    quoted = {n for n, _ in chosen}
    if len(close) > 1 and close[1]:
        for n in (0, 1):
            if n not in quoted:
                chosen += [p for p in pooled if p[0] == n][:RUNNER_UP_SECTIONS]
    return Choice(
        [_quote(scorer, pages[n], scored, runner_up=n != pooled[0][0]) for n, scored in chosen]
    )


@dataclass(frozen=True)
class _Page:
    document: DocumentText
    chunks: list[DocumentChunk]
    fallback: int  # the matched chunk (the first one without a search hit)


def _read(db: Database, tenant_id: UUID, document_id: UUID, hit: Hit | None) -> _Page | None:
    with db.tenant(tenant_id) as conn:
        document = store.document_text(conn, tenant_id, document_id)
        chunks = store.document_chunks(conn, tenant_id, document_id)
    if document is None or (hit is None and not chunks):
        return None
    return _Page(document, chunks, hit.chunk_id if hit is not None else chunks[0].id)


def _quote(scorer: PassageScorer, page: _Page, scored: ScoredUnit, runner_up: bool) -> Quote:
    unit = scored.unit
    heading = unit.path[-1] if unit.path else ""
    return Quote(
        page.document,
        _chunk_of(page.chunks, heading, unit.text, page.fallback),
        within_page(unit.path, page.document.title),
        quote_with(unit.text, scorer.best_part(unit)),
        scored.score,
        runner_up=runner_up,
    )


def _runbook(
    db: Database,
    tenant_id: UUID,
    scorer: PassageScorer,
    top: _Page,
    top_ranked: list[ScoredUnit],
    pointed: _Page | None,
    ranked: Sequence[tuple[Hit, float]],
    ratio: float,
) -> Choice:
    """A runbook's actions (or a stub's link), the actions (or best passage) of the page a stub
    points to, and a close runner-up page's best passage. With actions quoted, the top page's
    best passage is what the question is matched against (``Choice.matched``)."""
    actions = _actions(top_ranked)
    chosen = actions or top_ranked[:1]
    quotes = [_quote(scorer, top, s, runner_up=False) for s in chosen]
    if not quotes:
        snippet = quote(top.document.body or "", SNIPPET_CHARS)
        quotes.append(Quote(top.document, top.fallback, "", snippet, None))
    if pointed is not None:
        found = scorer.ranked(units(pointed.document.body or ""))
        chosen = _actions(found) or found[:1]
        quotes += [_quote(scorer, pointed, s, runner_up=False) for s in chosen]
    if len(ranked) > 1 and runner_up_is_close(ranked[0][1], ranked[1][1], ratio):
        hit = ranked[1][0]
        page = _read(db, tenant_id, hit.document_id, hit)
        if page is not None and (pointed is None or page.document.id != pointed.document.id):
            found = scorer.ranked(units(page.document.body or ""))
            quotes += [_quote(scorer, page, s, runner_up=True) for s in found[:RUNNER_UP_SECTIONS]]
    return Choice(quotes, top_ranked[0].score if actions else None)


def _pointed(db: Database, tenant_id: UUID, stub: DocumentText) -> _Page | None:
    """A stub ("See [Node RAID Degraded](./NodeRAIDDegraded.md)") answers nothing itself: the
    page it points to, when that page is in the tenant's index from the same source."""
    path = pointed_page(stub.body or "", stub.external_id)
    if path is None:
        return None
    with db.tenant(tenant_id) as conn:
        target = store.document_id_by_path(conn, tenant_id, stub.source, path)
    if target is None or target == stub.id:
        return None
    return _read(db, tenant_id, target, None)


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
