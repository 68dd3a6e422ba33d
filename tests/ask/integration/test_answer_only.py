"""Ask's answer without its record (``answer_only``), as another product asks on nobody's behalf:
the same answer ``ask`` gives, with the same calibration and rule, and no ask row, so neither the
ask history nor the coverage-gap report counts it; ``ask`` itself still records."""

from __future__ import annotations

from uuid import UUID

from test_ask import ALERT, _service, _tenant

from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.ask.answering import AskService, answer_only, ask
from resolveflow.ask.domain.answers import AnswerOutcome
from resolveflow.ask.gaps import gap_report
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher
from resolveflow.store.database import Database

UNANSWERED = "How do I reset my VPN password?"


def _asks(db: Database, tenant: UUID) -> int:
    with db.tenant(tenant) as conn:
        row = conn.execute("SELECT count(*) AS n FROM ask_records").fetchone()
    assert row is not None
    return int(row["n"])


def test_an_answer_only_records_nothing_and_ask_still_records(db: Database) -> None:
    tenant = _tenant(db)
    service = _service(db)
    answered = answer_only(service, tenant, ALERT)
    unanswered = answer_only(service, tenant, UNANSWERED)
    assert answered.outcome is AnswerOutcome.ANSWERED and answered.citations
    assert unanswered.outcome is not AnswerOutcome.ANSWERED and not unanswered.citations
    assert answered.record_id is None and unanswered.record_id is None
    assert _asks(db, tenant) == 0
    assert gap_report(db, OnnxMiniLM(), tenant).unanswered == 0
    # The same question asked: the same answer, now recorded and counted as a gap.
    asked = ask(service, tenant, UNANSWERED)
    assert asked.record_id is not None
    assert asked.model_copy(update={"record_id": None}) == unanswered
    assert ask(service, tenant, ALERT).model_copy(update={"record_id": None}) == answered
    assert _asks(db, tenant) == 2
    assert gap_report(db, OnnxMiniLM(), tenant).unanswered == 1


def test_kept_kinds_answer_from_those_documents_only(db: Database) -> None:
    """An earlier issue that matches the question word for word is not the documentation: with
    ``kinds`` it is neither cited nor ranked."""
    issue = SourceDocument(
        source="github:acme/ops",
        external_id="7",
        kind="issue",
        title="Targets are down in kube-system",
        body=ALERT,
    )
    tenant = _tenant(db, [issue])
    searcher = Searcher(db, OnnxMiniLM())
    everything = answer_only(AskService(db, searcher), tenant, ALERT)
    docs_only = answer_only(
        AskService(db, searcher, kinds=frozenset({"doc", "runbook"})), tenant, ALERT
    )
    assert "7" in [ref.path for ref in everything.retrieved]
    assert "7" not in [ref.path for ref in docs_only.retrieved]
    assert docs_only.citations and all(c.path != "7" for c in docs_only.citations)
