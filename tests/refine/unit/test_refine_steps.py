"""Refine's steps alone, on fixture documents (tests/data/refine/NAME.json is the input of step
NAME), through the function and through ``resolveflow refine step NAME`` in process; the bad
documents the command refuses in one line; the schemas. Steps that need the database (related,
runbook, changes) are in tests/refine/integration/test_refine_graph.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import resolveflow.cli as cli
from resolveflow.adapters.llm.scripted import ScriptedModel
from resolveflow.errors import InvalidInput
from resolveflow.refine import steps as refine
from resolveflow.refine.domain.document import (
    MAX_TICKET_CHARS,
    SCHEMA_VERSION,
    RefineDocument,
    RefineStep,
    Relevance,
    TicketSource,
)
from resolveflow.refine.load import TicketReaders, load, load_ticket, ticket_for
from resolveflow.refine.step_runner import parse_document, step_schema

DATA = Path(__file__).parents[2] / "data" / "refine"


def _fixture(name: str) -> RefineDocument:
    return parse_document((DATA / f"{name}.json").read_text(encoding="utf-8"))


def _cli(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    stdin: str = "",
) -> tuple[int, str, list[str]]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line.strip()]


def _step_by_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> RefineDocument:
    text = (DATA / f"{name}.json").read_text(encoding="utf-8")
    code, out, err = _cli(monkeypatch, capsys, ["refine", "step", name], text)
    assert code == 0, err
    return RefineDocument.model_validate_json(out)


def _unchanged_but(before: RefineDocument, after: RefineDocument, *fields: str) -> None:
    """A step fills its own fields and ``done``; everything else stays as it was."""
    keep = set(RefineDocument.model_fields) - {*fields, "done", "warnings"}
    assert after.model_dump(include=keep) == before.model_dump(include=keep)


# --- load -------------------------------------------------------------------------------------


def test_load_normalizes_raw_text_by_function_and_by_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    by_function = load_ticket(_fixture("load"), TicketReaders())
    by_command = _step_by_cli(monkeypatch, capsys, "load")
    assert by_function == by_command
    ticket = by_function.ticket
    assert ticket.source is TicketSource.TEXT and ticket.title == "Hi team,"
    assert "\r" not in ticket.body and "widgets/export/csv.py" in ticket.body
    assert by_function.done == [RefineStep.LOAD] and by_function.warnings == []


def test_references_are_told_apart_before_anything_is_read(tmp_path: Path) -> None:
    assert ticket_for("Acme/Widgets#12").model_dump(include={"source", "repository", "number"}) == {
        "source": TicketSource.GITHUB,
        "repository": "acme/widgets",
        "number": 12,
    }
    gitlab = ticket_for("gitlab:group/sub/ops#3")
    assert (gitlab.source, gitlab.repository, gitlab.number) == (
        TicketSource.GITLAB,
        "group/sub/ops",
        3,
    )
    assert ticket_for("-").source is TicketSource.TEXT
    assert ticket_for("notes/ticket.txt").source is TicketSource.FILE
    with pytest.raises(InvalidInput, match="not a ticket"):
        ticket_for("gitlab:nothing")


def test_a_file_ticket_and_stdin_text_load_and_a_long_ticket_is_cut_with_a_warning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mail.txt"
    path.write_text("\n\nPrinter offline\nsince Monday\x00", encoding="utf-8")
    doc = load(str(path), TicketReaders())
    assert (doc.ticket.title, doc.ticket.ref) == ("Printer offline", "mail.txt")
    assert "\x00" not in doc.ticket.body
    long = "x" * (MAX_TICKET_CHARS + 500)
    cut = load("-", TicketReaders(stdin=lambda: f"Huge paste\n{long}"))
    assert len(cut.ticket.title) + len(cut.ticket.body) == MAX_TICKET_CHARS
    assert [w.step for w in cut.warnings] == [RefineStep.LOAD]
    assert str(MAX_TICKET_CHARS) in cut.warnings[0].message
    with pytest.raises(InvalidInput, match="no such file"):
        load(str(tmp_path / "missing.txt"), TicketReaders())


# --- relevance, summarize, output (no database) -----------------------------------------------


def test_relevance_without_a_model_judges_every_retrieved_task(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _fixture("relevance")
    by_function = refine.relevance(before, None)
    assert _step_by_cli(monkeypatch, capsys, "relevance") == by_function
    assert [j.external_id for j in by_function.judgements] == ["41", "17", "9"]
    assert by_function.judgement("41").relevance is Relevance.HIGH  # type: ignore[union-attr]
    assert by_function.judgement("9").relevance is Relevance.LOW  # type: ignore[union-attr]
    assert all(j.reason and "\n" not in j.reason for j in by_function.judgements)
    assert by_function.done[-1] is RefineStep.RELEVANCE
    _unchanged_but(before, by_function, "judgements")


def test_relevance_with_a_model_keeps_only_retrieved_ids_and_falls_back_after_the_budget() -> None:
    from resolveflow.refine.domain.rules import ModelJudgements

    before = _fixture("relevance")
    good = {"judgements": [
        {"external_id": "41", "relevance": "high", "reason": "the same ValueError in write_row"},
        {"external_id": "17", "relevance": "low", "reason": "another exporter"},
        {"external_id": "9", "relevance": "low", "reason": "unrelated"}]}  # fmt: skip
    judged = refine.relevance(before, ScriptedModel([good]))
    assert judged.judgement("17").relevance is Relevance.LOW  # type: ignore[union-attr]
    assert judged.judgement("41").reason == "the same ValueError in write_row"  # type: ignore[union-attr]
    invented = {"judgements": [{"external_id": "999", "relevance": "high", "reason": "trust me"}]}
    model = ScriptedModel([invented] * refine.MAX_MODEL_ATTEMPTS)
    fallback = refine.relevance(before, model)
    assert len(model.calls) == refine.MAX_MODEL_ATTEMPTS
    assert fallback.judgements == refine.relevance(before, None).judgements
    assert any("judged by rules" in w.message for w in fallback.warnings)
    assert ModelJudgements.model_validate(good)


def test_summarize_by_function_and_by_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _fixture("summarize")
    by_function = refine.summarize(before, _default_policy())
    assert _step_by_cli(monkeypatch, capsys, "summarize") == by_function
    summary = by_function.summary
    assert summary is not None and summary.task
    assert "2.3.1" in summary.facts.versions
    assert "widgets/export/csv.py" in summary.facts.file_paths
    _unchanged_but(before, by_function, "summary")


def test_output_renders_the_markdown_by_function_and_by_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _fixture("output")
    by_function = refine.output(before)
    assert _step_by_cli(monkeypatch, capsys, "output") == by_function
    markdown = by_function.markdown or ""
    for expected in ("Export failures", "widgets/export/csv.py", "CSV export crashes"):
        assert expected in markdown
    assert by_function.done[-1] is RefineStep.OUTPUT
    _unchanged_but(before, by_function, "markdown")


def _default_policy() -> Any:
    from resolveflow.refine.domain.rules import RefinePolicy

    return RefinePolicy()


# --- bad documents and schemas ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "stdin", "match"),
    [
        ("output", "{not json", "not a refine document"),
        ("output", "", "not a refine document"),
        ("output", '{"ticket": {"source": "text", "title": "t"}, "surprise": 1}', "surprise"),
        (
            "relevance",
            json.dumps(
                {
                    "schema_version": "resolveflow.refine/0",
                    "ticket": {"source": "text", "title": "t"},
                }
            ),
            "schema_version",
        ),
        (
            "output",
            (DATA / "summarize.json").read_text(encoding="utf-8"),
            "needs steps summarize, runbook",
        ),
        ("summarize", (DATA / "output.json").read_text(encoding="utf-8"), "already been through"),
        ("nosuch", "{}", "no refine step 'nosuch'"),
    ],
    ids=["bad-json", "empty", "unknown-field", "old-version", "missing-step", "rerun", "no-step"],
)
def test_a_bad_document_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    stdin: str,
    match: str,
) -> None:
    code, out, err = _cli(monkeypatch, capsys, ["refine", "step", name], stdin)
    assert code == 2 and out == ""
    assert len(err) == 1 and err[0].startswith("error:") and match in err[0], err


def test_the_schema_is_printed_with_its_version_and_each_steps_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(monkeypatch, capsys, ["refine", "schema"])
    whole = json.loads(out)
    assert code == 0 and whole["x-schema-version"] == SCHEMA_VERSION
    assert set(whole["properties"]) == set(RefineDocument.model_fields)
    code, out, _ = _cli(monkeypatch, capsys, ["refine", "schema", "changes"])
    changes = json.loads(out)
    assert changes["x-fills"] == ["changes", "suggested_files"]
    assert changes["x-requires-done"] == ["load", "related", "relevance"]
    assert step_schema(RefineStep.LOAD)["x-requires"] == []


def test_only_the_most_similar_tasks_are_judged_and_shown_the_rest_only_vote() -> None:
    source = _fixture("relevance")
    first = source.related[0]
    source.related = [
        first.model_copy(update={"external_id": str(1000 + n), "score": 0.9 - n / 100})
        for n in range(refine.JUDGED + 3)
    ]
    judged = refine.relevance(source, None)
    assert [j.external_id for j in judged.judgements] == [
        str(1000 + n) for n in range(refine.JUDGED)
    ]
    judged.done += [RefineStep.CHANGES, RefineStep.SUMMARIZE, RefineStep.RUNBOOK]
    markdown = refine.output(judged).markdown or ""
    assert "#1009" in markdown and "#1010" not in markdown
    assert "and 3 more similar tasks, searched for the changes that fixed them" in markdown


def test_related_pages_are_judged_by_the_rules_with_or_without_a_model() -> None:
    from resolveflow.refine.domain.document import RelatedPage

    source = _fixture("relevance")
    same_bug = RelatedPage(
        source="docs",
        external_id="guide/csv.md",
        kind="doc",
        title="CSV export errors",
        score=0.3,
        cosine=0.3,
        excerpt="ValueError from widgets/export/csv.py: clean the 'n/a' cells",
    )
    other = RelatedPage(source="docs", external_id="npm/install.md", kind="doc",
                        title="Install with npm", score=0.6, cosine=0.4, excerpt="npm install")  # fmt: skip
    source.pages = [same_bug, other]
    judged = refine.relevance(source, None)
    assert [j.external_id for j in judged.page_judgements] == ["guide/csv.md", "npm/install.md"]
    assert judged.page_judgement("guide/csv.md").relevance is Relevance.HIGH  # type: ignore[union-attr]
    assert [p.external_id for p, _ in judged.relevant_pages()] == ["guide/csv.md"]
    assert judged.judgement("guide/csv.md") is None  # a page is no task
    good = {"judgements": [
        {"external_id": "41", "relevance": "high", "reason": "the same ValueError"},
        {"external_id": "17", "relevance": "low", "reason": "another exporter"},
        {"external_id": "9", "relevance": "low", "reason": "unrelated"}]}  # fmt: skip
    model = ScriptedModel([good])
    with_model = refine.relevance(source, model)
    assert with_model.page_judgements == judged.page_judgements
    assert "npm/install.md" not in str(model.calls)  # the model judges the tasks only
