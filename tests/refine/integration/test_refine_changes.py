"""Refine's changes step on a real small repository and a small index: the fixing commits of the
related tasks (fix links, squash subjects, "fixes #N"), their files and diff excerpts, only
commits before the ticket, the suggested files with their evidence; a partial clone's missing
objects become warnings, a configured clone that is missing stops refine with one line."""

from __future__ import annotations

import io
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

import resolveflow.cli as cli
from git_repos import commit, git, init
from refine_cli import RefineCli
from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.git import CloneMissing, GitRepository
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.refine import steps as refine
from resolveflow.refine.changes import ChangesDeps, changes_step
from resolveflow.refine.domain.document import (
    RefineDocument,
    RefineStep,
    Relevance,
    Ticket,
    TicketSource,
)
from resolveflow.refine.domain.rules import FileRules
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher
from resolveflow.store.database import Database

pytest_plugins = ["refine_cli"]

REPO = "acme/widgets"
SOURCE = "github:acme/widgets"
CSV = "widgets/export/csv.py"
XLSX = "widgets/export/xlsx.py"
TICKET = (
    "Hi, the CSV export stopped working for a customer file.\n"
    "ValueError: could not convert string to float: 'n/a'\n"
    '  File "/srv/app/site-packages/widgets/export/csv.py", line 4, in write_row\n'
)


def _day(day: int) -> datetime:
    return datetime(2023, 1, day, 10, tzinfo=UTC)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    path = init(tmp_path_factory.mktemp("refine") / "widgets")
    row = "".join(f"    cell_{i} = row[{i}]\n" for i in range(30))
    shas = {
        "initial": commit(path, 1, "Initial import", {
            CSV: "def write_row(row):\n" + row + "    return float(row[0])\n",
            XLSX: "def write_sheet(rows):\n    return rows\n",
            "web/app.tsx": "export const App = () => null;\n",
        }),
        "squash": commit(path, 3, "Skip 'n/a' cells in CSV export (#44)", {
            CSV: "def write_row(row):\n" + row + "    if row[0] == 'n/a':\n        return None\n"
                 "    return float(row[0])\n",
            "tests/test_csv.py": "def test_na():\n    assert True\n",
        }),
        "fixes": commit(path, 5, "Speed up the xlsx writer\n\nfixes #17", {
            XLSX: "def write_sheet(rows):\n    return list(rows)\n",
        }),
        "later": commit(path, 20, "Rewrite the CSV writer (#60)", {
            CSV: "def write_row(row):\n    return row\n",
        }),
    }  # fmt: skip
    return {"path": path, "shas": shas}


def _documents() -> list[SourceDocument]:
    issue = dict(source=SOURCE, state="closed", repository=REPO)
    return [
        SourceDocument(external_id="41", kind="issue", title="CSV export crashes on 'n/a' values",
                       body="ValueError: could not convert string to float: 'n/a' in "
                       "widgets/export/csv.py write_row.", created_at=_day(2), **issue),
        SourceDocument(external_id="44", kind="pull", title="Skip 'n/a' cells in CSV export",
                       body="Fixes #41", created_at=_day(3), **issue),
        SourceDocument(external_id="17", kind="issue", title="Export to Excel is slow",
                       body="Exporting rows to xlsx takes a minute.", created_at=_day(1), **issue),
    ]  # fmt: skip


@pytest.fixture
def tenant(db: Database) -> UUID:
    tenant_id = admin.add_tenant(db, "acme").id
    Indexer(db, HashingEmbedder()).upsert(tenant_id, _documents())
    return tenant_id


def _related(db: Database, tenant: UUID, body: str = TICKET) -> RefineDocument:
    ticket = Ticket(source=TicketSource.TEXT, title="CSV export fails", body=body,
                    created_at=_day(10), repository=REPO)  # fmt: skip
    doc = RefineDocument(ticket=ticket, done=[RefineStep.LOAD])
    doc = refine.related(doc, Searcher(db, HashingEmbedder()), tenant)
    return refine.relevance(doc, None)


def test_fixing_commits_files_excerpts_and_suggested_files(
    db: Database, tenant: UUID, repo: dict[str, object]
) -> None:
    shas = repo["shas"]
    assert isinstance(shas, dict) and isinstance(repo["path"], Path)
    history = RepositoryHistory.read(REPO, GitRepository(repo["path"]))
    doc = changes_step(_related(db, tenant), ChangesDeps(db, tenant, {REPO: history}))
    by_task = {c.task: c for c in doc.changes}
    fix = by_task["41"]  # issue 41 <- PR 44 "Fixes #41" <- squash "(#44)"
    assert (fix.sha, fix.how, fix.committed_at) == (shas["squash"], "fix link (#44)", _day(3))
    assert {(f.path, f.added, f.removed) for f in fix.files} == {
        (CSV, 2, 0),
        ("tests/test_csv.py", 2, 0),
    }
    assert "+    if row[0] == 'n/a':" in fix.excerpt and not fix.excerpt_truncated
    assert (by_task["17"].sha, by_task["17"].how) == (shas["fixes"], "fixes #17")
    assert by_task["44"].how == "squash (#44)"  # the pull request itself, when it is related
    assert shas["later"] not in {c.sha for c in doc.changes}  # after the ticket: not evidence
    top = doc.suggested_files[0]
    assert (top.path, top.repository) == (CSV, REPO)
    assert "in the ticket's traceback" in top.reasons
    assert "changed by the fixes of similar tasks" in top.reasons
    assert top.commits == [shas["squash"]]
    assert "web/app.tsx" not in {f.path for f in doc.suggested_files}
    assert doc.done[-1] is RefineStep.CHANGES and doc.warnings == []


