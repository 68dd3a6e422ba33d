"""A quoted passage in the answer's text keeps its blocks whole (``ask/text.py``): a table or a
fence starts on its own line after the heading's label, its citation follows on its own line,
and a long table is cut between rows; rendered as Markdown it is still a table."""

from __future__ import annotations

import re

from resolveflow.ask.text import cited_part, quote
from resolveflow.web.markdown import render

TABLE = "| Directive | Meaning |\n| --- | --- |\n| `%a` | Weekday as a name. |"


def test_a_table_passage_is_a_table_with_its_label_above_and_its_citation_below() -> None:
    part = cited_part("Format codes: ", TABLE, 2)
    assert part == f"Format codes:\n\n{TABLE}\n\n[2]"
    html = str(render(part))
    assert "<table>" in html and "<td>Weekday as a name.</td>" in html
    assert "<p>[2]</p>" in html


def test_a_prose_passage_keeps_its_label_and_citation_on_its_line() -> None:
    assert cited_part("Usage: ", "Call it once.", 1) == "Usage: Call it once. [1]"
    assert cited_part("", "Call it once.", 1) == "Call it once. [1]"


def test_a_long_table_is_cut_between_rows_and_still_renders_as_a_table() -> None:
    rows = "".join(f"| `%{c}` | Meaning of {c}. Another sentence. |\n" for c in "abcdefghijklmnop")
    cut = quote("| Directive | Meaning |\n| --- | --- |\n" + rows, limit=300)
    body, ellipsis = cut.rsplit("\n\n", 1)
    assert ellipsis == "…"
    assert all(re.fullmatch(r"\|.*\|", line) for line in body.splitlines())
    html = str(render(cited_part("Codes: ", cut, 1)))
    assert html.count("<tr>") == len(body.splitlines()) - 1  # every row, but the delimiter
