"""A document's Markdown as a person reads it where no Markdown renderer stands between: a
terminal, one line of a posted comment, the passage page's plain text. Pure.

Documents are stored as Markdown (``retrieval/html_text.py`` writes HTML pages that way): links
as ``[text](url)``, a literal ``*`` escaped as ``\\*``, tables as pipe rows with a cell's own
``|`` escaped. Read outside a renderer, a link is its text, an escape is the character it
escapes, and a table is rows of cells (``blocks`` finds them; each surface lays them out: aligned
columns in a terminal, an HTML table on the passage page, rows of text in a one-line quote).
Code spans and fenced blocks stay as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
# ``[text](target)`` or ``[text](target "title")``; the text may hold a code span.
_LINK = re.compile(r"\[([^\[\]\n]*)\]\(\s*<?[^\s()<>]*>?(?:\s+\"[^\"\n]*\")?\s*\)")
_ESCAPE = re.compile(r"\\([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")
_DELIMITER_CELL = re.compile(r"^:?-{3,}:?$")
_CELL_BREAK = re.compile(r"(?<!\\)\|")
COLUMN_GAP = "  "
TERMINAL_WIDTH = 80


@dataclass(frozen=True)
class Table:
    """A pipe table's rows of cells (their inline Markdown as written, ``\\|`` read as ``|``);
    ``header`` is None when the table has none (or only empty header cells)."""

    header: tuple[str, ...] | None
    rows: tuple[tuple[str, ...], ...]


Block = str | Table  # prose (any Markdown but a table) or a table


def blocks(markdown: str) -> list[Block]:
    """``markdown`` split into prose and tables, in order. A table is a run of lines that start
    with ``|`` outside a fence: with a delimiter row (``| --- |``), or of two lines or more
    that all end with ``|`` (a table cut from its header by a chunk's edge)."""
    found: list[Block] = []
    prose: list[str] = []
    rows: list[str] = []
    in_fence = False

    def flush_rows() -> None:
        table = _table(rows)
        if table is None:
            prose.extend(rows)
        else:
            if prose:
                found.append("\n".join(prose))
                prose.clear()
            found.append(table)
        rows.clear()

    for line in markdown.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and line.lstrip().startswith("|"):
            rows.append(line)
            continue
        if rows:
            flush_rows()
        prose.append(line)
    if rows:
        flush_rows()
    if prose:
        found.append("\n".join(prose))
    return found


def _table(lines: list[str]) -> Table | None:
    split = [_cells(line) for line in lines]
    delimiter = [i for i, cells in enumerate(split) if _is_delimiter(cells)]
    if not delimiter and (len(lines) < 2 or not all(s.rstrip().endswith("|") for s in lines)):
        return None
    header: tuple[str, ...] | None = None
    if delimiter and delimiter[0] == 1:
        header = split[0] if any(split[0]) else None
        split = split[2:]
    rows = tuple(cells for cells in split if not _is_delimiter(cells))
    return Table(header, rows)


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return tuple(cell.strip().replace("\\|", "|") for cell in _CELL_BREAK.split(inner))


def _is_delimiter(cells: tuple[str, ...]) -> bool:
    return bool(cells) and all(_DELIMITER_CELL.match(cell) for cell in cells)


def plain(text: str) -> str:
    """Inline Markdown read as text: a link is its text, an escaped character is itself; code
    spans are kept as written (a backslash in code is code)."""
    out: list[str] = []
    at = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_plain_prose(text[at : span.start()]))
        out.append(span.group())
        at = span.end()
    out.append(_plain_prose(text[at:]))
    return "".join(out)


def _plain_prose(text: str) -> str:
    return _ESCAPE.sub(r"\1", _LINK.sub(r"\1", text))


def plain_prose(markdown: str) -> str:
    """Prose (several lines, maybe fenced code) read as text: fenced blocks as written, every
    other line through ``plain``."""
    lines: list[str] = []
    in_fence = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            lines.append(line)
            continue
        lines.append(line if in_fence else plain(line))
    return "\n".join(lines)


