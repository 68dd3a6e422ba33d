"""``resolveflow eval changes`` as a real process on a tiny history built here, with the figures
computed by hand below (the hashing embedder: tasks that share words are near)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures_cli import Cli
from git_repos import commit, init

CSV, XLSX, JSON_FILE, DOCS = "src/pkg/csv.py", "src/pkg/xlsx.py", "src/pkg/json.py", "docs/x.md"


def _record(id_: str, day: int, title: str, body: str, kind: str = "issue") -> dict[str, Any]:
    return {"id": id_, "kind": kind, "title": title, "body": body, "state": "closed",
            "created_at": f"2023-01-{day:02d}T00:00:00Z", "closed_at": None, "labels": [],
            "url": f"https://example.test/{kind}/{id_}"}  # fmt: skip


def _fixture(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = init(tmp_path / "repo")
    commit(repo, 1, "Initial import", {CSV: "a\n", XLSX: "b\n", JSON_FILE: "c\n", DOCS: "d\n"})
    commit(repo, 3, "Skip n/a cells (#2)", {CSV: "a2\n"})
    commit(repo, 5, "Faster sheets (#4)", {XLSX: "b2\n"})
    commit(repo, 11, "Skip empty cells (#6)", {CSV: "a3\n"})
    commit(repo, 13, "Stream big sheets (#8)", {XLSX: "b3\n", DOCS: "d2\n"})
    commit(repo, 15, "Fix a typo (#10)", {DOCS: "d3\n"})
    issues = [
        _record("1", 2, "CSV export crashes on n/a cells", "The csv export crashes on cells."),
        _record("3", 4, "Excel export is slow", "Exporting a sheet to excel is slow."),
        _record("5", 10, "CSV export crashes on empty cells", "The csv export crashes again."),
        _record("7", 12, "Excel export slow for big sheets", "A big sheet to excel is slow."),
        _record("9", 14, "Typo in the docs", "A typo on the install page."),
    ]
    pulls = [
        _record(str(n + 1), day, f"Fix {n}", f"Fixes #{n}", kind="pull")
        for n, day in ((1, 3), (3, 5), (5, 11), (7, 13), (9, 15))
    ]
    data = tmp_path / "data"
    data.mkdir()
    (data / "issues.jsonl").write_text("\n".join(json.dumps(r) for r in issues) + "\n", "utf-8")
    (data / "pulls.jsonl").write_text("\n".join(json.dumps(r) for r in pulls) + "\n", "utf-8")
    links = "issue\tpr\tpr_merged\n" + "".join(f"{n}\t{n + 1}\t1\n" for n in (1, 3, 5, 7, 9))
    (data / "fix_links.tsv").write_text(links, "utf-8")
    return data / "issues.jsonl", data / "fix_links.tsv", repo


def test_eval_changes_on_a_tiny_history_matches_the_figures_computed_by_hand(
    cli: Cli, tmp_path: Path
) -> None:
    issues, links, repo = _fixture(tmp_path)
    args = ("eval", "changes", "--corpus", str(issues), "--fix-links", str(links),
            "--repo", str(repo), "--since", "2023-01-10")  # fmt: skip
    report = cli.json(*args)
    # Replayed: #5 (its fix changed csv.py) and #7 (xlsx.py); #9's fix changed only docs/.
    assert (report["issues"], report["skipped_fix_outside_src"]) == (2, 1)
    # Each one's most similar earlier task (#1, #3) was fixed in the same file: rank 1 both.
    assert report["refine"] == {"hit@3": 1.0, "hit@5": 1.0, "mrr@10": 1.0}
    assert report["votes_only"] == {"hit@3": 1.0, "hit@5": 1.0, "mrr@10": 1.0}
    # Most changed before #5: csv.py 2, xlsx.py 2 (tie by path) -> csv.py first, rank 1; before
    # #7: csv.py 3, xlsx.py 2 -> xlsx.py rank 2. MRR (1 + 1/2) / 2.
    assert report["most_changed"] == {"hit@3": 1.0, "hit@5": 1.0, "mrr@10": 0.75}
    assert report["targets"]["hit@5"] == {"value": 1.0, "target": 0.78, "met": True}
    table = cli.run(*args).stdout
    assert "dev targets" in table and "files changed most often" in table
    bad = cli.run("eval", "changes", "--corpus", str(issues), "--fix-links", str(links),
                  "--repo", str(tmp_path / "nowhere"), ok=False)  # fmt: skip
    lines = [line for line in bad.stderr.splitlines() if line.strip()]
    assert bad.returncode == 7 and len(lines) == 1 and "nowhere" in lines[0], bad.stderr
