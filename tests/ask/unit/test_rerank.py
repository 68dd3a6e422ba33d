"""Ask's re-ranking: the first pages' scores raised by a cross-encoder's reading, for a short
question only (ask/reread.py; the shipped model itself: core/unit/test_onnx_cross_encoder.py,
through Ask and Postgres: ask/integration/test_ask_rerank.py)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import uuid4

from resolveflow.ask.domain.question import read_question
from resolveflow.ask.reread import RERANK_DEPTH, RERANK_WEIGHT, Ranked, reranked
from resolveflow.retrieval.records import BranchScores, Hit


class ByWord:
    """A stand-in cross-encoder (the real one is an outside model): 10 for a text holding the
    word, -10 otherwise; it records what it was asked to read."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.read: list[str] = []

    def scores(self, question: str, texts: Sequence[str]) -> list[float]:
        self.read += texts
        return [10.0 if self.word in text else -10.0 for text in texts]


def _ranked(name: str, score: float) -> Ranked:
    hit = Hit(
        document_id=uuid4(),
        chunk_id=1,
        source="docs",
        external_id=name,
        kind="doc",
        title=name,
        url=None,
        state=None,
        labels=(),
        created_at=None,
        closed_at=None,
        runbook_tag=None,
        section="",
        snippet="",
        scores=BranchScores(0.5, 1, 1.0, 1),
        fused=0.5,
        relevance=0.5,
    )
    return Ranked(hit, score, 0.0)


def _pages(n: int) -> list[Ranked]:
    return [_ranked(f"page{i}", 1.0 - i * 0.01) for i in range(n)]


def _texts(pages: list[Ranked], answering: str) -> list[tuple[str, str]]:
    return [
        (f"{p.hit.external_id} chunk", f"{p.hit.external_id} head {answering}")
        if p.hit.external_id == answering
        else (f"{p.hit.external_id} chunk", f"{p.hit.external_id} head")
        for p in pages[:RERANK_DEPTH]
    ]


def test_the_page_the_reader_finds_answering_rises_to_first() -> None:
    pages = _pages(30)
    reader = ByWord("answers")
    texts = _texts(pages, "page3")
    texts[3] = ("page3 chunk", "page3 head answers")
    ranked = reranked(reader, read_question("how to copy a tree"), pages, texts)
    assert [r.hit.external_id for r in ranked[:2]] == ["page3", "page0"]
    # Its head read as answering (the better of its two texts), the logistic of 10.
    assert 0.99 * RERANK_WEIGHT < ranked[0].reread <= RERANK_WEIGHT
    assert ranked[0].score == pages[3].score + ranked[0].reread
    # Two texts a page, for the first RERANK_DEPTH pages only; the rest keep their scores.
    assert len(reader.read) == 2 * RERANK_DEPTH
    assert all(r.reread == 0.0 for r in ranked[RERANK_DEPTH:])
    assert [r.hit.external_id for r in ranked[RERANK_DEPTH:]] == [
        p.hit.external_id for p in pages[RERANK_DEPTH:]
    ]
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)


def test_no_reader_or_nothing_to_read_keeps_the_ranking() -> None:
    pages = _pages(5)
    question = read_question("how to copy a tree")
    assert reranked(None, question, pages, _texts(pages, "page3")) == pages
    assert reranked(ByWord("answers"), question, pages, []) == pages