def for_terminal(markdown: str, width: int = TERMINAL_WIDTH) -> str:
    """``markdown`` for a terminal ``width`` columns wide: prose through ``plain_prose``; a table
    as aligned columns under a rule when it fits, else as one clean row of ``cell | cell`` per
    line (the header first)."""
    parts = [
        _table_lines(block, width) if isinstance(block, Table) else plain_prose(block)
        for block in blocks(outdented_definitions(markdown))
    ]
    return "\n".join(parts)


def _table_lines(table: Table, width: int) -> str:
    rows = [tuple(plain(cell) for cell in row) for row in table.rows]
    header = tuple(plain(cell) for cell in table.header) if table.header else None
    every = [header, *rows] if header else rows
    columns = max((len(row) for row in every), default=0)
    sizes = [max((len(row[i]) for row in every if i < len(row)), default=0) for i in range(columns)]
    if sum(sizes) + len(COLUMN_GAP) * (columns - 1) > width:
        return "\n".join(" | ".join(row) for row in every)
    lines = [_aligned(row, sizes) for row in every]
    if header:
        lines.insert(1, COLUMN_GAP.join("-" * size for size in sizes))
    return "\n".join(lines)


def _aligned(row: tuple[str, ...], sizes: list[int]) -> str:
    return COLUMN_GAP.join(
        cell.ljust(size) for cell, size in zip(row, sizes, strict=False)
    ).rstrip()


def flat(markdown: str) -> str:
    """``markdown`` as one run of text, for a one-line quote: a table's rows as
    ``cell | cell``, joined by ``; ``; prose through ``plain_prose``. Whitespace is left to the
    caller, which makes the line."""
    parts: list[str] = []
    for block in blocks(markdown):
        if isinstance(block, Table):
            every = [block.header, *block.rows] if block.header else list(block.rows)
            parts.append("; ".join(" | ".join(plain(cell) for cell in row) for row in every))
        else:
            parts.append(plain_prose(block))
    return "\n".join(parts)


def code_spans(text: str) -> list[tuple[str, bool]]:
    """``text`` in pieces, each with whether it is a code span's content (its backticks gone)
    or the text around them, so that a surface sets code as code and escapes the rest."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for span in _CODE_SPAN.finditer(text):
        if span.start() > at:
            pieces.append((text[at : span.start()], False))
        content = span.group(2)
        # CommonMark drops one space on both sides of a span's content (`` `x` ``).
        if len(content) > 2 and content.startswith(" ") and content.endswith(" "):
            content = content[1:-1]
        pieces.append((content, True))
        at = span.end()
    if at < len(text):
        pieces.append((text[at:], False))
    return pieces


_DEFINITION = re.compile(r"^:[ \t]{1,3}(?=\S)")
_DEFINITION_INDENT = "    "


def outdented_definitions(markdown: str) -> str:
    """A definition (``term`` then ``:   its text``, as HTML's ``<dd>`` is written) as a
    paragraph of its own under its term, its indented lines outdented: CommonMark has no
    definition lists, so the text would join the term's line, and a second paragraph indented
    four spaces would render as code."""
    lines: list[str] = []
    inside = False
    for line in markdown.split("\n"):
        if _DEFINITION.match(line):
            lines += ["", _DEFINITION.sub("", line)]
            inside = True
            continue
        if inside and line.startswith(_DEFINITION_INDENT):
            lines.append(line[len(_DEFINITION_INDENT) :])
            continue
        inside = inside and not line.strip()
        lines.append(line)
    return "\n".join(lines)


def heading_text(heading: str) -> str:
    """A heading as a line of text: its code spans' backticks and its links' targets gone."""
    return "".join(piece if is_code else plain(piece) for piece, is_code in code_spans(heading))
