"""Which passage of a page answers the question: the page's passages (``text.units``: a section,
a definition with its description, a code example with its sentence, under its heading path)
scored by the measure the pages were ranked by, read at the passage's size: its meaning (the
passage embedded on its own, against the question), the question's words it holds (weighted
by how rare the index finds them, and by how few words the question has, as the ranking weighs
them), and a name of the question its heading gives. The best passage is quoted; the next one
too when it scores close by the same measure. Whether the quoted passage holds what the
question asks decides between an answer and "these may help" (``AnswerabilityRule.holds``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

import numpy as np

from resolveflow.adapters.embedder.protocol import Embedder, Vectors
from resolveflow.ask.domain.answers import term_coverage
from resolveflow.ask.domain.question import AskedQuestion, lexical_weight
from resolveflow.ask.store import answers as store
from resolveflow.ask.text import QUOTE_CHARS, Unit, pieces
from resolveflow.retrieval.chunking import query_text
from resolveflow.store.database import Database

NAME_BONUS = 0.1  # as the page ranking's (answering.NAME_BONUS): a name the asker writes
EMBED_CHARS = 1000  # the embedder reads 128 tokens; the rest of a passage costs time only
# The words' share of a passage's score, against the page ranking's: a page's words are many and
# a passage's few, so the same words count for less (Cargo book dev set: 0.5 of the page's
# share quoted the answering passage for 0.60 of answers, the page's own share 0.50).
PASSAGE_LEXICAL = 0.5
MAX_UNITS = 120  # passages scored per page (a settings reference has one per setting)
_NAME_TOKEN = re.compile(r"[\w:-]+(?:\.[\w:-]+)*")
K = TypeVar("K")  # what tells a passage's page from another's


@dataclass(frozen=True)
class PassageScore:
    score: float
    cosine: float
    coverage: float  # idf-weighted share of the question's words the passage holds
    named: float  # weight of the question's name the passage's heading gives (0: none)


@dataclass(frozen=True)
class ScoredUnit:
    unit: Unit
    score: PassageScore


@dataclass
class PassageScorer:
    """Scores passages for one question (the question is embedded once)."""

    db: Database
    embedder: Embedder
    tenant_id: UUID
    asked: AskedQuestion
    idfs: dict[str, float]
    lexical_share: float  # the fusion's lexical weight for documents
    _vector: Vectors | None = None  # the question's embedding when the caller has it already

    def ranked(self, found: Sequence[Unit]) -> list[ScoredUnit]:
        """``found`` best first (ties: reading order)."""
        found = list(found)[:MAX_UNITS]
        if not found:
            return []
        texts = [f"{u.heading}\n{u.text}" for u in found]
        with self.db.tenant(self.tenant_id) as conn:
            held = store.passage_terms(conn, list(self.idfs), texts)
        vectors = self.embedder.embed_documents([t[:EMBED_CHARS] for t in texts])
        cosines = vectors @ self._question_vector()
        weight = PASSAGE_LEXICAL * lexical_weight(self.asked.term_count, self.lexical_share)
        scored = [
            ScoredUnit(unit, self._score(unit, float(cosine), terms, weight))
            for unit, cosine, terms in zip(found, cosines, held, strict=True)
        ]
        order = sorted(range(len(scored)), key=lambda i: (-scored[i].score.score, i))
        return [scored[i] for i in order]

    def best_part(self, unit: Unit) -> str | None:
        """The paragraph (with the code example it introduces) of a passage too long to quote
        whole that scores best by the same measure; None when the passage is quoted whole."""
        if len(unit.text) <= QUOTE_CHARS:
            return None
        parts = [Unit(unit.path, text) for text in pieces(unit.text, 0)]
        ranked = self.ranked(parts) if len(parts) > 1 else []
        return ranked[0].unit.text if ranked else None

    def _question_vector(self) -> Vectors:
        if self._vector is None:
            self._vector = np.asarray(
                self.embedder.embed_query(query_text(self.asked.search_text)), dtype=np.float32
            )
        return self._vector

    def _score(self, unit: Unit, cosine: float, terms: set[str], weight: float) -> PassageScore:
        coverage = term_coverage(self.idfs, terms)
        named = heading_name(self.asked.names, unit.path[-1] if unit.path else "")
        score = (1 - weight) * cosine + weight * coverage + NAME_BONUS * named
        return PassageScore(round(score, 4), round(cosine, 4), round(coverage, 4), named)


def heading_name(names: dict[str, float], heading: str) -> float:
    """The weight of the question's name a heading gives (``csv.DictReader`` gives
    ``dictreader`` and ``csv.dictreader``), 0 when it gives none."""
    tokens: set[str] = set()
    for token in _NAME_TOKEN.findall(heading.lower()):
        tokens.add(token)
        tokens.update(part for part in token.split(".") if part)
    return max((weight for name, weight in names.items() if name in tokens), default=0.0)


def close_runner_up(
    ranked: Sequence[tuple[K, ScoredUnit]], ratio: float
) -> tuple[K, ScoredUnit] | None:
    """The next passage, from another section (of the same page ``K`` or another), when it
    scores at least ``ratio`` of the best one's; ``ranked`` is best first."""
    if not ranked or ranked[0][1].score.score <= 0:
        return None
    page, best = ranked[0]
    # Another piece of the same section reads as more of the same: the next section instead.
    second = next(
        (pair for pair in ranked[1:] if (pair[0], pair[1].unit.path) != (page, best.unit.path)),
        None,
    )
    if second is None or second[1].score.score < ratio * best.score.score:
        return None
    return second
