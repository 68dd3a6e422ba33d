"""Ask on a tiny library reference (tests/data/library-mini: a Sphinx-like CSV module page, two
other short reference pages and a long guide on files, all written for these tests): the
passage that answers is quoted with its heading path, and a page whose passages hold nothing
asked is no answer."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.ask.answering import AskService, ask
from resolveflow.ask.choice import PassageScorer
from resolveflow.ask.domain.answers import AnswerabilityRule, AnswerOutcome
from resolveflow.ask.domain.question import read_question
from resolveflow.ask.extractive import choose
from resolveflow.ask.store import answers as answers_store
from resolveflow.ask.text import QUOTE_CHARS, Unit, quote, quote_with
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
    """The page rule answers this question; whether it stays an answer is the quoted
    passage's to say: with passages held to what none of them reaches, the pages are listed
    as "may help" and nothing is quoted."""
    service, tenant = _library(db)
    assert ask(service, tenant, QUESTION_NOT_HELD).outcome is AnswerOutcome.ANSWERED
    strict = AnswerabilityRule(passage_coverage=1.01, passage_relation=9.0)
    answer = ask(dataclasses.replace(service, rule=strict), tenant, QUESTION_NOT_HELD)
    assert answer.features is not None and strict.outcome(answer.features) is AnswerOutcome.ANSWERED
    assert answer.outcome is AnswerOutcome.TENTATIVE
    assert answer.citations == [] and answer.related


ARCHIVES = [
    "An archive keeps many files in one, with their names, sizes and times.",
    "Archives made on one system open on another; the format records which.",
    "Compression is optional: a plain archive only gathers the files together.",
    "Large archives are read member by member, so memory stays small.",
    "Names inside an archive use forward slashes whatever the system.",
    "A damaged archive reports the first member it cannot read and stops there.",
    "Archives can be appended to when they were written without compression.",
    "Each member keeps the permissions it had when the archive was written.",
]
DEEP = (
    "To take a single file out of an archive without unpacking everything, call "
    "`extract_member(archive, name)`: it writes only that one file beside the archive."
)


def test_the_answering_words_deep_in_a_long_section_are_quoted(db: Database) -> None:
    """A long section's quote starts at its beginning; the paragraph that answers, far past
    the cut, is quoted after it with its code example."""
    tenant = admin.add_tenant(db, "archives").id
    question = "How do I take a single file out of an archive without unpacking everything?"
    paragraphs = [
        *ARCHIVES * 3,
        DEEP + "\n\n```\nextract_member(a, 'x.txt')\n```",
        *ARCHIVES,
    ]
    text = "\n\n".join(paragraphs)
    with db.tenant(tenant) as conn:
        idfs = {t.lexeme: 1.0 for t in answers_store.question_terms(conn, tenant, question)}
    scorer = PassageScorer(db, OnnxMiniLM(), tenant, read_question(question), idfs, 0.5)
    unit = Unit(("Working with archives", "Archives"), text)
    assert "extract_member" not in quote(text) and text.index(DEEP) > 2 * QUOTE_CHARS
    part = scorer.best_part(unit)
    assert part is not None and part.startswith(DEEP) and part.endswith("```")
    quoted = quote_with(text, part)
    assert quoted.startswith(ARCHIVES[0]) and "extract_member(archive, name)" in quoted
    assert "extract_member(a, 'x.txt')" in quoted  # the code example with its sentence


def test_the_top_page_is_quoted_beside_a_close_second_whose_passage_won(db: Database) -> None:
    """The ranking's first two pages close (near twins), the passage chosen from the second:
    the first page's best is quoted beside it, as the second's is when the first's wins (the
    ranking's scores are given; the search, index and passage scorer are the real ones)."""
    service, tenant = _library(db)
    question = "How do I read a CSV file so that each row is a dictionary?"
    hits = {h.external_id: h for h in service.searcher.search(tenant, question)}
    first, second = hits["library/json.html"], hits["library/csv.html"]
    with db.tenant(tenant) as conn:
        idfs = {t.lexeme: 1.0 for t in answers_store.question_terms(conn, tenant, question)}
    scorer = PassageScorer(
        db, service.searcher.embedder, tenant, read_question(question), idfs, 0.5
    )
    choice = choose(db, tenant, scorer, [(first, 1.0), (second, 0.9)], 0.8)
    assert choice is not None
    quoted = [(q.document.external_id, q.section, q.runner_up) for q in choice.quotes]
    assert quoted[0] == ("library/csv.html", "Module Contents › csv.DictReader", False)
    assert [q for q in quoted if q[0] == "library/json.html"] == [quoted[-1]]
    assert quoted[-1][2]  # shown as the close match
    # The first page not close: the second's passages alone.
    apart = choose(db, tenant, scorer, [(first, 1.0), (second, 0.5)], 0.8)
    assert apart is not None
    assert {q.document.external_id for q in apart.quotes} == {"library/csv.html"}
