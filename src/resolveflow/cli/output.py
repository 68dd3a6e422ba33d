"""How the CLI prints: Rich for people, exactly one JSON document on stdout with ``--json``.

Tables fit the terminal: a column's width is chosen here, not by Rich (which, short of room,
narrows every column evenly and left ids cut and headers as ``classi…``). An id column is never
wrapped or cut, a header never shorter than its words, free text wraps; when the ids and the
narrowest readable columns do not fit side by side, each row is printed as a block of
``header  value`` lines instead (issue 29).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from rich.cells import cell_len
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from resolveflow.cli import plain

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


@dataclass(frozen=True)
class Column:
    """A table's column: ``whole`` for ids, which people copy into the next command, so they are
    never wrapped or cut; any other column wraps its text at spaces."""

    header: str
    whole: bool = False


def whole(header: str) -> Column:
    return Column(header, whole=True)


# Free text wraps in a column at least this wide (or as wide as its longest line, when shorter);
# a short phrase ("waiting for a decision") may wrap down to about half its length, never
# inside a word.
TEXT_MIN = 24
_FRAME = 3  # each column's border and the space on either side of its text (plus one border)


def _width(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def _least(column: Column, values: Sequence[str], natural: int) -> int:
    """The narrowest a column may be (``natural``: its widest line): an id's full width; a
    header's; text's as above."""
    if column.whole:
        return natural
    if natural > TEXT_MIN:
        return max(_width(column.header), TEXT_MIN)
    words = max([_longest_word(column.header), *map(_longest_word, values)])
    return max(_width(column.header), words, (natural + 1) // 2)


def _widths(
    columns: Sequence[Column], cells: Sequence[Sequence[str]], room: int
) -> list[int] | None:
    """Each column's text width, or None when the table cannot fit in ``room`` cells."""
    values = [[row[i] for row in cells] for i in range(len(columns))]
    natural = [
        max([_width(c.header), *map(_width, v)]) for c, v in zip(columns, values, strict=True)
    ]
    widths = [_least(c, v, n) for c, v, n in zip(columns, values, natural, strict=True)]
    spare = room - _FRAME * len(columns) - 1 - sum(widths)
    if spare < 0:
        return None
    # The columns that lack least are made whole first: fewer of them wrap.
    for i in sorted(range(len(widths)), key=lambda i: natural[i] - widths[i]):
        given = min(spare, natural[i] - widths[i])
        widths[i] += given
        spare -= given
    return widths


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def table(title: str, columns: Sequence[str | Column], rows: Sequence[Sequence[Any]]) -> None:
    """Rows under ``columns`` (a plain header is a column of free text), fitted to the terminal."""
    shaped = [c if isinstance(c, Column) else Column(c) for c in columns]
    cells = [[_cell(value) for value in row] for row in rows]
    widths = _widths(shaped, cells, console.width)
    if widths is None:
        _blocks(title, shaped, cells)
        return
    grid = Table(title=title, title_justify="left", show_lines=False)
    for column, width in zip(shaped, widths, strict=True):
        grid.add_column(column.header, width=width, no_wrap=column.whole, overflow="fold")
    for row in cells:
        # Cells hold data from GitHub and people: never let Rich read them as markup.
        grid.add_row(*(Text(cell) for cell in row))
    console.print(grid)


def _blocks(title: str, columns: Sequence[Column], cells: Sequence[Sequence[str]]) -> None:
    """A table too wide for the terminal: each row as ``header  value`` lines, a blank line
    between rows. Ids stay on one line (the terminal wraps them, if it must, without a break
    in the copied text); free text wraps under its value."""
    console.print(Text(title, style="table.title"))
    width = max(_width(c.header) for c in columns)
    for number, row in enumerate(cells):
        if number:
            console.print()
        for column, cell in zip(columns, row, strict=True):
            field(column.header, cell or "–", width, wrap=not column.whole)


def field(name: str, value: str, width: int, *, wrap: bool) -> None:
    """One ``name  value`` line: ``wrap`` folds the value under itself, else it stays one line."""
    label = Text(name.ljust(width), style="bold")
    if not wrap:
        console.print(label + Text("  " + value), soft_wrap=True)
        return
    line = Table.grid(padding=(0, 2, 0, 0))
    line.add_column(width=width, no_wrap=True)
    line.add_column(overflow="fold")
    line.add_row(label, Text(value))
    console.print(line)


def timeline(events: Sequence[Mapping[str, Any]]) -> None:
    """An audit trail: when, who, and what happened in words (as the pages' timelines)."""
    table(
        "timeline",
        ["at", "actor", "event"],
        [
            (plain.moment(e["at"]), plain.actor(e["actor"]), plain.words(e["event"], "AuditEvent"))
            for e in events
        ],
    )


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
