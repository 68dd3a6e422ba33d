"""``resolveflow decisions``: the team's decisions as examples, and how each kind of suggestion
fared per repository (issue 31, ``gate/feedback.py``)."""

from __future__ import annotations

import typer

from resolveflow.cli import common, plain
from resolveflow.cli.output import emit, table
from resolveflow.domain.vocabulary import SuggestionKind
from resolveflow.gate import feedback

decisions_app = typer.Typer(
    help="The team's decisions on what ResolveFlow suggested, and how each kind fared.",
    no_args_is_help=True,
)
Days = typer.Option(
    feedback.DAYS, "--days", min=1, max=feedback.MAX_DAYS, help="Decisions of these last days."
)


def detail_words(kind: SuggestionKind, detail: str) -> str:
    """A rule in the pages' words; a label as it is."""
    return plain.words(detail, "rule") if kind is SuggestionKind.RULE_COMMENT else detail or "–"


@decisions_app.command("acceptance")
def acceptance(
    last: int = typer.Option(
        feedback.LAST,
        "--last",
        min=1,
        max=feedback.MAX_DECISIONS,
        help="Read each figure over this many latest decisions.",
    ),
    days: int = Days,
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Per repository and kind of suggestion (each label, each rule): how many of its latest
    decisions approved it as proposed, after an edit, or rejected it."""
    with common.app() as opened:
        report = feedback.acceptance_report(
            opened.db, common.principal(opened, token), last=last, days=days
        )
    data = report.as_json()

    def render() -> None:
        table(
            f"acceptance over each one's last {last} decisions of the last {days} days",
            [
                "where",
                "suggestion",
                "label or rule",
                "decisions",
                "approved",
                "edited",
                "rejected",
                "accepted",
            ],
            [
                (
                    f.place,
                    plain.words(f.kind),
                    detail_words(f.kind, f.detail),
                    f.decisions,
                    f.approved,
                    f.edited,
                    f.rejected,
                    f"{f.rate:.0%}",
                )
                for f in report.figures
            ],
        )

    emit(data, as_json, render)


@decisions_app.command("list")
def list_(
    days: int = Days,
    limit: int = typer.Option(50, "--limit", min=1, max=1000, help="Show this many, newest first."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Each decision on a suggestion, newest first: what was suggested, how it was decided, what
    an edit changed and why a rejection was made."""
    with common.app() as opened:
        found = feedback.decision_examples(opened.db, common.principal(opened, token), days)
    shown = found[:limit]
    emit(
        [e.as_json() for e in shown],
        as_json,
        lambda: table(
            "decisions on suggestions",
            ["decided", "where", "suggestion", "label or rule", "outcome", "changed", "reason"],
            [
                (
                    plain.moment(e.decided_at),
                    e.place,
                    plain.words(e.kind),
                    detail_words(e.kind, e.detail),
                    plain.words(e.outcome),
                    "; ".join(e.changes) or "–",
                    e.reason or "–",
                )
                for e in shown
            ],
        ),
    )