def test_include_globs_limit_the_suggestions(
    db: Database, tenant: UUID, repo: dict[str, object]
) -> None:
    assert isinstance(repo["path"], Path)
    history = RepositoryHistory.read(REPO, GitRepository(repo["path"]))
    deps = ChangesDeps(db, tenant, {REPO: history}, files=FileRules(include=("tests/**",)))
    doc = changes_step(_related(db, tenant), deps)
    assert [f.path for f in doc.suggested_files] == ["tests/test_csv.py"]


def test_include_and_exclude_apply_to_every_suggested_file_whatever_its_evidence(
    db: Database, tenant: UUID, repo: dict[str, object]
) -> None:
    """Without rules, ``tests/test_csv.py`` (changed by #41's fix: a vote; it defines
    ``test_na``, a name the ticket uses) and ``widgets/export/xlsx.py`` (named in the ticket, and
    changed by #17's fix) are suggested; ``include`` and ``exclude`` remove both."""
    assert isinstance(repo["path"], Path)
    history = RepositoryHistory.read(REPO, GitRepository(repo["path"]))
    text = TICKET + "xlsx.py has the same code, and test_na does not catch it.\n"
    related = _related(db, tenant, text)
    free = changes_step(related, ChangesDeps(db, tenant, {REPO: history}))
    reasons = {f.path: f.reasons for f in free.suggested_files}
    assert "defines a name the ticket uses" in reasons["tests/test_csv.py"]
    assert "changed by the fixes of similar tasks" in reasons["tests/test_csv.py"]
    assert "named in the ticket" in reasons[XLSX]
    rules = FileRules(include=("widgets/**",), exclude=("**/xlsx.py",))
    kept = changes_step(related, ChangesDeps(db, tenant, {REPO: history}, files=rules))
    assert [f.path for f in kept.suggested_files] == [CSV]
    assert kept.changes == free.changes  # the fixes themselves are facts: all still listed


def test_a_diff_excerpt_is_read_only_for_the_fixes_of_highly_relevant_tasks(
    db: Database, tenant: UUID, repo: dict[str, object]
) -> None:
    assert isinstance(repo["path"], Path)
    history = RepositoryHistory.read(REPO, GitRepository(repo["path"]))
    related = _related(db, tenant)
    levels = {j.external_id: j.relevance for j in related.judgements}
    assert levels["41"] is Relevance.HIGH and levels["17"] is not Relevance.HIGH
    doc = changes_step(related, ChangesDeps(db, tenant, {REPO: history}))
    excerpts = {c.task: c.excerpt for c in doc.changes}
    assert "+    if row[0] == 'n/a':" in excerpts["41"] and excerpts["17"] == ""
    lowered = related.model_copy(deep=True)
    lowered.judgements = [j.model_copy(update={"relevance": Relevance.MEDIUM})
                          for j in lowered.judgements]  # fmt: skip
    again = changes_step(lowered, ChangesDeps(db, tenant, {REPO: history}))
    assert [c.excerpt for c in again.changes] == [""] * len(again.changes)


def test_a_partial_clone_warns_about_missing_objects_and_goes_on(
    db: Database, tenant: UUID, repo: dict[str, object], tmp_path: Path
) -> None:
    source = repo["path"]
    assert isinstance(source, Path)
    git(source, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial"
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{source}",
         str(partial)], check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    history = RepositoryHistory.read(REPO, GitRepository(partial))
    doc = changes_step(_related(db, tenant), ChangesDeps(db, tenant, {REPO: history}))
    messages = [w.message for w in doc.warnings]
    assert any("could not be read from the clone (missing objects)" in m for m in messages)
    assert any("partial clone" in m for m in messages)
    # The ticket's own traceback still points at the file; the rest went on.
    assert doc.suggested_files[0].path == CSV and doc.done[-1] is RefineStep.CHANGES


def test_a_configured_clone_that_is_missing_stops_refine_with_one_line(
    db: Database, tenant: UUID, tmp_path: Path, refine_cli: RefineCli
) -> None:
    missing = tmp_path / "no-clone-here"
    with pytest.raises(CloneMissing, match="no-clone-here"):
        RepositoryHistory.read(REPO, GitRepository(missing))
    code, _, stderr = refine_cli(
        ["refine", "step", "changes", "--tenant", "acme"],
        _related(db, tenant).model_dump_json(),
        REPO,
        missing,
    )
    err = [line for line in stderr.splitlines() if line.strip()]
    assert code == 7 and len(err) == 1 and "no-clone-here" in err[0], err


def test_a_text_ticket_names_its_repository_with_repo_and_gets_its_changes(
    tenant: UUID,
    repo: dict[str, object],
    refine_cli: RefineCli,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = refine_cli(
        ["refine", "-", "--repo", "Acme/Widgets", "--tenant", "acme", "--json"],
        TICKET,
        REPO,
        Path(str(repo["path"])),
    )
    assert code == 0, out
    doc = RefineDocument.model_validate_json(out)
    assert doc.ticket.repository == REPO and doc.suggested_files[0].path == CSV
    assert any(c.task == "41" for c in doc.changes)
    assert f"`{CSV}`" in (doc.markdown or "")
    monkeypatch.setattr("sys.stdin", io.StringIO(TICKET))
    assert cli.main(["refine", "acme/widgets#50", "--repo", REPO]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == ["error: --repo is for a file or text ticket; OWNER/REPO#N names its own"]
