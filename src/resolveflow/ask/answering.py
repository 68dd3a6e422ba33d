"""Ask: a cited answer from the tenant's own documents, or an honest abstention.

Order of work: retrieve (the hybrid search, tenant-filtered), rank (search score plus a small
title bonus), decide answerability in code from measured features; not answerable -> the fixed
abstention with the closest documents as related, and no model is called; answerable -> an
extractive answer (provider ``none``) or a model's answer that cites retrieved chunk ids, checked
by code and retried within a budget, else the abstention. Everything shown (titles, links,
quotes) is read from the database. See docs/ask.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from resolveflow.ask.domain.answers import (
    ABSTENTION_TEXT,
    RUNNER_UP_RATIO,
    Answer,
    AnswerabilityRule,
    AnswerFeatures,
    DocumentRef,
    ModelAnswer,
    term_coverage,
    validate_citations,
)
from resolveflow.ask.extractive import citation, extractive
from resolveflow.ask.store import answers as store
from resolveflow.ask.text import prompt, quote
from resolveflow.errors import InvalidInput
from resolveflow.llm.errors import ModelError, ModelOutputInvalid
from resolveflow.llm.protocol import ChatModel
from resolveflow.llm.structured import structured_call
from resolveflow.retrieval.records import Hit
from resolveflow.retrieval.search import LEXICAL_QUERY_CHARS, MIN_TERM_CHUNKS, Searcher
from resolveflow.store import documents as documents_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

DEPTH = 10  # documents retrieved and ranked
SHOWN = 5  # documents listed as retrieved / related
TITLE_BONUS = 0.2  # rank bonus per unit of title coverage (docs/ask.md)
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


@dataclass(frozen=True)
class _Ranked:
    hit: Hit
    score: float
    title_coverage: float


def ask(
    service: AskService, tenant_id: UUID, question: str, *, principal_id: UUID | None = None
) -> Answer:
    """Answer ``question`` from tenant ``tenant_id``'s documents (the caller has authorized the
    principal for that tenant) and record the ask (``Answer.record_id``); ``principal_id`` is
    who asked, when a principal did."""
    question = question.strip()
    if not question:
        raise InvalidInput("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    ranked, answerable, answer = _answer(service, tenant_id, question)
    with service.db.tenant(tenant_id) as conn:
        record_id = store.insert_ask_record(
            conn, tenant_id, _record(service, principal_id, ranked, answerable, answer)
        )
    return answer.model_copy(update={"record_id": record_id})


def _answer(
    service: AskService, tenant_id: UUID, question: str
) -> tuple[list[_Ranked], bool | None, Answer]:
    """The ranking, the answerability decision (None: nothing retrieved) and the answer."""
    hits = service.searcher.search(tenant_id, question, k=DEPTH)
    if not hits:
        empty = Answer(question=question, text=ABSTENTION_TEXT, abstained=True, generator="none")
        return [], None, empty
    with service.db.tenant(tenant_id) as conn:
        ranked = _rank(conn, tenant_id, question, hits)
        features = _features(service, conn, tenant_id, question, ranked)
    retrieved = [_ref(r) for r in ranked[:SHOWN]]
    if not service.rule.answerable(features):
        return ranked, False, _abstention(question, retrieved, features)
    if service.model is None:
        answer = _extractive(service, tenant_id, question, ranked, retrieved, features)
    else:
        answer = _generated(service, tenant_id, question, ranked, retrieved, features)
    return ranked, True, answer


def _record(
    service: AskService,
    principal_id: UUID | None,
    ranked: list[_Ranked],
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


def _rank(conn: Any, tenant_id: UUID, question: str, hits: list[Hit]) -> list[_Ranked]:
    titles = store.title_cover(conn, tenant_id, question, [h.document_id for h in hits])
    ranked = [
        _Ranked(
            h,
            h.fused + TITLE_BONUS * titles.get(h.document_id, 0.0),
            titles.get(h.document_id, 0.0),
        )
        for h in hits
    ]
    return sorted(ranked, key=lambda r: (-r.score, str(r.hit.document_id)))


def _features(
    service: AskService, conn: Any, tenant_id: UUID, question: str, ranked: list[_Ranked]
) -> AnswerFeatures:
    top = ranked[0]
    params = service.searcher.params
    state = documents_store.index_state(conn, tenant_id)
    chunks = state.chunk_count if state else 0
    lexical = documents_store.lexical_query(
        conn,
        tenant_id,
        question[:LEXICAL_QUERY_CHARS],
        params.max_terms,
        max(MIN_TERM_CHUNKS, int(params.max_term_share * chunks)),
        chunks,
        params.max_postings,
    )
    covered = store.term_cover(conn, tenant_id, lexical.terms, [top.hit.document_id])
    return AnswerFeatures(
        top_cosine=round(top.hit.scores.cosine, 4),
        top_score=round(top.score, 4),
        margin=round(top.score - ranked[1].score, 4) if len(ranked) > 1 else round(top.score, 4),
        term_coverage=round(
            term_coverage(lexical.terms, lexical.idfs, covered.get(top.hit.document_id, set())),
            4,
        ),
        title_coverage=round(top.title_coverage, 4),
    )


def _ref(ranked: _Ranked) -> DocumentRef:
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
        related=retrieved[:3],
        retrieved=retrieved,
        features=features,
        generator="none",
    )


def _extractive(
    service: AskService,
    tenant_id: UUID,
    question: str,
    ranked: list[_Ranked],
    retrieved: list[DocumentRef],
    features: AnswerFeatures,
) -> Answer:
    """The most useful section(s) of the top document, quoted, each cited to its chunk; the page
    a stub points to; and the runner-up's best section when it scores close (near-twins)."""
    made = extractive(
        service.db,
        tenant_id,
        question,
        [(r.hit, r.score) for r in ranked],
        service.runner_up_ratio,
    )
    if made is None:
        return _abstention(question, retrieved, features)  # removed since the search
    text, citations = made
    return Answer(
        question=question,
        text=text,
        abstained=False,
        citations=citations,
        retrieved=retrieved,
        features=features,
        generator="extractive",
    )


def _generated(
    service: AskService,
    tenant_id: UUID,
    question: str,
    ranked: list[_Ranked],
    retrieved: list[DocumentRef],
    features: AnswerFeatures,
) -> Answer:
    """A model's answer over the retrieved passages; its citations are checked against what was
    retrieved for this question in this tenant. Invalid answers are asked for again within the
    bound, then the answer is the abstention; a spent budget (``LimitExceeded``) goes to the
    caller."""
    assert service.model is not None
    ids = [r.hit.chunk_id for r in ranked[:SHOWN]]
    with service.db.tenant(tenant_id) as conn:
        passages = store.chunks_by_id(conn, tenant_id, ids)
    messages = prompt(
        question,
        [(cid, passages[cid].title, passages[cid].text) for cid in ids if cid in passages],
    )
    model = service.model
    try:
        made = structured_call(
            model,
            messages,
            ModelAnswer,
            lambda output: (output, validate_citations(output, list(passages))),
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
        citation(n, cid, passages[cid], "", quote(passages[cid].text))
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
