"""A quoted passage in the answer's text keeps its blocks whole (``ask/text.py``): a table or a
fence starts on its own line after the heading's label, its citation follows on its own line,
and a long table is cut between rows; rendered as Markdown it is still a table."""

from __future__ import annotations

import re

from resolveflow.ask.text import cited_part, quote
from resolveflow.web.ask_pages import _document_markdown, reading_html
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


def test_on_the_web_a_link_is_its_words_and_only_an_honest_web_link_is_followable() -> None:
    html = str(
        _document_markdown(
            "See [zipfile](zipfile.html#module-zipfile), [RFC 4180](https://x.example/rfc), "
            "[docs.acme.example](https://evil.example/steal) and [go](javascript:alert(1))."
        )
    )
    assert "zipfile.html" not in html and "<p>See zipfile, " in html
    assert re.search(r'<a href="https://x.example/rfc"[^>]*title="https://x.example/rfc"', html)
    # Words that look like another address are text beside the real one, never a link.
    assert 'docs.acme.example <code class="address">https://evil.example/steal</code>' in html
    assert not re.search(r'href="\s*(javascript|https://evil)', html)


def test_the_passage_page_renders_a_chunk_s_table_even_cut_from_its_header() -> None:
    chunk = "…the codes:\n\n| `%m` | Month. |\n| `%d` | Day \\| of <b>month</b>. |\n\nMore *text*."
    html = str(reading_html(chunk))
    assert (
        '<table class="doc-table"><tbody><tr><td><code>%m</code></td><td>Month.</td></tr>'
        "<tr><td><code>%d</code></td><td>Day | of &lt;b&gt;month&lt;/b&gt;.</td></tr>"
        "</tbody></table>"
    ) in html
    assert "<em>text</em>" in html
    definition = str(reading_html("`f(*args, **kwds)`\n:   Reads it.\n\n    Second paragraph."))
    assert "<p><code>f(*args, **kwds)</code></p>" in definition
    assert "<p>Second paragraph.</p>" in definition and "<pre>" not in definition
