"""``resolveflow eval drafts``: replies drafted from a mailbox's past mail, against the replies
really sent."""

from __future__ import annotations

from pathlib import Path

import typer

from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.cli import common
from resolveflow.cli.model_cost import cost_json, metered, render_cost
from resolveflow.cli.output import emit, fields, table, targets_table


def eval_drafts(
    mailbox: str = typer.Option(..., "--mailbox", help="The mailbox whose replies are the past."),
    past: Path = typer.Option(
        ..., "--past", help="The past mail: an mbox, a Maildir or a folder of .eml files."
    ),
    incoming: Path = typer.Option(
        ...,
        "--incoming",
        help="JSONL: id, request_eml, reply_own_words (or reply_text), optional request_role.",
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="Only the first N requests (a slow model: a sample)."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Drafts on a scratch tenant, by the configured model (or none): the chosen example's reply,
    the draft and the complete drafts against the reply really sent (token F1), beside a random
    and the best past reply; the share failing a check; the model and what it cost."""
    from resolveflow.mail.evaluation import evaluate_drafts

    with common.app() as opened:
        model = metered(opened.model())
        result, outcomes = evaluate_drafts(
            opened.db,
            build_embedder(opened.settings),
            mailbox,
            past,
            incoming,
            opened.settings.mail.bounds(),
            model,
            limit,
        )
    data = {
        **result.as_json(),
        "targets": result.checks(),
        "model": cost_json(model),
        "drafts": [o.as_json() for o in outcomes],
    }

    def render() -> None:
        fields(
            [
                ("requests", f"{result.evaluated} evaluated of {result.lines}"),
                ("past replies", result.past_replies),
                ("reused an example", f"{result.reused_share:.4f}"),
                ("written by the model", f"{result.model_share:.4f}"),
            ]
        )
        table(
            "token F1 against the reply really sent",
            ["figure", "chosen example", "random past reply", "best past reply"],
            [
                (
                    "example_reply_f1",
                    f"{result.example_reply_f1:.4f}",
                    f"{result.random_reply_f1:.4f}",
                    f"{result.best_reply_f1:.4f}",
                ),
                ("draft_f1", f"{result.draft_f1:.4f}", "", ""),
            ],
        )
        fields(
            [
                ("complete_share", f"{result.complete_share:.4f}"),
                ("failing a check", f"{result.failing_share:.4f}"),
                ("confidently_wrong", f"{result.confidently_wrong:.4f}"),
                ("  of the complete", f"{result.confidently_wrong_of_complete:.4f}"),
            ]
        )
        if result.failed_checks:
            table(
                "drafts failing each check", ["check", "drafts"], list(result.failed_checks.items())
            )
        targets_table(result.checks())
        render_cost(model)

    emit(data, as_json, render)


def add_eval_commands(eval_app: typer.Typer) -> None:
    eval_app.command("drafts")(eval_drafts)
