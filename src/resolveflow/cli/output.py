"""How the CLI prints: Rich for people, exactly one JSON document on stdout with ``--json``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from rich.console import Console
from rich.table import Table

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


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


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    grid = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        grid.add_column(column)
    for row in rows:
        grid.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(grid)


def fields(pairs: Sequence[tuple[str, Any]]) -> None:
    width = max(len(name) for name, _ in pairs)
    for name, value in pairs:
        console.print(f"[bold]{name.ljust(width)}[/bold]  {'' if value is None else value}")
