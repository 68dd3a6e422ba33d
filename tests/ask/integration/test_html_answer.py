"""An answer quoted from an HTML page (a small page in Sphinx's style, tests/data/html-answer)
reads as the page does wherever it is shown: the answer's Markdown (what the JSON API and the
MCP tool give) holds a whole table, a link as its text, the signature with a single ``*`` and
the footnote as a superscript; the CLI prints the table as columns."""

from __future__ import annotations

import re
from pathlib import Path

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.ask.answering import AskService, ask
from resolveflow.domain.reading_text import for_terminal
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.store.database import Database
from resolveflow.web.markdown import render

PAGES = Path(__file__).parents[2] / "data" / "html-answer"
QUESTION = "How do I read ledger rows as dictionaries, and which date format codes does it take?"
SIGNATURE = "class ledger.RowReader(f, fieldnames=None, dialect='plain', *args, **kwds)"


def test_an_html_answer_keeps_its_table_link_text_signature_and_footnote(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    Indexer(db, OnnxMiniLM()).upsert(tenant, read_docs_dir(PAGES, "docs"))
    answer = ask(AskService(db, Searcher(db, OnnxMiniLM()), None), tenant, QUESTION)
    assert answer.citations and answer.citations[0].path == "ledger.html", answer
    text = answer.text
    assert f"`{SIGNATURE}`" in text and "***" not in text
    assert "the date formats page" in text and "formats.html" not in text
    assert "[RFC 4180](https://www.rfc-editor.org/rfc/rfc4180)" in text  # a web link, kept
    assert "¹" in text and not re.search(r"\[1\]\(", text)
    html = str(render(text))
    assert "<th>Code</th><th>Meaning</th>" in html.replace("\n", "")
    assert "<td>Day of the month | 01 to 31.</td>" in html

    printed = for_terminal(text, 80)
    assert "Code  Meaning" in printed and "`%Y`  Year with century." in printed
    assert "RFC 4180" in printed and "rfc-editor" not in printed and "\\|" not in printed
