"""``resolveflow ask`` at 80 columns on an answer from an HTML page (tests/data/html-answer):
the table as aligned columns, links as their words, the signature with a single ``*``."""

from __future__ import annotations

from pathlib import Path

from fixtures_cli import Cli, _setup

PAGES = Path(__file__).parents[2] / "data" / "html-answer"


def test_ask_prints_an_html_answer_s_table_as_columns_and_links_as_words(cli: Cli) -> None:
    cli.env.update(RESOLVEFLOW_EMBEDDER="local", COLUMNS="80")
    _, alex = _setup(cli)
    cli.run("index", "docs", str(PAGES))
    printed = cli.run(
        "ask",
        "How do I read ledger rows as dictionaries, and which date format codes does it take?",
        token=alex,
    ).stdout
    lines = printed.splitlines()
    assert "Code  Meaning" in lines and "`%d`  Day of the month | 01 to 31." in lines
    assert "formats.html" not in printed and "rfc-editor" not in printed
    assert "the file layout follows RFC 4180).¹" in printed
    assert "*args, **kwds)`" in printed and "***" not in printed and "\\|" not in printed
    # The definition quoted is named once, after its page's title (never the title again).
    assert "[1] ledger — Reading ledger files § ledger.RowReader (ledger.html" in printed
