"""Ask: a cited answer from the tenant's own documents, or an honest abstention.

Order of work: read the question (the asker's words apart from pasted code, the names it
mentions), retrieve on the asker's words (the hybrid search, tenant-filtered), rank (meaning, the
words weighed by how few the question has, small bonuses for the title and for a name the page is
about), then decide one of three outcomes in code from measured features calibrated on the
tenant's own index: nothing relates -> the fixed abstention with the closest documents as related;
no page answers it for sure -> the candidates and what each shares with the question; answerable
-> an extractive answer (provider ``none``) or a model's answer that cites retrieved chunk ids,
checked by code and retried within a budget, else the abstention. No model is called unless the
outcome is an answer. Everything shown (titles, links,
quotes) is read from the database. See docs/ask.md.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from resolveflow.adapters.embedder.protocol import Vectors
from resolveflow.adapters.reranker.protocol import Reranker
from resolveflow.ask.calibration import calibration_points, saved_points
from resolveflow.ask.choice import PassageScorer
from resolveflow.ask.domain.answers import (
    ABSTENTION_TEXT,
    RUNNER_UP_RATIO,
    TENTATIVE_TEXT,
    Answer,
    AnswerabilityRule,
    AnswerFeatures,
    AnswerOutcome,
    Citation,
    DocumentRef,
    ModelAnswer,
    pooled_relation,
    relation,
    term_coverage,
    validate_citations,
)
from resolveflow.ask.domain.page_names import HEAD_CHARS, name_match, page_names
from resolveflow.ask.domain.question import AskedQuestion, lexical_weight, read_question
from resolveflow.ask.extractive import POOLED_PAGES, Choice, Quote, choose, citation, extractive
from resolveflow.ask.reread import (
    RERANK_DEPTH,
    RERANK_MAX_WORDS,
    Ranked,
    reranked,
    reread_texts,
)
from resolveflow.ask.store import answers as store
from resolveflow.ask.text import prompt
from resolveflow.errors import InvalidInput
from resolveflow.llm.errors import ModelError, ModelOutputInvalid
from resolveflow.llm.protocol import ChatModel, Purpose
from resolveflow.llm.structured import structured_call
from resolveflow.retrieval.chunking import query_text
from resolveflow.retrieval.fusion import DOCUMENT_KINDS
from resolveflow.retrieval.records import Hit
from resolveflow.retrieval.search import MAX_K, Searcher
from resolveflow.store import documents as documents_store
from resolveflow.store.database import Database
from resolveflow.store.documents import IndexState

logger = logging.getLogger(__name__)

# Documents retrieved and re-ranked: 20 -> 40 took R@5 on R's pages from 0.444 to 0.469 (the right page
# is often ranked 21-40 by the fused search and lifted by its title or name), runbooks unchanged.
DEPTH = 40
SHOWN = 5  # documents listed as retrieved / related
TITLE_BONUS = 0.15  # rank bonus per unit of title coverage (docs/ask.md)
NAME_BONUS = 0.1  # rank bonus per unit of name match (a name the asker writes: 1)
# Rank bonus per unit of the cosine of the page's head (its title and first paragraph: what it
# is about) to the question, beside its best chunk's: a long guide's best chunk matches many
# questions, its head few (docs/ask.md, "Page ranking").
ABOUT_BONUS = 0.15
# The words' share of a document's rank (before ``lexical_weight`` lowers it for a long
# question): a share of the question's words' weight reads lower than a score scaled by the
# best page's (few pages hold every word), so it weighs a little more than the search's 0.5.
WORDS_WEIGHT = 0.6
WHY_TERMS = 4  # shared words a tentative answer names per page
MAX_QUESTION_CHARS = 4000


@dataclass
class AskService:
    """What ``ask`` needs; the CLI and the web app build it from ``bootstrap/app.App``:
    ``AskService(app.db, app.searcher(), app.model())``."""

    db: Database
    searcher: Searcher
    model: ChatModel | None = None
    rule: AnswerabilityRule = field(default_factory=AnswerabilityRule)
    max_model_attempts: int = 2  # invalid model answers are retried this many times in all
    runner_up_ratio: float = RUNNER_UP_RATIO
    # The kinds of document it answers from (None: whatever is indexed). Triage's docs part
    # answers from documentation only: earlier issues are its related part's to show.
    kinds: frozenset[str] | None = None
    reranker: Reranker | None = None  # None: the ranking alone


def ask(
    service: AskService, tenant_id: UUID, question: str, *, principal_id: UUID | None = None
) -> Answer:
    """Answer ``question`` from tenant ``tenant_id``'s documents (the caller has authorized the
    principal for that tenant) and record the ask (``Answer.record_id``); ``principal_id`` is
    who asked, when a principal did. Recorded asks are what the ask history and the
    coverage-gap report (``gaps.py``) read."""
    question = _checked(question)
    ranked, answerable, answer = _answer(service, tenant_id, question)
    with service.db.tenant(tenant_id) as conn:
        record_id = store.insert_ask_record(
            conn, tenant_id, _record(service, principal_id, ranked, answerable, answer)
        )
    return answer.model_copy(update={"record_id": record_id})


def answer_only(service: AskService, tenant_id: UUID, question: str) -> Answer:
    """``ask`` without the record: the same ranking, calibration and answerability rule, so an
    uncertain answer is no answer, but no ask row, nothing in the history or the gap report
    (another product asking on a person's behalf, not a person asking). The calibration is
    still measured and stored when the index changed: it is the index's, not the ask's."""
    return _answer(service, tenant_id, _checked(question))[2]


def _checked(question: str) -> str:
    question = question.strip()
    if not question:
        raise InvalidInput("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    return question


def _answer(
    service: AskService, tenant_id: UUID, question: str
) -> tuple[list[Ranked], bool | None, Answer]:
    """The ranking, the answerability decision (None: nothing retrieved) and the answer."""
    asked = read_question(question)
    # The question is embedded once, outside any transaction, for the search, the pages' heads
    # and the passages alike (an empty search text is the search's one-line refusal).
    cleaned = query_text(asked.search_text)
    vector = service.searcher.embedder.embed_query(cleaned) if cleaned else None
    hits = _search(service, tenant_id, asked.search_text, vector)
    if not hits:
        empty = Answer(
            question=question,
            text=ABSTENTION_TEXT,
            abstained=True,
            outcome=AnswerOutcome.ABSTAINED,
            generator="none",
        )
        return [], None, empty
    with service.db.tenant(tenant_id) as conn:
        state = documents_store.index_state(conn, tenant_id)
        points = saved_points(conn, tenant_id, state)
        ranked = _rank(service, conn, tenant_id, asked, hits, vector)
        features, words = _features(conn, tenant_id, asked, ranked, state)
    if points is None:  # the index changed since it was calibrated: measured once, then stored
        points = calibration_points(service.db, service.searcher.embedder, tenant_id)
    pair = points.pair if points is not None else None
    if pair is not None:
        cosine = ranked[0].hit.scores.cosine
        features = features.model_copy(update={"relation": round(relation(cosine, *pair), 4)})
    retrieved = _refs(ranked)
    outcome = service.rule.outcome(features)
    if outcome is AnswerOutcome.ABSTAINED:
        ranked, _ = _listed(service, tenant_id, asked, ranked, None)
        return ranked, False, _abstention(question, _refs(ranked), features)
    if pair is not None:
        pooled = [r.hit.scores.cosine for r in ranked[:POOLED_PAGES]]
        features = pooled_relation(features, pooled, pair)
        outcome = service.rule.outcome(features)
    choice = None
    if outcome is AnswerOutcome.ANSWERED:
        choice = _choose(service, tenant_id, asked, words.idfs, ranked, vector)
        if choice is None:  # the top page was removed since the search
            return ranked, False, _abstention(question, retrieved, features)
        features = _passage_features(features, choice, pair)
        if not service.rule.holds(features):
            outcome = AnswerOutcome.TENTATIVE
    if outcome is AnswerOutcome.TENTATIVE or choice is None:
        ranked, shared = _listed(service, tenant_id, asked, ranked, words)
        return ranked, False, _tentative(question, ranked[:SHOWN], shared, features)
    if service.model is None:
        text, citations = extractive(choice)
        return ranked, True, _extractive(question, text, citations, retrieved, features)
    answer = _generated(service, tenant_id, question, choice, retrieved, features)
    return ranked, True, answer


def _choose(
    service: AskService,
    tenant_id: UUID,
    asked: AskedQuestion,
    idfs: dict[str, float],
    ranked: list[Ranked],
    vector: Vectors | None,
) -> Choice | None:
    """The passages that answer, within the pages the ranking chose (``extractive.choose``)."""
    scorer = PassageScorer(
        service.db,
        service.searcher.embedder,
        tenant_id,
        asked,
        idfs,
        service.searcher.params.fusion.document_lexical_weight,
        vector,
    )
    pairs = [(r.hit, r.score) for r in ranked]
    return choose(service.db, tenant_id, scorer, pairs, service.runner_up_ratio)


def _passage_features(
    features: AnswerFeatures, choice: Choice, pair: tuple[float, float] | None
) -> AnswerFeatures:
    """What the quoted passage that holds most of the question holds."""
    best = choice.best
    if best is None:
        return features
    return features.model_copy(
        update={
            "passage_coverage": best.coverage,
            "passage_name": best.named,
            "passage_relation": round(relation(best.cosine, *pair), 4) if pair else 0.0,
        }
    )


def _search(service: AskService, tenant_id: UUID, text: str, vector: Vectors | None) -> list[Hit]:
    """The ``DEPTH`` best hits of the kinds it answers from; searched deeper when it keeps some
    kinds only, since earlier issues outnumber a project's pages many times over."""
    if service.kinds is None:
        return service.searcher.search(tenant_id, text, k=DEPTH, vector=vector)
    hits = service.searcher.search(tenant_id, text, k=MAX_K, vector=vector)
    return [hit for hit in hits if hit.kind in service.kinds][:DEPTH]


def _record(
    service: AskService,
    principal_id: UUID | None,
    ranked: list[Ranked],
    answerable: bool | None,
    answer: Answer,
) -> dict[str, Any]:
    model = service.model
    return {
        "principal_id": principal_id,
        "question": answer.question,
        "retrieved": [
            {
                "document_id": str(r.hit.document_id),
                "chunk_id": r.hit.chunk_id,
                "score": round(r.score, 4),
                "reread": round(r.reread, 4),
                "fused": round(r.hit.fused, 4),
                "cosine": round(r.hit.scores.cosine, 4),
            }
            for r in ranked
        ],
        "features": answer.features.model_dump() if answer.features else None,
        "answerable": answerable,
        "abstained": answer.abstained,
        "answer_text": answer.text,
        "citations": [c.model_dump(mode="json") for c in answer.citations],
        "provider": model.provider if model is not None else "none",
        "model": model.model if model is not None else None,
        "generator": answer.generator,
        "prompt_version": answer.prompt_version,
    }


def _rank(
    service: AskService,
    conn: Any,
    tenant_id: UUID,
    asked: AskedQuestion,
    hits: list[Hit],
    vector: Vectors | None,
) -> list[Ranked]:
    """Meaning, plus the words weighed by how few the question has (``lexical_weight``), plus
    bonuses for the title's words, for a name of the question the page is about and for how
    close its head is in meaning. The words count as the share of the question's words' weight
    the page's best chunk holds, not against the best page's score: scaled by the best, a long
    guide whose many chunks hold a few generic words got the words' full weight and outranked
    the reference page that names what is asked (docs/ask.md, "Page ranking")."""
    ids = [h.document_id for h in hits]
    titles = store.title_cover(conn, tenant_id, asked.text, ids)
    heads = (
        store.head_cosines(conn, tenant_id, documents_store.vector_literal(vector), ids)
        if vector is not None
        else {}
    )
    names = {
        head.id: page_names(head.external_id, head.title, head.head, head.headings)
        for head in store.page_heads(conn, tenant_id, ids, HEAD_CHARS)
    }
    fusion = service.searcher.params.fusion
    document_weight = lexical_weight(asked.term_count, WORDS_WEIGHT)
    report_weight = lexical_weight(asked.term_count, fusion.lexical_weight)
    ranked: list[Ranked] = []
    for hit in hits:
        weight = document_weight if hit.kind in DOCUMENT_KINDS else report_weight
        lexical = min(1.0, hit.scores.lexical_share)
        name, matched = name_match(asked.names, names.get(hit.document_id, frozenset()))
        title = titles.get(hit.document_id, 0.0)
        score = (
            (1 - weight) * hit.scores.cosine
            + weight * lexical
            + TITLE_BONUS * title
            + NAME_BONUS * matched
            + ABOUT_BONUS * heads.get(hit.document_id, 0.0)
        )
        ranked.append(Ranked(hit, score, title, name, matched))
    return sorted(ranked, key=lambda r: (-r.score, str(r.hit.document_id)))


def _refs(ranked: list[Ranked]) -> list[DocumentRef]:
    return [_ref(r) for r in ranked[:SHOWN]]


@dataclass(frozen=True)
class _Words:
    """The question's indexed words: each one's idf (BM25's) and the word the question wrote."""

    idfs: dict[str, float]
    said: dict[str, str]


def _listed(
    service: AskService,
    tenant_id: UUID,
    asked: AskedQuestion,
    ranked: list[Ranked],
    words: _Words | None,
) -> tuple[list[Ranked], dict[UUID, list[str]]]:
    """The ranking of a list shown when no page is quoted: its first pages re-read when the
    re-ranker applies to the question, and (with ``words``) the question's words each page
    that may be shown holds. Read only here, on the lists' path, in one transaction; the
    model runs outside it."""
    reread = service.reranker is not None and len(asked.text.split()) <= RERANK_MAX_WORDS
    first = ranked[:RERANK_DEPTH] if reread else ranked[:SHOWN]
    with service.db.tenant(tenant_id) as conn:
        texts = reread_texts(conn, tenant_id, first) if reread else []
        shared = _shared_words(conn, tenant_id, words, first) if words is not None else {}
    return reranked(service.reranker, asked, ranked, texts), shared


def _shared_words(
    conn: Any, tenant_id: UUID, words: _Words, pages: list[Ranked]
) -> dict[UUID, list[str]]:
    """The question's words each page holds, rarest first, each as the question wrote it (the
    index's stems are no words to show): a listed page's reasons."""
    ids = [r.hit.document_id for r in pages]
    covered = store.term_cover(conn, tenant_id, list(words.idfs), ids)
    rarest = sorted(words.idfs, key=lambda w: (-words.idfs[w], w))
    return {
        doc: [words.said.get(w, w) for w in rarest if w in held] for doc, held in covered.items()
    }


def _features(
    conn: Any,
    tenant_id: UUID,
    asked: AskedQuestion,
    ranked: list[Ranked],
    state: IndexState | None,
) -> tuple[AnswerFeatures, _Words]:
    """The features of the top page (its ``relation`` is read against the calibration by the
    caller) and the question's words: each one's idf (the passage choice's) and as the
    question wrote it (a listed page's reasons)."""
    top = ranked[0]
    terms = store.question_terms(conn, tenant_id, asked.search_text)
    chunks = state.chunk_count if state else 0
    # BM25's idf; a word the index has never seen gets the highest (chunks = 0).
    idfs = {t.lexeme: math.log(1 + (chunks - t.chunks + 0.5) / (t.chunks + 0.5)) for t in terms}
    covered = store.term_cover(conn, tenant_id, list(idfs), [top.hit.document_id])
    unseen = sum(1 for t in terms if t.chunks == 0) / len(terms) if terms else 0.0
    known = store.known_names(conn, tenant_id, list(asked.names))
    features = AnswerFeatures(
        top_cosine=round(top.hit.scores.cosine, 4),
        top_score=round(top.score, 4),
        margin=round(top.score - ranked[1].score, 4) if len(ranked) > 1 else round(top.score, 4),
        term_coverage=round(term_coverage(idfs, covered.get(top.hit.document_id, set())), 4),
        title_coverage=round(top.title_coverage, 4),
        name_match=round(top.name_weight, 4),
        unseen_share=round(unseen, 4),
        known_names=known,
        question_words=asked.term_count,
    )
    return features, _Words(idfs, {t.lexeme: t.word for t in terms})


def _tentative(
    question: str,
    shown: list[Ranked],
    shared: dict[UUID, list[str]],
    features: AnswerFeatures,
) -> Answer:
    """No page answers it for sure: the candidates, each with what it shares with the
    question (a name it is about, the rarest words in common)."""
    related = [
        _ref(r).model_copy(update={"why": _why(r, shared.get(r.hit.document_id, []))})
        for r in shown
    ]
    return Answer(
        question=question,
        text=TENTATIVE_TEXT,
        abstained=False,
        outcome=AnswerOutcome.TENTATIVE,
        related=related,
        retrieved=related,
        features=features,
        generator="none",
    )


def _why(ranked: Ranked, words: list[str]) -> str:
    reasons: list[str] = []
    if ranked.name:
        reasons.append(f"about {ranked.name}, which the question names")
    if words:
        reasons.append("shares the words " + ", ".join(words[:WHY_TERMS]))
    if not reasons:
        reasons.append("close in meaning only")
    return "; ".join(reasons)


def _ref(ranked: Ranked) -> DocumentRef:
    return document_ref(ranked.hit, ranked.score)


def document_ref(hit: Hit, score: float) -> DocumentRef:
    """A search hit as the answer names it (the planner's searches too)."""
    return DocumentRef(
        document_id=str(hit.document_id),
        chunk_id=hit.chunk_id,
        title=hit.title,
        path=hit.external_id,
        url=hit.url,
        score=round(score, 4),
    )


def _abstention(
    question: str, retrieved: list[DocumentRef], features: AnswerFeatures | None
) -> Answer:
    return Answer(
        question=question,
        text=ABSTENTION_TEXT,
        abstained=True,
        outcome=AnswerOutcome.ABSTAINED,
        related=retrieved[:3],
        retrieved=retrieved,
        features=features,
        generator="none",
    )


def _extractive(
    question: str,
    text: str,
    citations: list[Citation],
    retrieved: list[DocumentRef],
    features: AnswerFeatures,
) -> Answer:
    return Answer(
        question=question,
        text=text,
        abstained=False,
        citations=citations,
        retrieved=retrieved,
        features=features,
        generator="extractive",
    )


def _given(choice: Choice) -> dict[int, tuple[str, str, Quote]]:
    """The chosen passages as the model is given them, by chunk id (passages of one chunk
    together): title, the passages under their heading paths, and the first for citing."""
    given: dict[int, tuple[str, str, Quote]] = {}
    for chosen in choice.quotes:
        text = f"{chosen.section}\n{chosen.text}" if chosen.section else chosen.text
        if chosen.chunk_id in given:
            title, earlier, first = given[chosen.chunk_id]
            given[chosen.chunk_id] = (title, f"{earlier}\n\n{text}", first)
        else:
            given[chosen.chunk_id] = (chosen.document.title, text, chosen)
    return given


def _generated(
    service: AskService,
    tenant_id: UUID,
    question: str,
    choice: Choice,
    retrieved: list[DocumentRef],
    features: AnswerFeatures,
) -> Answer:
    """A model's answer over the chosen passages (those the extractive answer quotes); its
    citations are checked against them: chunks retrieved for this question in this tenant.
    Invalid answers are asked for again within the bound, then the answer is the abstention; a
    spent budget (``LimitExceeded``) goes to the caller."""
    assert service.model is not None
    given = _given(choice)
    messages = prompt(question, [(cid, title, text) for cid, (title, text, _) in given.items()])
    model = service.model
    try:
        made = structured_call(
            model,
            messages,
            ModelAnswer,
            lambda output: (output, validate_citations(output, list(given))),
            purpose=Purpose.ANSWER,
            attempts=service.max_model_attempts,
        )
    except ModelOutputInvalid as exc:
        logger.info("model answer invalid", extra={"reason": exc.message})
        return _abstention(question, retrieved, features)
    except ModelError as exc:
        logger.warning("model unavailable for ask", extra={"reason": str(exc)})
        return _abstention(question, retrieved, features)
    output, cited = made.value
    citations = [
        citation(n, cid, given[cid][2].document, given[cid][2].section, given[cid][2].text)
        for n, cid in enumerate(cited, start=1)
    ]
    return Answer(
        question=question,
        text=output.answer.strip(),
        abstained=False,
        citations=citations,
        retrieved=retrieved,
        features=features,
        confidence=output.confidence,
        generator=f"{model.provider}/{model.model}",
    )
