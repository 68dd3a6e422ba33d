"""Ask on a tiny library reference (tests/data/library-mini: a Sphinx-like CSV module page, two
other short reference pages and a long guide on files, all written for these tests): the
passage that answers is quoted with its heading path, and a page whose passages hold nothing
asked is no answer."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.ask.answering import AskService, ask
from resolveflow.ask.domain.answers import AnswerOutcome
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.store.database import Database

QUESTION_NOT_HELD = (
    "Which file modes and encodings should I use for reading records from spreadsheets?"
)
LIBRARY = Path(__file__).parents[2] / "data" / "library-mini" / "corpus"


def _library(db: Database) -> tuple[AskService, UUID]:
    tenant = admin.add_tenant(db, "library").id
    embedder = OnnxMiniLM()
    Indexer(db, embedder).upsert(tenant, list(read_docs_dir(LIBRARY, "docs")))
    return AskService(db, Searcher(db, embedder)), tenant


def test_rows_as_dictionaries_quote_dictreader_with_its_description(db: Database) -> None:
    service, tenant = _library(db)
    answer = ask(service, tenant, "How do I read a CSV file so that each row is a dictionary?")
    assert answer.outcome is AnswerOutcome.ANSWERED
    first = answer.citations[0]
    assert first.path == "library/csv.html"
    # Its heading path within the page (the page's title is the citation's own).
    assert first.section == "Module Contents › csv.DictReader"
    assert "csv.DictReader(" in first.quote and "keyed by column name" in first.quote


def test_a_page_whose_passages_hold_nothing_asked_is_tentative(db: Database) -> None:
    service, tenant = _library(db)
    answer = ask(service, tenant, QUESTION_NOT_HELD)
    assert answer.outcome is AnswerOutcome.TENTATIVE
    assert answer.citations == [] and answer.related
