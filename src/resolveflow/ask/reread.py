"""Ask's second reading of the pages it lists when it quotes none (docs/ask.md, "Re-ranking"):
what the cross-encoder reads of each of the first pages, and the ranking raised by its reading.
``answering.py`` decides when; the ranked pages are this module's ``Ranked``."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from resolveflow.adapters.reranker.protocol import Reranker
from resolveflow.ask.domain.question import AskedQuestion
from resolveflow.ask.store import answers as store
from resolveflow.retrieval.records import Hit

# Re-ranking (docs/ask.md, "Re-ranking"): when no page is quoted as the answer, the pages listed
# ("these may help", or the closest ones beside an abstention) are the first pages re-read by a
# cross-encoder, which reads the question beside each page's best chunk and beside its head
# (title and first paragraphs); the logistic of the better of the two, times the weight, is added
# to the page's score. An answer is decided and quoted from the ranking without it: re-ranked
# first pages were quoted more often with passages that do not hold what was asked (Cargo book:
# confidently wrong 0.42 -> 0.50). It learned on MS MARCO's short web queries: a question of
# more words than ``RERANK_MAX_WORDS`` (a pasted message) is never re-read (on R's pages, r-help
# posts of 131 words median, it lowered MRR@5 from 0.335 to 0.308). Dev sets, MRR@5 without /
# with: Cargo book 0.440 / 0.503, Rust book 0.624 / 0.664, runbooks 0.960 / 0.960, R's pages
# 0.335 / 0.337; every other figure unchanged or better.
RERANK_DEPTH = 20
RERANK_WEIGHT = 0.5
RERANK_MAX_WORDS = 30
RERANK_HEAD_CHARS = 600


@dataclass(frozen=True)
class Ranked:
    """A retrieved page with its rank score and what the ranking read of it."""

    hit: Hit
    score: float
    title_coverage: float
    name: str = ""  # the question's name the page is about, "" when none
    name_weight: float = 0.0
    reread: float = 0.0  # the re-ranker's part of ``score`` (0: not re-read)


def reread_texts(conn: Any, tenant_id: UUID, first: list[Ranked]) -> list[tuple[str, str]]:
    """What the re-ranker reads of each of ``first``: its best chunk and its head, each under
    its title."""
    chunks = store.chunks_by_id(conn, tenant_id, [r.hit.chunk_id for r in first])
    ids = [r.hit.document_id for r in first]
    heads = {h.id: h.head for h in store.page_heads(conn, tenant_id, ids, RERANK_HEAD_CHARS)}
    texts: list[tuple[str, str]] = []
    for r in first:
        chunk = chunks.get(r.hit.chunk_id)
        body = chunk.text if chunk is not None else r.hit.snippet
        texts.append(
            (
                f"{r.hit.title}\n{r.hit.section}\n{body}",
                f"{r.hit.title}\n{heads.get(r.hit.document_id, '')}",
            )
        )
    return texts


def reranked(
    reranker: Reranker | None,
    asked: AskedQuestion,
    ranked: list[Ranked],
    texts: list[tuple[str, str]],
) -> list[Ranked]:
    """The first pages' scores raised by the re-ranker's reading (``RERANK_WEIGHT`` times the
    logistic of its better score, chunk or head), the whole ranking sorted again."""
    if reranker is None or not texts:
        return ranked
    flat = [text for pair in texts for text in pair]
    scores = reranker.scores(asked.text, flat)
    raised = [
        replace(r, score=r.score + bonus, reread=bonus)
        for r, bonus in zip(
            ranked,
            (
                RERANK_WEIGHT * _logistic(max(scores[2 * i], scores[2 * i + 1]))
                for i in range(len(texts))
            ),
            strict=False,
        )
    ]
    return sorted(raised + ranked[len(texts) :], key=lambda r: (-r.score, str(r.hit.document_id)))


def _logistic(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(logit, 50.0), -50.0)))
