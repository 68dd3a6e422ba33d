"""Ask with the shipped cross-encoder (ms-marco-MiniLM-L-12-v2, int8) on a tiny library reference
(tests/data/library-mini): pages listed when none is quoted ("these may help") are re-read and
the record says by how much; an answer, a long question (a pasted message) and a service
without the re-ranker are ranked without it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.adapters.reranker.onnx_msmarco import OnnxCrossEncoder
from resolveflow.ask.answering import AskService, ask
from resolveflow.ask.domain.answers import AnswerabilityRule, AnswerOutcome
from resolveflow.ask.reread import RERANK_MAX_WORDS, RERANK_WEIGHT
from resolveflow.ask.store import answers as answers_store
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.store.database import Database

LIBRARY = Path(__file__).parents[2] / "data" / "library-mini" / "corpus"
ANSWERED = "How do I read a CSV file so that each row is a dictionary?"
QUESTION = "Which file modes and encodings should I use for reading records from spreadsheets?"
# The same question inside a message of more words than the re-ranker was trained on.
LONG = (
    "Hello all, I have been working on a small script at work that reads the exports our "
    "accounting system writes every night, and I am stuck on one thing. " + QUESTION + " Thanks "
    "in advance for any pointers, and sorry if this has been asked before."
)
# Passages held to what none reaches: the pages are listed as "may help", nothing is quoted.
STRICT = AnswerabilityRule(passage_coverage=1.01, passage_relation=9.0)


def _library(db: Database) -> tuple[AskService, UUID]:
    tenant = admin.add_tenant(db, "library").id
    embedder = OnnxMiniLM()
    Indexer(db, embedder).upsert(tenant, list(read_docs_dir(LIBRARY, "docs")))
    service = AskService(db, Searcher(db, embedder), reranker=OnnxCrossEncoder())
    return service, tenant


def _rereads(db: Database, tenant: UUID, record_id: UUID | None) -> dict[str, float]:
    assert record_id is not None
    with db.tenant(tenant) as conn:
        record = answers_store.ask_record(conn, tenant, record_id)
    assert record is not None
    return {row["document_id"]: row["reread"] for row in record.retrieved}


def test_the_pages_listed_as_may_help_are_reread(db: Database) -> None:
    service, tenant = _library(db)
    answer = ask(dataclasses.replace(service, rule=STRICT), tenant, QUESTION)
    assert answer.outcome is AnswerOutcome.TENTATIVE
    rereads = _rereads(db, tenant, answer.record_id)
    # Each page's part is the weight times a logistic: 0 (rounded) for a page read as unrelated.
    assert len(rereads) > 1 and all(0.0 <= value <= RERANK_WEIGHT for value in rereads.values())
    assert max(rereads.values()) > 0.0
    scores = [ref.score for ref in answer.related]
    assert scores == sorted(scores, reverse=True)
    assert [ref.path for ref in answer.related] == [ref.path for ref in answer.retrieved]


def test_an_answer_a_long_question_and_no_reranker_are_ranked_without_it(db: Database) -> None:
    service, tenant = _library(db)
    answered = ask(service, tenant, ANSWERED)
    assert answered.outcome is AnswerOutcome.ANSWERED
    assert answered.citations[0].path == "library/csv.html"
    assert set(_rereads(db, tenant, answered.record_id).values()) == {0.0}

    strict = dataclasses.replace(service, rule=STRICT)
    assert len(LONG.split()) > RERANK_MAX_WORDS
    long_answer = ask(strict, tenant, LONG)
    assert long_answer.outcome is AnswerOutcome.TENTATIVE
    assert set(_rereads(db, tenant, long_answer.record_id).values()) == {0.0}

    plain = ask(dataclasses.replace(strict, reranker=None), tenant, QUESTION)
    assert plain.outcome is AnswerOutcome.TENTATIVE
    assert set(_rereads(db, tenant, plain.record_id).values()) == {0.0}
