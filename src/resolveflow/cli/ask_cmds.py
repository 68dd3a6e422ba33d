"""``resolveflow ask`` and ``resolveflow eval answers``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from resolveflow.accounts import admin
from resolveflow.ask.answering import AskService
from resolveflow.ask.answering import ask as ask_question
from resolveflow.ask.domain.answers import Answer, AnswerOutcome
from resolveflow.ask.evaluation import TARGET_SETS, evaluate_answers, misses
from resolveflow.bootstrap.app import search_params
from resolveflow.bootstrap.embedder import build_embedder, build_reranker
from resolveflow.cli import common
from resolveflow.cli.model_cost import cost_json, metered, render_cost
from resolveflow.cli.output import console, emit, fields, table, targets_table
from resolveflow.domain.reading_text import for_terminal, heading_text
from resolveflow.errors import InvalidInput


def ask(
    question: str = typer.Argument(..., help="The question, e.g. an alert's summary."),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Answer a question from the tenant's documents, with citations, or say there is no source."""
    with common.app() as opened:
        tenant_id = admin.find_tenant(opened.db, common.tenant_name(opened, tenant)).id
        service = AskService(
            opened.db, opened.searcher(), opened.model(), reranker=opened.reranker()
        )
        answer = ask_question(service, tenant_id, question)
    emit(answer.model_dump(mode="json"), as_json, lambda: _render(answer))


def _render(answer: Answer) -> None:
    # Links as their text, escapes undone, tables as columns at the terminal's width.
    console.print(Text(for_terminal(answer.text, console.width)), soft_wrap=True)
    if answer.citations:
        console.print()
        for c in answer.citations:
            where = c.url or c.path
            words = heading_text(c.section)
            section = f" § {words}" if words and words != c.title else ""
            console.print(Text(f"[{c.n}] {c.title}{section} ({where}, chunk {c.chunk_id})"))
    if answer.related and answer.outcome is AnswerOutcome.TENTATIVE:
        table(
            "may help",
            ["#", "title", "path", "why"],
            [(i, d.title, d.url or d.path, d.why) for i, d in enumerate(answer.related, start=1)],
        )
    elif answer.related:
        table(
            "related, not an answer",
            ["#", "title", "path"],
            [(i, d.title, d.url or d.path) for i, d in enumerate(answer.related, start=1)],
        )


NO_LABELS = "no passage labels"


def eval_answers(
    corpus: Path = typer.Option(
        ...,
        "--corpus",
        help="A folder of documents, as `index docs` reads it: Markdown, text, HTML and PDF.",
    ),
    questions: Path = typer.Option(
        ...,
        "--questions",
        help="JSONL: id, question, answers (paths relative to the corpus; [] when none answers) "
        "and optionally passage (strings the answering passage holds).",
    ),
    targets: str = typer.Option(
        "general",
        "--targets",
        help="Which dev targets to print beside the figures: general (any corpus), runbooks, "
        "or passages (a reference beside a long guide, labelled by passage). Passage right's "
        "target is printed on any corpus with passage labels.",
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="Only the first N questions (a slow model: a sample)."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Answers on a scratch tenant: MRR@5, R@5, answered / tentative / abstained, cited right,
    abstention precision and recall, and with passage labels passage right and confidently
    wrong, each beside its target; with a model configured, the model and what it cost (calls,
    tokens, seconds). The index is kept for the next run on the same files."""
    if targets not in TARGET_SETS:
        raise InvalidInput(f"--targets: expected one of {', '.join(TARGET_SETS)}, got {targets!r}")
    with common.app() as opened:
        model = metered(opened.model())
        result, outcomes = evaluate_answers(
            opened.db,
            build_embedder(opened.settings),
            corpus,
            questions,
            search_params(opened.settings),
            model,
            limit,
            build_reranker(opened.settings),
        )
    missed = misses(outcomes)
    checks = result.checks(TARGET_SETS[targets])
    data = {
        **result.as_json(),
        "targets": checks,
        "model": cost_json(model),
        "misses": [m.as_json() for m in missed],
    }

    def render() -> None:
        shown = {k: NO_LABELS if v is None else v for k, v in result.as_json().items()}
        fields([(k.replace("_", " "), v) for k, v in shown.items()])
        targets_table(
            {
                k: {**v, "value": NO_LABELS if v["value"] is None else v["value"]}
                for k, v in checks.items()
            }
        )
        render_cost(model)
        if missed:
            table(
                "misses",
                ["question", "what", "rank", "right", "first", "quoted instead"],
                [
                    (m.id, m.kind.value, m.rank, ", ".join(m.right), m.first, m.quoted)
                    for m in missed
                ],
            )

    emit(data, as_json, render)


def add_eval_commands(eval_app: typer.Typer) -> None:
    eval_app.command("answers")(eval_answers)
