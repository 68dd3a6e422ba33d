"""Loaders: HTML (an exported wiki page), PDF (pages kept), Markdown and text into one normalized
document; every bad file is one clear ``UnreadableDocument`` line; a folder goes on past them."""

from __future__ import annotations

import io
import time

import pytest

from document_bombs import nested_html, pdf_bomb, surrogate_pdf
from documents_data import DOCUMENTS, MANUAL_PAGES, encrypted, tiny_pdf
from resolveflow.retrieval import loaders
from resolveflow.retrieval.chunking import chunk_document
from resolveflow.retrieval.loaders import (
    DocumentTooLarge,
    TextLimits,
    UnreadableDocument,
    UnsupportedMediaType,
    load_document,
    media_type_for,
    page_of,
)

MAX = 1_000_000


def load(path: str, data: bytes, media_type: str | None = None) -> loaders.LoadedDocument:
    return load_document(path, data, media_type or media_type_for(path), max_bytes=MAX)


def test_wiki_html_keeps_structure_and_drops_page_chrome() -> None:
    doc = load("wiki/disk-pressure.html", (DOCUMENTS / "wiki/disk-pressure.html").read_bytes())
    assert doc.title == "Disk pressure on build agents"
    assert doc.media_type == "text/html"
    body = doc.body
    for gone in ("trackPageView", "font-family", "Navigation menu", "header banner", "Footer"):
        assert gone not in body
    assert "# Disk pressure on build agents" in body
    assert "- Open the agent's dashboard." in body  # a list stays a list
    assert "`scratch_volume_used_bytes`" in body  # no backslash escapes inside words
    assert "```\nsudo agentctl purge-workspaces --older-than 7d\n```" in body
    assert "| 90 % | purge workspaces |" in body  # a table stays readable
    assert "Unclosed paragraph" in body  # broken markup still gives its text
    assert [(s.heading, s.level) for s in doc.sections] == [
        ("Disk pressure on build agents", 1),
        ("Check", 2),
        ("Fix", 2),
    ]


def test_links_to_the_same_page_keep_their_text_and_permalink_marks_go() -> None:
    # mdBook writes a heading as its own anchor; Sphinx adds a pilcrow link after it.
    page = (
        b'<main><h1><a class="header" href="#reading-a-file">Reading a File</a></h1>'
        b'<h2>Usage<a class="headerlink" href="#usage" title="Link">\xc2\xb6</a></h2>'
        b'<p>See <a href="#usage">the usage</a> and <a href="https://doc.example/x">the guide</a>.'
        b"</p></main>"
    )
    doc = load("book/ch12.html", page)
    assert doc.title == "Reading a File"
    assert "# Reading a File\n" in doc.body and "## Usage\n" in doc.body
    assert "See the usage and [the guide](https://doc.example/x)." in doc.body
    assert "#reading-a-file" not in doc.body and "\u00b6" not in doc.body
    assert [s.heading for s in doc.sections] == ["Reading a File", "Usage"]


@pytest.mark.parametrize(
    ("page", "text"),
    [
        (b'<h1><a href="#a"><a href="#b">\xc2\xb6</a></a>Title</h1>', "# Title"),
        (b'<a href="#"><a href="#"></a></a><p>x</p>', "x"),
        (b'<p><a href="#a">out<a href="#b">in</a></a> end</p>', "outin end"),
    ],
)
def test_links_nested_in_broken_markup_are_read_without_error(page: bytes, text: str) -> None:
    assert load("nested.html", page).body.strip() == text


def test_html_title_falls_back_to_the_title_element_then_the_file_name() -> None:
    page = b"<html><head><title>Wiki : Restarts</title></head><body><p>Restart it.</p></body>"
    assert load("a.html", page).title == "Wiki : Restarts"
    assert load("on-call_rota.htm", b"<p>Ask Sam.</p>").title == "on call rota"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"<html><script>alert(1)</script><nav>menu</nav></html>", "no text found"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary content"),
    ],
)
def test_html_without_text_is_unreadable(data: bytes, reason: str) -> None:
    with pytest.raises(UnreadableDocument, match=reason):
        load("page.html", data)


