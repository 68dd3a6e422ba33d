"""``resolveflow plan "QUESTION"``: the bounded planner with the configured model provider."""

from __future__ import annotations

import json

import typer
from rich.text import Text

from resolveflow.ask.domain.planner import PlanAnswer
from resolveflow.ask.issues_prepare import IssueTargets
from resolveflow.ask.planner import PlannerService
from resolveflow.ask.planner import plan as plan_question
from resolveflow.cli import common
from resolveflow.cli.output import console, emit, table
from resolveflow.errors import ConfigError


def plan(
    question: str = typer.Argument(..., help="The question, e.g. an alert's summary."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Plan with a model: search the tenant's documents, maybe prepare an issue, answer."""
    with common.app() as opened:
        actor = common.principal(opened, token)
        model = opened.model()
        if model is None:
            raise ConfigError(
                "planning needs a model provider: set RESOLVEFLOW_MODEL_PROVIDER (openai)"
            )
        targets = IssueTargets(policy=opened.policy, gitlab=opened.gitlab())
        service = PlannerService(opened.db, opened.searcher(), model, targets)
        answer = plan_question(service, actor, question)
    emit(answer.model_dump(mode="json"), as_json, lambda: _render(answer))


def _render(answer: PlanAnswer) -> None:
    console.print(Text(answer.text), soft_wrap=True)
    for c in answer.citations:
        console.print(Text(f"[{c.n}] {c.title} ({c.url or c.path}, chunk {c.chunk_id})"))
    for p in answer.proposals:
        console.print(Text(f"proposed, awaiting a person's approval: {p.summary}  {p.id}"))
    table(
        f"steps (ended: {answer.stopped})",
        ["#", "tool", "arguments", "outcome", "detail"],
        [
            (s.n, s.tool, json.dumps(s.arguments, ensure_ascii=False)[:80], s.outcome, s.detail)
            for s in answer.trace
        ],
    )
