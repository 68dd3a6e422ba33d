"""How the CLI prints: Rich for people, exactly one JSON document on stdout with ``--json``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

# Markup is off: everything printed may contain text from GitHub or people, and "[...]" in it
# must show as typed. Styling is done with Text objects instead.
console = Console(highlight=False, markup=False, emoji=False)
err_console = Console(stderr=True, highlight=False, markup=False, emoji=False, soft_wrap=True)


def _default(value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot serialize {type(value).__name__}")


def emit(data: Any, as_json: bool, render: Callable[[], None]) -> None:
    if as_json:
        print(json.dumps(data, default=_default, ensure_ascii=False, sort_keys=True))
    else:
        render()


# Columns holding ids: people copy them into the next command, so they are never cut or folded.
ID_COLUMNS = frozenset({"id", "run", "proposal", "execution"})
_UUID_WIDTH = 36


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    grid = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        if column in ID_COLUMNS:
            grid.add_column(column, no_wrap=True, overflow="ignore", min_width=_UUID_WIDTH)
        else:
            grid.add_column(column)
    for row in rows:
        # Cells hold data from GitHub and people: never let Rich read them as markup.
        grid.add_row(*(Text("" if cell is None else str(cell)) for cell in row))
    console.print(grid)


def targets_table(checks: dict[str, dict[str, Any]]) -> None:
    """An evaluation's figures beside their dev targets (``checks()`` of its result)."""
    table(
        "dev targets",
        ["figure", "value", "target", "met"],
        [(k, v["value"], v["target"], "yes" if v["met"] else "NO") for k, v in checks.items()],
    )


def fields(pairs: Sequence[tuple[str, Any]]) -> None:
    width = max(len(name) for name, _ in pairs)
    for name, value in pairs:
        line = Text(name.ljust(width), style="bold")
        line.append("  " + ("" if value is None else str(value)))
        console.print(line, soft_wrap=True)  # ids and digests must stay copyable


def print_proposal(view: Mapping[str, Any], *, state: str | None = None) -> None:
    """A proposal just made: its id, digest and target (and ``state`` when given), then the
    command that approves it, ready to copy."""
    rows: list[tuple[str, Any]] = [
        ("proposal", view["id"]),
        ("digest", view["digest"]),
        ("target", view["summary"]),
    ]
    if state is not None:
        rows.append(("state", state))
    rows.append(("approve with", f"resolveflow approve {view['id']} --digest {view['digest']}"))
    fields(rows)


def exact(text: str, title: str) -> Panel:
    """A panel showing ``text`` verbatim (no markup, no emoji codes): what will be posted."""
    return Panel(Text(text), title=title, title_align="left")
