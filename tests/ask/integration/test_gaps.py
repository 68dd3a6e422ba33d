"""The coverage-gap report (issue 31): the questions the documents did not answer, grouped by
topic, on the tiny runbook corpus and (data tier) on the runbook dev questions; an issue for the
biggest gap proposed through the gate, waiting for a person, counted as a suggestion."""

from __future__ import annotations

import json
import os
from pathlib import Path
from uuid import UUID

import pytest
from test_ask import ALERT, _service, _tenant

from fixtures_cli import InProcessCli
from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.ask.answering import ask
from resolveflow.ask.domain.answers import AnswerOutcome
from resolveflow.ask.gaps import gap_report, propose_gap
from resolveflow.domain.records import Role
from resolveflow.domain.vocabulary import SuggestionKind
from resolveflow.errors import InvalidInput, NotFound, PolicyViolation
from resolveflow.gate import proposals
from resolveflow.gate.domain.actions import parse_action
from resolveflow.gate.domain.suggestions import suggestion_kind
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.store.database import Database

VPN = (
    "How do I reset my VPN password?",
    "I forgot my VPN password, how can I reset it?",
    "VPN password reset does not work for me",
)
OTHER = ("Which wine goes well with grilled salmon?",)


def _ask_all(db: Database, tenant: UUID, questions: tuple[str, ...]) -> list[AnswerOutcome]:
    service = _service(db)
    return [ask(service, tenant, question).outcome for question in questions]


def test_unanswered_questions_are_grouped_by_topic_the_biggest_first(db: Database) -> None:
    tenant = _tenant(db)
    outcomes = _ask_all(db, tenant, (*VPN, ALERT, *OTHER))
    assert outcomes[3] is AnswerOutcome.ANSWERED  # the alert: not a gap
    report = gap_report(db, OnnxMiniLM(), tenant)
    assert report.unanswered == 4
    assert sum(t.count for t in report.topics) == 4
    biggest = report.topics[0]
    assert biggest.count == 3 and "VPN" in biggest.representative
    assert set(biggest.examples) == set(VPN)
    assert biggest.abstained + biggest.tentative == 3
    assert [t.examples for t in report.topics[1:]] == [OTHER]
    with pytest.raises(InvalidInput, match="days"):
        gap_report(db, OnnxMiniLM(), tenant, days=0)


def test_an_issue_for_the_biggest_gap_waits_for_a_person(db: Database) -> None:
    tenant = _tenant(db)
    rita = authenticate(db, admin.add_principal(db, "acme", "rita", [Role.REQUESTER]).token)
    with pytest.raises(NotFound, match="no question went unanswered"):
        propose_gap(db, rita, "acme/docs", gap_report(db, OnnxMiniLM(), tenant))
    _ask_all(db, tenant, VPN)
    report = gap_report(db, OnnxMiniLM(), tenant)
    with pytest.raises(PolicyViolation):  # not on the tenant's allowlist
        propose_gap(db, rita, "acme/docs", report)
    admin.add_repository(db, "acme", "acme/docs")
    topic, proposal = propose_gap(db, rita, "acme/docs", report)
    action = parse_action(proposal.action)
    assert action.kind == "github.issue_create" and action.repository == "acme/docs"
    assert action.title == f"Docs do not answer: {topic.representative}"
    assert all(question in action.body for question in VPN)
    view = proposals.describe(db, rita, proposal.id)
    assert view["decision"] is None and view["execution"] is None
    assert view["like_this"]["kind"] == "new_issue"  # a suggestion, counted when decided
    assert suggestion_kind(action, "principal", "coverage gap", None) is SuggestionKind.NEW_ISSUE


def test_the_gap_report_on_the_runbook_dev_questions(db: Database, shared_data: Path) -> None:
    runbooks = shared_data / "runbooks"
    tenant = admin.add_tenant(db, "ops").id
    Indexer(db, OnnxMiniLM()).upsert(tenant, list(read_docs_dir(runbooks / "corpus", "docs")))
    lines = (runbooks / "questions-dev.jsonl").read_text("utf-8").splitlines()
    questions = tuple(json.loads(line)["question"] for line in lines if line.strip())
    outcomes = _ask_all(db, tenant, questions)
    report = gap_report(db, OnnxMiniLM(), tenant)
    unanswered = sum(1 for o in outcomes if o is not AnswerOutcome.ANSWERED)
    assert report.unanswered == unanswered > 0
    assert sum(t.count for t in report.topics) == unanswered
    counts = [t.count for t in report.topics]
    assert counts == sorted(counts, reverse=True)
    assert len(report.topics) < unanswered  # some questions share a topic
    print("gap report on the runbook dev questions:", json.dumps(report.as_json())[:2000])


def test_the_cli_prints_the_topics_and_proposes(
    db: Database, database_url: str, tmp_path: Path
) -> None:
    tenant = _tenant(db)
    rita = admin.add_principal(db, "acme", "rita", [Role.REQUESTER]).token
    admin.add_repository(db, "acme", "acme/docs")
    _ask_all(db, tenant, (*VPN, *OTHER))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(RESOLVEFLOW_DATABASE_URL=database_url, RESOLVEFLOW_HOME=str(tmp_path), COLUMNS="120")
    cli = InProcessCli(env)
    data = cli.json("gaps", "--tenant", "acme")
    assert data["unanswered"] == 4 and data["topics"][0]["count"] == 3
    assert data["proposal"] is None
    printed = cli.run("gaps", "--tenant", "acme").stdout
    assert "questions not answered in the last 90 days: 4, by topic" in printed
    proposed = cli.json("gaps", "--propose", "acme/docs", token=rita)["proposal"]
    shown = proposals.describe(db, authenticate(db, rita), UUID(proposed["id"]))
    assert shown["digest"] == proposed["digest"] and shown["kind"] == "github.issue_create"
    refused = cli.run("gaps", "--propose", "acme/other", token=rita, ok=False)
    assert refused.returncode != 0 and "not on this tenant's allowlist" in refused.stderr
    assert "Traceback" not in refused.stderr