def test_pdf_text_keeps_its_pages() -> None:
    doc = load("manual.pdf", (DOCUMENTS / "manual.pdf").read_bytes())
    assert doc.title == "Storage appliance"  # from the PDF's metadata
    assert [(s.heading, s.page) for s in doc.sections] == [("Page 1", 1), ("Page 2", 2)]
    assert "Replacing a failed quorum disk takes ten minutes." in doc.sections[0].text
    assert "thirty seconds" in doc.sections[1].text
    untitled = load("appliance.pdf", tiny_pdf(MANUAL_PAGES))
    assert untitled.title == "Storage appliance manual"  # the first line of page one


def test_page_of_a_chunk_says_which_page_it_starts_on() -> None:
    pages = [
        [f"Page {n} line {i} about cooling fans and airflow." for i in range(30)] for n in (1, 2, 3)
    ]
    doc = load("fans.pdf", tiny_pdf(pages))
    chunks = chunk_document(doc.title, doc.body)
    assert len(chunks) >= 3
    found = [page_of(doc.body, chunk.text) for chunk in chunks]
    assert found[0] == 1 and found[-1] == 3 and found == sorted(found)
    assert page_of("no marks here", "no marks") is None


def test_an_encrypted_pdf_is_one_clear_line_unless_its_password_is_empty() -> None:
    with pytest.raises(UnreadableDocument, match=r"^locked.pdf: the PDF is encrypted"):
        load("locked.pdf", encrypted(tiny_pdf(MANUAL_PAGES)))
    opened = load("open.pdf", encrypted(tiny_pdf(MANUAL_PAGES), password=""))
    assert "quorum disk" in opened.body


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"MZ\x90\x00binary junk named .pdf" * 50, "not a PDF"),
        (b"%PDF-1.4\n1 0 obj << /Type /Catalog", "not a readable PDF"),
        (tiny_pdf(MANUAL_PAGES)[:400], "not a readable PDF|no text"),
        (b"", "not a PDF"),
    ],
)
def test_junk_named_pdf_is_unreadable_not_a_crash(data: bytes, reason: str) -> None:
    with pytest.raises(UnreadableDocument, match=reason) as raised:
        load("junk.pdf", data)
    assert "\n" not in raised.value.message


def test_markdown_front_matter_and_text() -> None:
    runbook = load("disk.md", b"---\nrunbook: disk-full\ntitle: 'Disk full'\n---\n# Steps\n\nrm.")
    assert (runbook.title, runbook.runbook_tag) == ("Disk full", "disk-full")
    assert load("x.txt", "caf\u00e9 notes".encode()).body == "caf\u00e9 notes"
    with pytest.raises(UnreadableDocument, match="not UTF-8"):
        load("x.txt", b"\xff\xfe\xfa latin junk")


def test_a_runbook_with_windows_line_endings_keeps_its_triggers() -> None:
    # The tag and the triggers come from one reading of the front matter: CRLF gave the tag alone.
    text = (
        b"---\r\nrunbook: disk-full\r\ntriggers: [disk full, no space left]\r\n---\r\n# Steps\r\n"
    )
    runbook = load("disk.md", text)
    assert runbook.runbook_tag == "disk-full"
    assert runbook.triggers == ("disk full", "no space left")


def test_media_types_declared_or_from_the_name() -> None:
    assert media_type_for("a/B.HTM") == "text/html"
    assert media_type_for("a.bin", "application/pdf; charset=binary") == "application/pdf"
    assert media_type_for("a.md", "application/octet-stream") == "text/markdown"
    with pytest.raises(UnsupportedMediaType, match="'image/png' is not supported"):
        media_type_for("a.png", "image/png")
    with pytest.raises(UnsupportedMediaType, match="cannot tell the format"):
        media_type_for("archive.zip")


