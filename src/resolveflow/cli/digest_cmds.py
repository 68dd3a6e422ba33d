"""``resolveflow digest``: the suggestions kept out of the inbox (issue 31, part 3,
``gate/quiet.py``), per day, place and kind, and the kinds that went there by themselves."""

from __future__ import annotations

import typer

from resolveflow.cli import common, plain
from resolveflow.cli.output import console, emit, table
from resolveflow.cli.output import whole as whole_column
from resolveflow.gate import quiet
from resolveflow.gate.domain.quiet import DigestWhy
from resolveflow.gate.quiet import Notice


def digest(
    day: str | None = typer.Option(
        None, "--day", metavar="YYYY-MM-DD", help="One day (UTC); else the last 7 days."
    ),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """The daily digest: suggestions kept out of the inbox, per day, place and kind.

    Each is a proposal like any other: open it (``proposals show ID``), then approve or reject
    it by its digest."""
    with common.app() as opened:
        principal = common.principal(opened, token)
        found = quiet.digest(opened.db, principal, quiet.parse_day(day))
        moved = quiet.notices(opened.db, principal, opened.quiet())
    data = {**found.as_json(), "moved": [notice.as_json() for notice in moved]}

    def render() -> None:
        say_moved(moved)
        rows = [
            (
                d.day.isoformat(),
                g.place,
                plain.words(g.kind),
                str(item.proposal_id),
                item.summary if item.summary is not None else "an email (no grant to read it)",
                "policy file"
                if item.why is DigestWhy.POLICY
                else f"acceptance {item.approved} of {item.decisions}",
                item.state.replace("_", " "),
            )
            for d in found.days
            for g in d.groups
            for item in g.items
        ]
        span = found.first.isoformat()
        if found.last != found.first:
            span += f" to {found.last.isoformat()}"
        table(
            f"digest, {span} (UTC)",
            ["day", "where", "suggestion", whole_column("proposal"), "what", "why here", "state"],
            rows,
        )

    emit(data, as_json, render)


def say_moved(moved: list[Notice]) -> None:
    """The inbox's lines for kinds that went to the digest by themselves (``proposals list``
    prints them too)."""
    for notice in moved:
        console.print(f"{notice.text} See: resolveflow digest", soft_wrap=True)
