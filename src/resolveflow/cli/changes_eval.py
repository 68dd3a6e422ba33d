"""``resolveflow eval changes``: does refine's context point at the right code?"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from resolveflow.bootstrap.app import search_params
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.cli import common
from resolveflow.cli.output import emit, fields, table, targets_table
from resolveflow.errors import InvalidInput
from resolveflow.refine.evaluation import evaluate_changes


def eval_changes(
    corpus: Path = typer.Option(..., "--corpus", help="Issues JSONL (the fix links' issues)."),
    fix_links: Path = typer.Option(..., "--fix-links", help="TSV: issue, pr, pr_merged."),
    repo: Path = typer.Option(..., "--repo", help="A local clone of the repository."),
    pulls: Path | None = typer.Option(
        None, "--pulls", help="Pull requests JSONL (default: pulls.jsonl beside the corpus)."
    ),
    since: str = typer.Option(
        "2023-01-01", "--since", help="Replay issues created from this date."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Suggested files against each issue's own fix, as of its creation: Hit@3, Hit@5, MRR@10."""
    try:
        start = datetime.fromisoformat(since)
    except ValueError:
        raise InvalidInput(f"--since must be a date like 2023-01-01, got {since!r}") from None
    start = start if start.tzinfo else start.replace(tzinfo=UTC)
    pulls = pulls or corpus.with_name("pulls.jsonl")
    corpora = [corpus, pulls] if pulls.is_file() else [corpus]
    with common.app() as opened:
        result = evaluate_changes(
            opened.db,
            build_embedder(opened.settings),
            search_params(opened.settings),
            corpora,
            fix_links,
            repo,
            since=start,
        )
    data = {**result.as_json(), "targets": result.checks()}

    def render() -> None:
        fields(
            [
                ("issues replayed", result.issues),
                ("skipped (fix outside src/)", result.skipped_no_src),
            ]
        )
        table(
            "rankings",
            ["ranking", "Hit@3", "Hit@5", "MRR@10"],
            [
                (name, r.as_json()["hit@3"], r.as_json()["hit@5"], r.as_json()["mrr@10"])
                for name, r in (
                    ("refine", result.refine),
                    ("votes of similar tasks only", result.votes_only),
                    ("files changed most often", result.most_changed),
                )
            ],
        )
        targets_table(result.checks())

    emit(data, as_json, render)


def add_eval_commands(eval_app: typer.Typer) -> None:
    eval_app.command("changes")(eval_changes)
