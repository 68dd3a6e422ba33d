"""`index docs` on a mixed folder (Markdown, text, an exported wiki page, a PDF, and bad files),
re-indexing a changed file, `--prune`, and `index remove`, as real processes with the fake
(hashing) embedder: a search right after a removal no longer finds the document."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from document_bombs import nested_html, pdf_bomb
from documents_data import DOCUMENTS, MANUAL_PAGES, encrypted, tiny_pdf


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "resolveflow", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        if ok:
            assert result.returncode == 0, result.stderr
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def found(self, query: str) -> tuple[list[str], list[str]]:
        """Every hit's id, and those whose words match (the vector branch returns every
        document of a tiny index, near or not)."""
        hits = self.json("search", query, "--k", "10")
        words = [hit["external_id"] for hit in hits if hit["scores"]["lexical"] > 0]
        return [hit["external_id"] for hit in hits], words


@pytest.fixture
def cli(database_url: str, tmp_path: Path) -> Cli:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=database_url,
        RESOLVEFLOW_HOME=str(tmp_path / "home"),
        RESOLVEFLOW_EMBEDDER="fake",
        RESOLVEFLOW_DOCUMENT_MAX_BYTES="4096",
        COLUMNS="200",
    )
    return Cli(env)


def test_index_docs_mixed_folder_reindex_prune_and_remove(cli: Cli, tmp_path: Path) -> None:
    cli.json("tenants", "add", "acme")
    root = tmp_path / "docs"
    shutil.copytree(DOCUMENTS, root)
    (root / "junk.pdf").write_bytes(b"\x00\x01 binary junk named .pdf" * 10)
    (root / "locked.pdf").write_bytes(encrypted(tiny_pdf(MANUAL_PAGES)))
    (root / "wiki" / "broken.html").write_bytes(bytes(range(256)))
    (root / "huge.md").write_text("# Huge\n\n" + "filler words " * 1000, encoding="utf-8")

    first = cli.run("index", "docs", str(root), "--json")
    report = json.loads(first.stdout)
    assert (report["written"], report["unchanged"], report["skipped"]) == (4, 0, 4)
    reasons = {item["path"]: item["reason"] for item in report["skipped_files"]}
    assert set(reasons) == {"huge.md", "junk.pdf", "locked.pdf", "wiki/broken.html"}
    assert "encrypted" in reasons["locked.pdf"] and "4096" in reasons["huge.md"]
    skipped_lines = first.stderr.strip().splitlines()  # one clear line per bad file
    assert len(skipped_lines) == 4 and all(line.startswith("skipped ") for line in skipped_lines)
    assert "Traceback" not in first.stderr

    hits = cli.json("search", "replacing failed quorum disk", "--k", "3")
    assert hits[0]["external_id"] == "manual.pdf" and "Page 1" in hits[0]["snippet"]
    assert cli.found("purge stale workspaces scratch volume")[0][0] == "wiki/disk-pressure.html"

    # Unchanged files are skipped; a changed file replaces its chunks (old words are gone).
    again = cli.json("index", "docs", str(root))
    assert (again["written"], again["unchanged"]) == (0, 4)
    page = root / "wiki" / "disk-pressure.html"
    page.write_text(
        "<html><body><h1>Disk pressure</h1><p>Rotate the kiwifruit logs.</p></body></html>",
        encoding="utf-8",
    )
    changed = cli.json("index", "docs", str(root))
    assert (changed["written"], changed["unchanged"]) == (1, 3)
    assert cli.found("kiwifruit")[1] == ["wiki/disk-pressure.html"]
    assert cli.found("agentctl purge workspaces")[1] == []

    # A file gone from the folder: --prune removes its document, and only that one.
    (root / "notes.txt").unlink()
    pruned = cli.json("index", "docs", str(root), "--prune")
    assert pruned["removed_files"] == ["notes.txt"] and pruned["unchanged"] == 3
    ids, words = cli.found("escalation contacts pager")
    assert "notes.txt" not in ids and words == []

    # index remove: gone from search at once; a second removal says there is nothing.
    assert cli.found("quorum firmware")[1] == ["manual.pdf"]
    removed = cli.json("index", "remove", "manual.pdf")
    assert removed == {"source": "docs", "removed": ["manual.pdf"]}
    ids, words = cli.found("quorum firmware")
    assert "manual.pdf" not in ids and words == []
    status = cli.json("index", "status")
    assert status["documents"] == 2
    missing = cli.run("index", "remove", "manual.pdf", ok=False)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert "no document 'manual.pdf' in source 'docs'" in missing.stderr


def test_index_docs_skips_bombs_links_and_pipes_and_goes_on(cli: Cli, tmp_path: Path) -> None:
    """Before: 30,000 nested table cells stopped the whole folder ("unexpected RecursionError",
    exit 1), and a link out of the folder was indexed."""
    cli.json("tenants", "add", "acme")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("The vault code is kumquat.", encoding="utf-8")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe aardvark runbook.", encoding="utf-8")
    (root / "tables.html").write_bytes(nested_html(30_000, "<table><tr><td>"))
    (root / "divs.html").write_bytes(nested_html(800))  # under the 4096-byte cap of this CLI
    (root / "page.pdf").write_bytes(pdf_bomb(5_000_000))
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    os.mkfifo(root / "pipe.md")
    (root / "z.txt").write_text("The zebra notes.", encoding="utf-8")
    cli.env["RESOLVEFLOW_DOCUMENT_MAX_BYTES"] = str(512 * 1024)

    done = cli.run("index", "docs", str(root), "--json")
    report = json.loads(done.stdout)
    assert (report["written"], report["skipped"]) == (2, 5), report
    reasons = {item["path"]: item["reason"] for item in report["skipped_files"]}
    assert "nested more than 200 deep" in reasons["tables.html"]
    assert "nested more than 200 deep" in reasons["divs.html"]
    assert "RESOLVEFLOW_DOCUMENT_PAGE_MAX_STREAM_BYTES" in reasons["page.pdf"]
    assert reasons["leak.txt"] == "leak.txt: a symbolic link, not followed"
    assert "not a regular file" in reasons["pipe.md"]
    assert len(done.stderr.strip().splitlines()) == 5 and "Traceback" not in done.stderr
    assert sorted(cli.found("aardvark zebra")[1]) == ["a.md", "z.txt"]
    assert cli.found("vault kumquat")[1] == []


@pytest.mark.parametrize(
    "args",
    [("index", "remove", b"caf\xe9.md"), ("index", "remove", "a.md", "--source", b"s\xff")],
    ids=["path", "source"],
)
def test_index_remove_of_a_name_that_is_not_utf8_is_one_line(
    cli: Cli, args: tuple[str | bytes, ...]
) -> None:
    """An argument that is not UTF-8 arrives as lone surrogates, which Postgres cannot hold."""
    cli.json("tenants", "add", "acme")
    result = subprocess.run(
        [sys.executable, "-m", "resolveflow", *args],
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "unpaired surrogate" in result.stderr
