"""Refine on a repository with nothing but its git history: no index, no tracker. The real
command on a small repository built with the git CLI lists its past commits, and the pull request
a squash subject ``(#12)`` names, as related tasks; their own changes are the fixes behind the
suggested files."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from git_repos import commit, init
from refine_cli import RefineCli
from resolveflow.accounts import admin
from resolveflow.refine.domain.document import COMMIT_KIND, RefineDocument, TaskKind
from resolveflow.store.database import Database

pytest_plugins = ["refine_cli"]

REPO = "acme/mailer"
READER = "mailer/mail/files.py"
SENDER = "mailer/notify/sender.py"
TICKET = (
    "Importing an mbox export fails on a message with a Latin-1 body\n\n"
    "I exported my sent folder to ~/exports/sent.mbox and the mbox import stops.\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/mailbox.py", line 779, in get_message\n'
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9\n"
)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = init(tmp_path_factory.mktemp("git-only") / "mailer")
    commit(path, 1, "Initial layout", {
        "pyproject.toml": "[project]\nname = 'mailer'\n",
        "mailer/mail/mailbox.py": "class Mailbox:\n    pass\n",
        READER: "def read_mbox(path):\n    return open(path).read()\n",
        SENDER: "def send(message):\n    return message\n",
    })  # fmt: skip
    commit(path, 2, "Mbox import: read the messages of an mbox export in bytes, not text (#12)", {
        READER: "def read_mbox(path):\n    return open(path, 'rb').read()\n",
        "pyproject.toml": "[project]\nname = 'mailer'\nversion = '0.2'\n",
    })  # fmt: skip
    commit(path, 3, "Notifications: the sender retries a refused connection once", {
        SENDER: "def send(message):\n    return message or None\n",
        "pyproject.toml": "[project]\nname = 'mailer'\nversion = '0.3'\n",
    })  # fmt: skip
    commit(path, 4, "Mbox import keeps a message whose body is not UTF-8 (decode as Latin-1)", {
        READER: "def read_mbox(path):\n    return open(path, 'rb').read().decode('latin-1')\n",
    })  # fmt: skip
    return path


@pytest.fixture
def tenant(db: Database) -> UUID:
    return admin.add_tenant(db, "acme").id  # nothing indexed


ARGS = ["refine", "-", "--repo", REPO, "--tenant", "acme", "--json"]


def test_with_no_index_and_no_tracker_the_git_history_is_the_past_tasks(
    tenant: UUID, clone: Path, refine_cli: RefineCli
) -> None:
    code, out, err = refine_cli(ARGS, TICKET, REPO, clone)
    assert code == 0, err
    doc = RefineDocument.model_validate_json(out)
    kinds = {(t.kind, t.source) for t in doc.related}
    assert kinds == {(COMMIT_KIND, f"git:{REPO}"), (TaskKind.PULL.value, f"git:{REPO}")}, kinds
    pull = next(t for t in doc.related if t.kind == TaskKind.PULL)
    assert pull.external_id == "12" and pull.title.startswith("Mbox import: read the messages")
    latin = next(t for t in doc.related if "Latin-1" in t.title)
    assert latin.kind == COMMIT_KIND and len(latin.external_id) == 40
    assert not any(w.message.startswith("no similar past task") for w in doc.warnings)
    hows = {c.task: c.how for c in doc.changes}
    assert hows["12"] == "squash (#12)" and hows[latin.external_id] == "the commit itself"
    assert doc.suggested_files[0].path == READER
    markdown = doc.markdown or ""
    assert "From the repository's git history" in markdown
    assert f"commit `{latin.external_id[:10]}`" in markdown and "#12" in markdown
    assert "No similar past task was found" not in markdown
    # the standard library's mailbox.py is not the repository's mailbox.py
    assert all(f.path != "mailer/mail/mailbox.py" for f in doc.suggested_files)


def test_with_no_index_and_no_clone_refine_stops_with_one_line(
    tenant: UUID, refine_cli: RefineCli
) -> None:
    code, _, err = refine_cli(ARGS, TICKET, REPO, None)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 7 and len(lines) == 1, lines
    assert "no search index" in lines[0] and "refine.clone" in lines[0]
