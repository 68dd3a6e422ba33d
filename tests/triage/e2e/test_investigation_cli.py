"""``eval safety`` and ``backtest`` as real processes. The backtest runs on a tiny fixture whose
figures are computed by hand below; the fake (hashing) embedder makes "related" mean "shares
words", so which report finds which is clear by reading the texts.

Until the commands are registered in ``resolveflow.cli``, the process registers them itself
with the same functions the CLI will call (``register`` and ``add_eval_commands``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from git_repos import commit, init

ENTRY = """
import sys
from resolveflow import cli
from resolveflow.cli import investigation_cmds, retrieval_cmds
if not any(c.name == "backtest" for c in cli.app.registered_commands):
    investigation_cmds.register(cli.app)
    investigation_cmds.add_eval_commands(retrieval_cmds.eval_app)
sys.exit(cli.main(sys.argv[1:]))
"""


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-c", ENTRY, *args],
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


@pytest.fixture
def cli(database_url: str, tmp_path: Path) -> Cli:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=database_url,
        RESOLVEFLOW_HOME=str(tmp_path / "home"),
        RESOLVEFLOW_EMBEDDER="fake",
        RESOLVEFLOW_RELEVANCE_FLOOR="0.5",  # the hashing embedder's relevance is its cosine
        COLUMNS="200",
    )
    return Cli(env)


def test_eval_safety_passes_every_case(cli: Cli) -> None:
    report = cli.json("eval", "safety")
    assert set(report) == {"passed", "total", "failures"}
    # triage (27), compromised planners (14) and drafting models (9)
    assert report["failures"] == [] and report["passed"] == report["total"] >= 50


def record(
    id_: str, day: int, title: str, body: str, labels: list[str], kind: str = "issue"
) -> str:
    return json.dumps(
        {
            "id": id_,
            "kind": kind,
            "title": title,
            "body": body,
            "created_at": f"2024-{1 + day // 100:02d}-{day % 100:02d}T00:00:00Z",
            "closed_at": None,
            "state": "closed",
            "labels": labels,
            "url": f"https://github.com/acme/widgets/{'pull' if kind == 'pull' else 'issues'}/{id_}",
        }
    )


LONG = (
    "When I export the quarterly report to CSV the last column is missing. I tried with three "
    "different reports and two browsers, and the preview shows every column, but the file that "
    "is downloaded always stops one column early, so the totals are lost."
)


def backtest_fixture(folder: Path) -> tuple[Path, Path]:
    corpus = folder / "corpus.jsonl"
    corpus.write_text(
        "\n".join(
            [
                # History (before --since): what the replayed issues can find.
                record(
                    "101",
                    1,
                    "Printer jams during duplex printing",
                    "The office printer jams whenever duplex printing is enabled.",
                    ["bug", "printing"],
                ),
                record(
                    "102",
                    2,
                    "Login page rejects valid passwords",
                    "Users cannot log in: the login page rejects valid passwords.",
                    ["bug", "auth"],
                ),
                record(
                    "103",
                    3,
                    "Dark mode colours unreadable",
                    "Settings text is grey on grey.",
                    ["ui"],
                ),
                record("301", 5, "Handle duplex trays", "Fixes #101", [], kind="pull"),
                # Replayed (from 2024-02-01 on), in this order:
                # 201 sparse, shares its words with 101 -> cites 101 -> approve, labels bug+printing
                record(
                    "201",
                    101,
                    "Printer jams during duplex printing",
                    "Printer jams again with duplex printing.",
                    ["bug", "printing"],
                ),
                # 202 sparse, shares its words with 102 -> cites 102 -> approve, labels bug+auth
                record(
                    "202",
                    102,
                    "Login page rejects valid passwords",
                    "Cannot log in, the login page rejects valid passwords.",
                    ["auth"],
                ),
                # 203 sparse, about nothing indexed -> no citation -> escalate (holding comment,
                #     since the corpus has no needs-triage label), proposes no topical label
                record("203", 103, "Telescope lens fogging at night", "Lens fogs up.", ["optics"]),
                # 204 long and detailed -> human_review; needs-triage is not a label of this
                #     repository, so nothing is proposed
                record("204", 104, "CSV export drops the last column", LONG, ["bug", "export"]),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    links = folder / "fix_links.tsv"
    # 201 and its citation 101 were fixed by the same PR 401; 202 and 102 by different ones.
    links.write_text("issue\tpr\tpr_merged\n201\t401\t1\n101\t401\t1\n202\t402\t1\n102\t302\t1\n")
    return corpus, links


def test_backtest_on_a_tiny_fixture_matches_the_figures_computed_by_hand(
    cli: Cli, tmp_path: Path
) -> None:
    corpus, links = backtest_fixture(tmp_path)
    report = cli.json(
        "backtest", "--corpus", str(corpus), "--since", "2024-02-01",
        "--fix-links", str(links), "--items",
    )  # fmt: skip
    items = {item["id"]: item for item in report.pop("items")}
    figures = {key: report.pop(key) for key in FIGURES}
    assert report == {
        "replayed": 4,
        "provider": "none",
        "classification": {"ai_investigation": 3, "human_review": 1},
        "proposals": 3,  # 201, 202, 203 (escalated, still a proposal for a person); not 204
        "proposal_rate": 0.75,
        "investigated": 3,
        "escalated": 1,  # 203
        "escalation_rate": 0.3333,
        # proposed topical labels: 201 {bug, printing}, 202 {bug, auth}: 4, of which 3 right
        # (202's bug is wrong); maintainers applied 2 + 1 + 1 + 2 = 6; 203 and 204 abstain.
        "labels": {"n": 4, "precision": 0.75, "recall": 0.5, "f1": 0.6, "abstained": 2},
        # 201 and 202 have a fixing PR and cited something; 201's citation shares PR 401.
        "fix_links": {
            "issues": 2,
            "issues_citing_same_fix": 1,
            "rate": 0.5,
            "citations": 2,
            "citations_same_fix": 1,
            "citation_rate": 0.5,
        },
        "duplicate_floor": None,  # only with --fit-before
    }
    assert items["201"]["cited"] == ["101"] and items["202"]["cited"] == ["102"]
    assert items["203"]["outcome"] == "escalate" and items["204"]["proposed"] is False
    # The same run as parts: labels, related (cited by the investigation) and the duplicate.
    assert items["201"]["parts"] == {
        "labels": ["bug", "printing"],
        "related": ["101"],
        "duplicate": ["101"],
    }
    assert items["203"]["parts"] == {} and items["204"]["parts"] == {}
    # Without --clone or --duplicates: no files or duplicates ground truth, said in the notes.
    assert figures["parts"]["files"]["fixed_issues"] == 0
    assert figures["parts"]["files"]["hit@5"] is None
    assert figures["parts"]["duplicates"]["precision"] is None
    assert figures["inputs"] == {
        "fix_links": True,
        "duplicates": False,
        "clone": None,
        "docs": None,
    }
    assert "no --clone: the files part has no ground truth" in figures["notes"]
    assert any(n.startswith("no --duplicates: no duplicate flag") for n in figures["notes"])


FIGURES = (
    "helped_share",
    "helped",
    "wrong_per_100",
    "wrong",
    "seconds_per_issue",
    "parts",
    "index_seconds",
    "inputs",
    "notes",
)


def backtest_answers(folder: Path) -> tuple[Path, Path, Path]:
    """What the maintainers did beyond labels: a clone whose squash commits are the fixing pull
    requests 401 (201 and 101) and 402 (202), duplicate pairs, and a folder of documents."""
    clone = init(folder / "widgets")
    commit(
        clone, 1, "Initial import", {"printing/duplex.py": "x = 1\n", "auth/login.py": "y = 1\n"}
    )
    commit(clone, 5, "Handle duplex trays (#401)", {"printing/duplex.py": "x = 2\n"})
    commit(clone, 6, "Accept valid passwords (#402)", {"auth/login.py": "y = 2\n"})
    pairs = folder / "duplicates.tsv"
    # 202 duplicates 102 (and cites it); 204 duplicates 103 (and cites nothing).
    pairs.write_text("id_a\tid_b\n102\t202\n204\t103\n", encoding="utf-8")
    docs = folder / "docs"
    docs.mkdir()
    (docs / "printing.md").write_text("# Printing\n", encoding="utf-8")
    return clone, pairs, docs


def test_backtest_measures_each_part_against_what_the_maintainers_did(
    cli: Cli, tmp_path: Path
) -> None:
    corpus, links = backtest_fixture(tmp_path)
    clone, pairs, docs = backtest_answers(tmp_path)
    args = [
        "backtest", "--corpus", str(corpus), "--since", "2024-02-01", "--fix-links", str(links),
        "--duplicates", str(pairs), "--clone", str(clone), "--docs", str(docs),
    ]  # fmt: skip
    report = cli.json(*args, "--items")
    # Replayed: 201 {bug, printing} citing 101 (same PR 401); 202 {bug, auth} citing 102 (a
    # known duplicate); 203 and 204 nothing. Every replayed issue has a topical label.
    assert report["helped"] == {"issues": 2, "with_ground_truth": 4}  # 201 and 202
    assert report["helped_share"] == 0.5
    # 202's bug; 201 named as a duplicate of 101 (the same fix, not a known duplicate pair)
    assert report["wrong"] == {"total": 2, "labels": 1, "duplicate": 1, "files": 0}
    assert report["wrong_per_100"] == 50.0
    assert report["proposal_rate"] == 0.75
    parts = report["parts"]
    assert parts["labels"] == {
        "precision": 0.75, "recall": 0.5, "coverage": 0.5, "labelled_issues": 4,
        "issues_with_a_label": 2, "proposed": 4, "right": 3, "unverified": 0,
    }  # fmt: skip
    # Known pairs whose later report was replayed: 202-102 and 204-103; flagged: 202-102 (right)
    # and 201-101 (wrong: 101 shares 201's fix, it is not its duplicate).
    # The corpus says nothing of how its issues were closed: every flag is verified by the pairs.
    assert parts["duplicates"] == {
        "precision": 0.5, "precision_all_flags": 0.5, "recall": 0.5, "flags": 2, "right": 1,
        "wrong": 1, "unverified": 0, "unverified_closed_as_duplicate": 0, "known_pairs": 2,
    }  # fmt: skip
    # The clone says what PRs 401 and 402 changed: 201 and 202 are fixed issues; no files today.
    assert parts["files"] == {"hit@5": 0.0, "fixed_issues": 2, "issues_with_files": 0, "hits": 0}
    # 201 (same fix 101), 202 (duplicate 102) and 204 (duplicate 103) have a known relative.
    assert parts["related"] == {
        "share": 0.6667, "issues_with_known_related": 3, "issues_citing_known": 2,
        "issues_citing": 2, "citations": 2, "citations_known": 2,
    }  # fmt: skip
    for name in ("missing_facts", "docs", "failing_checks"):
        assert parts[name] == {"count": 0, "examples": []}
    timing = report["seconds_per_issue"]
    assert 0 < timing["median"] <= timing["p95"] < 60  # generous: a loaded machine
    assert report["inputs"] == {
        "fix_links": True, "duplicates": True, "clone": str(clone), "docs": str(docs),
    }  # fmt: skip
    assert any("and for the files part, as of each issue" in n for n in report["notes"])
    assert any("--docs is indexed beside the corpus" in n for n in report["notes"])
    assert all(item["seconds"] > 0 for item in report["items"])
    text = cli.run(*args).stdout
    for shown in (
        "helped share", "50.0% (2 of 4 issues with ground truth)", "wrong per 100",
        "50.0 (labels 1, duplicate 1, files 0)", "proposal rate", "75.0% (3)",
        "seconds per issue", "median", "p95", "precision 75.0%, recall 50.0%, coverage 50.0%",
        "precision 50.0%, recall 50.0% (2 flags: 1 right, 1 wrong, 0 unverified; known pairs 2)", "Hit@5 0.0% of 2 fixed issues",
        "66.7% of 3 issues", "missing_facts", "failing_checks", str(clone), str(docs),
        "note: --docs is indexed beside the corpus",
    ):  # fmt: skip
        assert shown in text, shown


def test_backtest_refuses_a_clone_or_docs_that_are_not_what_they_say(
    cli: Cli, tmp_path: Path
) -> None:
    corpus, _ = backtest_fixture(tmp_path)
    args = ["backtest", "--corpus", str(corpus), "--since", "2024-02-01"]
    plain = tmp_path / "plain"
    plain.mkdir()
    gone = tmp_path / "gone"
    for flag, path, said in (
        ("--clone", plain, f"{plain} is not a git repository"),
        ("--clone", gone, f"the clone {gone} does not exist"),
        ("--docs", corpus, f"{corpus} is not a folder"),
    ):
        result = cli.run(*args, flag, str(path), ok=False)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == f"error: {flag}: {said}"


def test_backtest_fit_before_reports_the_floor_it_would_fit_and_refuses_bad_splits(
    cli: Cli, tmp_path: Path
) -> None:
    corpus, links = backtest_fixture(tmp_path)
    args = ["backtest", "--corpus", str(corpus), "--since", "2024-01-01"]
    report = cli.json(*args, "--fit-before", "2024-02-01", "--fix-links", str(links))
    floor = report["duplicate_floor"]
    # Three issues before the split (101-103) are far too few decisions: the default stands,
    # and on the four after it the fitted floor changes nothing.
    assert (floor["decision_issues"], floor["measured_issues"]) == (3, 4)
    assert (
        floor["fitted"]["fitted"] is False
        and "of the 30 decisions needed" in floor["fitted"]["why"]
    )
    assert floor["fitted_floor"]["floor"] == floor["default"]["floor"]
    assert floor["fitted_floor"]["suggestions"] == floor["default"]["suggestions"] >= 1
    # 201 cites 101, fixed by the same merged PR: a suggestion a team would approve.
    assert floor["default"]["right"] == 1 and floor["withheld"] == []
    text = cli.run(*args, "--fit-before", "2024-02-01", "--fix-links", str(links)).stdout
    assert "duplicate floor fitted from 3 issues before 2024-02-01" in text
    assert "the default stands" in text
    early = cli.run(*args, "--fit-before", "2023-12-01", "--fix-links", str(links), ok=False)
    assert early.returncode == 2
    assert "--fit-before must come after --since" in early.stderr
    blind = cli.run(*args, "--fit-before", "2024-02-01", ok=False)
    assert blind.returncode == 2 and "needs --duplicates or --fix-links" in blind.stderr


def test_backtest_as_of_each_issue_never_sees_the_future(cli: Cli, tmp_path: Path) -> None:
    corpus, _ = backtest_fixture(tmp_path)
    # Replay from the start: 101 is sparse but nothing existed before it (201, its near copy,
    # comes later), so it cites nothing; shown as people see it.
    text = cli.run("backtest", "--corpus", str(corpus), "--since", "2024-01-01", "--limit", "1")
    assert "escalation rate" in text.stdout and "100.0% of 1 investigated" in text.stdout


def test_backtest_bad_input_is_one_clear_line(cli: Cli, tmp_path: Path) -> None:
    result = cli.run(
        "backtest", "--corpus", str(tmp_path / "missing.jsonl"), "--since", "2024-01-01", ok=False
    )
    assert result.returncode != 0 and "missing.jsonl" in result.stderr
    assert "Traceback" not in result.stderr
    result = cli.run("backtest", "--corpus", str(tmp_path / "x.jsonl"), "--since", "soon", ok=False)
    assert (
        result.returncode != 0 and "--since" in result.stderr and "Traceback" not in result.stderr
    )
