"""A docs folder as ``index docs`` reads it (issue 26): the folder goes on past bad files, bombs
and files nested too deeply; only the folder's own regular files are read: a symbolic link (out
of the folder or in it, to a file or a folder) is skipped with its reason, as are pipes and file
names that are not UTF-8. Real files in a temporary folder, text from real worker processes."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from document_bombs import nested_html, pdf_bomb
from documents_data import DOCUMENTS, MANUAL_PAGES, encrypted, tiny_pdf
from resolveflow.errors import InvalidInput
from resolveflow.retrieval.sources import DocsFolder

LINK = "a symbolic link, not followed"


def read(folder: DocsFolder, timeout: float = 120) -> dict[str, str]:
    """The folder's documents by id (read on a thread: a pipe must never block the reading)."""
    docs: dict[str, str] = {}
    reader = threading.Thread(
        target=lambda: docs.update({d.external_id: d.body for d in folder}), daemon=True
    )
    reader.start()
    reader.join(timeout)
    assert not reader.is_alive(), "reading the folder did not finish"
    return docs


def test_a_folder_goes_on_past_bad_files(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    shutil.copytree(DOCUMENTS, root)
    (root / "junk.pdf").write_bytes(b"\x00\x01 not a pdf" * 10)
    (root / "locked.pdf").write_bytes(encrypted(tiny_pdf(MANUAL_PAGES)))
    (root / "wiki" / "binary.html").write_bytes(bytes(range(256)))
    (root / "huge.txt").write_bytes(b"word " * 1000)
    (root / "image.png").write_bytes(b"\x89PNG")  # not a document: not even seen
    folder = DocsFolder(root, "docs", max_bytes=4096)
    docs = read(folder)
    assert set(docs) == {
        "manual.pdf",
        "notes.txt",
        "runbooks/NodeClockNotSynchronising.md",
        "wiki/disk-pressure.html",
    }
    reasons = dict(folder.skipped)
    assert set(reasons) == {"huge.txt", "junk.pdf", "locked.pdf", "wiki/binary.html"}
    assert "larger than the limit of 4096" in reasons["huge.txt"]
    assert "encrypted" in reasons["locked.pdf"]
    assert all(reason.startswith(name + ": ") for name, reason in reasons.items())
    assert folder.seen == set(docs) | set(reasons)
    with pytest.raises(InvalidInput, match="is not a directory"):
        DocsFolder(root / "missing", "docs")


def test_bombs_and_deep_nesting_are_skipped_and_the_folder_goes_on(tmp_path: Path) -> None:
    """Before: RecursionError out of the loader stopped the whole folder."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a-first.md").write_text("# First\n\nRead before the bombs.", encoding="utf-8")
    (root / "tables.html").write_bytes(nested_html(30_000, "<table><tr><td>"))
    (root / "divs.html").write_bytes(nested_html(440_000))  # 2.2 MB
    (root / "page.pdf").write_bytes(pdf_bomb(5_000_000))
    (root / "z-last.txt").write_text("Read after the bombs.", encoding="utf-8")
    folder = DocsFolder(root, "docs", max_bytes=4 * 1024 * 1024)
    assert set(read(folder)) == {"a-first.md", "z-last.txt"}
    reasons = dict(folder.skipped)
    assert "nested more than 200 deep" in reasons["tables.html"]
    assert "nested more than 200 deep" in reasons["divs.html"]
    assert "RESOLVEFLOW_DOCUMENT_PAGE_MAX_STREAM_BYTES" in reasons["page.pdf"]


def test_symbolic_links_pipes_and_undecodable_names_are_skipped(tmp_path: Path) -> None:
    """Before: a link out of the folder was read (it indexed /etc/hostname)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("The vault code is kumquat.", encoding="utf-8")
    (outside / "more.md").write_text("# More\n\nkumquat again.", encoding="utf-8")
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "real.md").write_text("# Real\n\nA real document.", encoding="utf-8")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "sub" / "alias.md").symlink_to(root / "real.md")  # inside, but a link all the same
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    (root / "dangling.md").symlink_to(tmp_path / "nothing.md")
    (root / "link.png").symlink_to(outside / "secret.txt")  # not a document name: ignored
    os.mkfifo(root / "pipe.md")
    undecodable = os.fsencode(root) + b"/caf\xe9.md"
    with open(undecodable, "wb") as handle:
        handle.write(b"latin-1 name")
    folder = DocsFolder(root, "docs")
    docs = read(folder)
    assert set(docs) == {"real.md"}
    assert not any("kumquat" in body for body in docs.values())
    reasons = dict(folder.skipped)
    assert set(reasons) == {
        "leak.txt", "sub/alias.md", "elsewhere", "dangling.md", "pipe.md", "caf\\xe9.md"
    }  # fmt: skip
    for name in ("leak.txt", "sub/alias.md", "elsewhere", "dangling.md"):
        assert reasons[name] == f"{name}: {LINK}"
    assert "not a regular file" in reasons["pipe.md"]
    assert "not UTF-8" in reasons["caf\\xe9.md"]
    # Links are not the folder's documents: --prune removes what an earlier run read through one.
    assert folder.seen == {"real.md", "pipe.md"}


def test_the_folder_itself_may_be_a_link(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext", encoding="utf-8")
    (tmp_path / "named").symlink_to(tmp_path / "docs", target_is_directory=True)
    assert set(read(DocsFolder(tmp_path / "named", "docs"))) == {"a.md"}