def test_size_cap() -> None:
    with pytest.raises(DocumentTooLarge, match="2049 bytes is larger than the limit of 2048"):
        load_document("big.txt", b"x" * 2049, "text/plain", max_bytes=2048)


def test_the_tiny_pdf_writer_makes_what_pypdf_reads() -> None:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(tiny_pdf([["a (b) c"]], title="T")))
    assert reader.metadata is not None and reader.metadata.title == "T"
    assert "a (b) c" in reader.pages[0].extract_text()


# --- bounds (issue 26): each one line, and quick ---------------------------------------------


@pytest.mark.parametrize(
    "page",
    [nested_html(30_000, "<table><tr><td>"), nested_html(440_000)],
    ids=["30000-nested-table-cells", "2.2MB-of-nested-divs"],
)
def test_html_nested_past_the_depth_bound_is_one_line_not_a_recursion_error(page: bytes) -> None:
    started = time.monotonic()
    with pytest.raises(UnreadableDocument, match=r"nested more than 200 deep .*MAX_DEPTH\)$"):
        load_document("deep.html", page, "text/html", max_bytes=len(page))
    assert time.monotonic() - started < 10  # refused as the parser opens the 201st element


def test_html_nested_up_to_the_bound_converts() -> None:
    page = b"<div>" * 150 + b"<ul><li>" * 20 + b"deep words"
    assert "deep words" in load("deep.html", page).body
    with pytest.raises(UnreadableDocument, match="nested more than 20 deep"):
        load_document(
            "deep.html", page, "text/html", max_bytes=MAX, limits=TextLimits(max_depth=20)
        )


def test_a_pdf_page_that_inflates_past_the_stream_bound_is_refused_before_parsing() -> None:
    bomb = pdf_bomb(5_000_000)
    assert len(bomb) < 20_000
    started = time.monotonic()
    with pytest.raises(DocumentTooLarge, match=r"page 1's content inflates to \d+ bytes"):
        load_document("bomb.pdf", bomb, "application/pdf", max_bytes=MAX)
    assert time.monotonic() - started < 5  # before: 16 s of pypdf, and the 5 MB of text kept


def test_a_pdf_page_with_more_text_than_a_page_holds_is_refused() -> None:
    with pytest.raises(DocumentTooLarge, match=r"page 1 holds more than 100000 characters"):
        load("bomb.pdf", pdf_bomb(1_000_000))
    small = TextLimits(page_max_chars=50)
    with pytest.raises(DocumentTooLarge, match="PAGE_MAX_CHARS"):
        load_document("m.pdf", tiny_pdf(MANUAL_PAGES), "application/pdf", max_bytes=MAX,
                      limits=small)  # fmt: skip


def test_a_document_with_more_text_than_the_bound_is_refused() -> None:
    text = ("word " * 420_000).encode()  # 2.1 million characters
    with pytest.raises(DocumentTooLarge, match=r"more than 2000000 characters .*MAX_CHARS\)$"):
        load_document("big.txt", text, "text/plain", max_bytes=len(text))
    assert load_document("ok.txt", text[:1_000_000], "text/plain", max_bytes=len(text)).body


@pytest.mark.parametrize(
    "text",
    ["# a" + " " * 2_500 + "b\n\nbody", "---" + "\n" * 20_000 + "x"],
    ids=["heading-padded-with-spaces", "front-matter-of-blank-lines"],
)
def test_markdown_that_made_the_regular_expressions_backtrack_is_quick(text: str) -> None:
    """Before: 60 s (cubic in the padding) and 10 s (quadratic in the blank lines)."""
    started = time.monotonic()
    load("a.md", text.encode())
    assert time.monotonic() - started < 5


def test_a_lone_surrogate_from_a_pdf_font_map_is_replaced() -> None:
    doc = load("odd.pdf", surrogate_pdf())
    assert doc.body == "## Page 1\n\n\ufffdB\ufffdB" and doc.title == "\ufffdB\ufffdB"
    doc.body.encode("utf-8")  # what Postgres needs
