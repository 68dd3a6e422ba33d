"""Loaders: HTML (an exported wiki page), PDF (pages kept), Markdown and text into one normalized
document; every bad file is one clear ``UnreadableDocument`` line; a folder goes on past them."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from documents_data import DOCUMENTS, MANUAL_PAGES, encrypted, tiny_pdf
from resolveflow.errors import InvalidInput
from resolveflow.retrieval import loaders
from resolveflow.retrieval.chunking import chunk_document
from resolveflow.retrieval.loaders import (
    DocumentTooLarge,
    UnreadableDocument,
    UnsupportedMediaType,
    load_document,
    media_type_for,
    page_of,
)
from resolveflow.retrieval.sources import DocsFolder

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


def test_a_folder_goes_on_past_bad_files(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    shutil.copytree(DOCUMENTS, root)
    (root / "junk.pdf").write_bytes(b"\x00\x01 not a pdf" * 10)
    (root / "locked.pdf").write_bytes(encrypted(tiny_pdf(MANUAL_PAGES)))
    (root / "wiki" / "binary.html").write_bytes(bytes(range(256)))
    (root / "huge.txt").write_bytes(b"word " * 1000)
    (root / "image.png").write_bytes(b"\x89PNG")  # not a document: not even seen
    folder = DocsFolder(root, "docs", max_bytes=4096)
    docs = {doc.external_id: doc for doc in folder}
    assert set(docs) == {
        "manual.pdf",
        "notes.txt",
        "runbooks/NodeClockNotSynchronising.md",
        "wiki/disk-pressure.html",
    }
    assert docs["wiki/disk-pressure.html"].kind == "doc"
    reasons = dict(folder.skipped)
    assert set(reasons) == {"huge.txt", "junk.pdf", "locked.pdf", "wiki/binary.html"}
    assert "larger than the limit of 4096" in reasons["huge.txt"]
    assert "encrypted" in reasons["locked.pdf"]
    assert all(reason.startswith(name + ": ") for name, reason in reasons.items())
    assert folder.seen == set(docs) | set(reasons)
    with pytest.raises(InvalidInput, match="is not a directory"):
        DocsFolder(root / "missing", "docs")


def test_the_tiny_pdf_writer_makes_what_pypdf_reads() -> None:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(tiny_pdf([["a (b) c"]], title="T")))
    assert reader.metadata is not None and reader.metadata.title == "T"
    assert "a (b) c" in reader.pages[0].extract_text()
