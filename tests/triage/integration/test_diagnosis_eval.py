"""``eval diagnoses`` (issue 30) on a tiny corpus whose answers are known: 201 duplicates 101, and
one pull request fixed 102 and then 202. The hashing embedder makes "related" mean "shares
words", so each case's known issue is the one retrieved first. With a scripted model the figures
are worked out by hand; through the command line, the printed figures, the model section and a
one-line error."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fixtures_cli import Cli, InProcessCli
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.llm.metered import MeteredModel
from resolveflow.adapters.llm.scripted import ScriptedModel
from resolveflow.llm.messages import ChatMessage
from resolveflow.retrieval.sources import read_pairs
from resolveflow.store.database import Database
from resolveflow.triage.backtest import read_fix_links
from resolveflow.triage.diagnosis_evaluation import evaluate_diagnoses
from resolveflow.triage.investigation import InvestigationConfig

pytestmark = pytest.mark.integration


def record(
    id_: str, day: int, title: str, body: str, labels: list[str], kind: str = "issue"
) -> str:
    return json.dumps(
        {
            "id": id_, "kind": kind, "title": title, "body": body,
            "created_at": f"2024-01-{day:02d}T00:00:00Z", "closed_at": None, "state": "closed",
            "labels": labels,
            "url": f"https://github.com/acme/widgets/{'pull' if kind == 'pull' else 'issues'}/{id_}",
        }
    )  # fmt: skip


def write_corpus(folder: Path) -> tuple[Path, Path, Path]:
    corpus = folder / "corpus.jsonl"
    records = [
        record("101", 1, "Printer jams during duplex printing",
               "The office printer jams whenever duplex printing is enabled.", ["bug"]),
        record("102", 2, "Login page rejects valid passwords",
               "Users cannot log in: the login page rejects valid passwords.", ["bug"]),
        record("103", 3, "Dark colours unreadable in settings", "Grey on grey.", ["ui"]),
        record("201", 10, "Duplex printing jams the office printer",
               "Since today the printer jams with duplex printing enabled.", ["bug"]),
        record("202", 11, "Login page: remember valid passwords",
               "Please let the login page remember valid passwords.", ["enhancement"]),
        record("301", 12, "Fix the login page", "Fixes #102, fixes #202", [], kind="pull"),
    ]  # fmt: skip
    corpus.write_text("\n".join(records) + "\n", encoding="utf-8")
    duplicates = folder / "duplicates.tsv"
    duplicates.write_text("id_a\tid_b\n101\t201\n", encoding="utf-8")
    links = folder / "fix_links.tsv"
    links.write_text("issue\tpr\tpr_merged\n102\t301\t1\n202\t301\t1\n", encoding="utf-8")
    return corpus, duplicates, links


def diagnosis(**changes: Any) -> dict[str, Any]:
    return {
        "root_cause": "The same fault as the cited report.",
        "severity": "low",
        "missing_info": [],
        "recommended_next_steps": ["compare with the cited report"],
        "citations": ["S1"],
        "suggested_labels": ["bug"],
        "duplicate_of": None,
        **changes,
    }


def respond(messages: Sequence[ChatMessage], kind: str) -> Any:
    """Cites the first snippet (the known issue); names it a duplicate for the printer report;
    rates the login request high (not sane for a request) so that the risk gate escalates it."""
    if kind == "text":
        return "The cited report describes the same fault."
    text = messages[-1].content
    if "remember valid passwords" in text:
        return diagnosis(severity="high")
    return diagnosis(duplicate_of="S1")


def test_a_scripted_model_s_diagnoses_measured_by_hand(db: Database, tmp_path: Path) -> None:
    corpus, duplicates, links = write_corpus(tmp_path)
    model = MeteredModel(ScriptedModel(responder=respond))
    result, outcomes = evaluate_diagnoses(
        db,
        HashingEmbedder(),
        [corpus],
        duplicates=read_pairs(duplicates),
        fix_links=read_fix_links(links),
        model=model,
        config=InvestigationConfig(relevance_floor=0.0),
    )
    by_id = {o.id: o for o in outcomes}
    assert list(by_id) == ["201", "202"]  # oldest first; 101, 102 have nothing earlier
    assert by_id["201"].known_retrieved and by_id["201"].cited_known
    assert by_id["201"].duplicate_named and by_id["201"].outcome == "approve"
    assert by_id["202"].cited_known and by_id["202"].severity == "high"
    assert by_id["202"].outcome == "escalate" and "risk" in by_id["202"].failed_gates
    assert by_id["202"].request_like and not by_id["201"].request_like
    figures = result.as_json()
    assert {k: figures[k] for k in ("cases", "duplicate_cases", "escalated", "model_wrote",
                                     "cited_known", "duplicate_named", "severity_sane")} == {
        "cases": 2, "duplicate_cases": 1, "escalated": 0.5, "model_wrote": 1.0,
        "cited_known": 1.0, "duplicate_named": 1.0, "severity_sane": 0.0,
    }  # fmt: skip
    diagnoses = next(p for p in model.cost().purposes if p.purpose.value == "diagnosis")
    assert diagnoses.calls == 2 and diagnoses.failed == {}


def test_without_a_model_the_comment_cites_what_retrieval_found(
    db: Database, tmp_path: Path
) -> None:
    corpus, duplicates, links = write_corpus(tmp_path)
    result, outcomes = evaluate_diagnoses(
        db, HashingEmbedder(), [corpus], duplicates=read_pairs(duplicates),
        fix_links=read_fix_links(links), model=None, config=InvestigationConfig(relevance_floor=0.0),
        limit=1,
    )  # fmt: skip
    assert [o.id for o in outcomes] == ["201"]
    assert result.model_wrote == 0.0 and result.severity == {"none": 1}


def test_eval_diagnoses_through_the_command_line(cli: Cli, tmp_path: Path) -> None:
    corpus, duplicates, links = write_corpus(tmp_path)
    script = tmp_path / "script.json"
    # One answer per request in order: 201's diagnosis and critique, then 202's.
    script.write_text(
        json.dumps(
            [diagnosis(duplicate_of="S1"), "Same fault.", diagnosis(severity="high"), "Same."]
        ),
        encoding="utf-8",
    )
    env = {**cli.env, "RESOLVEFLOW_EMBEDDER": "fake", "COLUMNS": "80"}
    scripted = InProcessCli(
        {
            **env,
            "RESOLVEFLOW_MODEL_PROVIDER": "scripted",
            "RESOLVEFLOW_SCRIPTED_MODEL_FILE": str(script),
        }
    )
    args = ("eval", "diagnoses", "--corpus", str(corpus), "--duplicates", str(duplicates),
            "--fix-links", str(links))  # fmt: skip
    printed = scripted.run(*args).stdout
    for line in ("issues diagnosed      2 (1 duplicates)", "known issue cited     100.0%",
                 "severity sane         0.0% of 1 requests not high", "model calls",
                 "model       scripted/gpt-4o-mini", "diagnosis"):  # fmt: skip
        assert line in printed, printed
    assert max(len(line) for line in printed.splitlines()) <= 80, printed
    none = InProcessCli(env)
    data = none.json(*args, "--items")
    assert (data["model"]["provider"], data["model"]["calls"], data["model"]["purposes"]) == (
        "none",
        0,
        [],
    )
    assert [i["id"] for i in data["items"]] == ["201", "202"]
    none.fails(
        "eval", "diagnoses", "--corpus", str(corpus), match="give --duplicates or --fix-links"
    )
    none.fails(*args[:4], "--duplicates", str(tmp_path / "none.tsv"), match="cannot read")
