"""Help pages as a person reads them: no type labels (``<bool>``, ``<str>``, ``<list[str]>``);
flags show nothing after their name, valued options and arguments an UPPERCASE placeholder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TYPE_LABEL = re.compile(r"<[a-z_\[\]|, ]+>")

PAGES = [
    ["--help"],
    ["proposals", "create", "--help"],
    ["proposals", "show", "--help"],
    ["approve", "--help"],
    ["principals", "add", "--help"],
    ["tenants", "list", "--help"],
    ["index", "github", "--help"],
    ["webhooks", "secret", "set", "--help"],
]


def _help(tmp_path: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(RESOLVEFLOW_HOME=str(tmp_path), COLUMNS="120", NO_COLOR="1")
    result = subprocess.run(
        [sys.executable, "-m", "resolveflow", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _row(page: str, option: str) -> str:
    """The help row of ``option``, with the table's borders and the required marker dropped."""
    for line in page.splitlines():
        cells = line.strip("│ ").lstrip("* ").split()
        if cells and cells[0] == option:
            return " ".join(cells)
    raise AssertionError(f"{option} not on the page:\n{page}")


@pytest.mark.parametrize("args", PAGES, ids=" ".join)
def test_help_pages_show_no_type_labels(tmp_path: Path, args: list[str]) -> None:
    page = _help(tmp_path, *args)
    assert TYPE_LABEL.findall(page) == [], page
    assert _row(page, "--help") == "--help Show this message and exit."


def test_valued_options_show_a_placeholder_and_flags_nothing(tmp_path: Path) -> None:
    page = _help(tmp_path, "proposals", "create", "--help")
    assert _row(page, "--repo").startswith("--repo REPO OWNER/REPO")
    assert _row(page, "--issue").startswith("--issue N ")
    assert _row(page, "--comment-file").startswith("--comment-file PATH ")
    assert _row(page, "--label").startswith("--label LABEL ")
    assert _row(page, "--new-issue") == "--new-issue Propose a new issue instead."
    assert _row(page, "--json") == "--json Print exactly one JSON document on stdout."
    shown = _help(tmp_path, "proposals", "show", "--help")
    assert "Usage: resolveflow proposals show [OPTIONS] PROPOSAL_ID" in shown
    assert _row(shown, "PROPOSAL_ID") == "PROPOSAL_ID [required]"


def test_the_top_level_help_lists_every_command_with_its_help(tmp_path: Path) -> None:
    from resolveflow.cli import COMMANDS

    page = _help(tmp_path, "--help")
    for entry in COMMANDS:
        assert _row(page, entry.name).startswith(f"{entry.name} {entry.help[:30]}"), entry.name
