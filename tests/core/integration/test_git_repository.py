"""The git wrapper against real repositories built here with the git CLI: history, file stats,
bounded diff excerpts, tracked files, and each error (missing clone, no git, a partial clone's
missing object that must not be fetched, a command that hangs)."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from git_repos import commit, git, git_env
from resolveflow.adapters.git import (
    CloneMissing,
    FileStat,
    GitNotInstalled,
    GitRepository,
    GitTimeout,
    InvalidRevision,
    ObjectMissing,
    process,
)
from resolveflow.adapters.git.repository import python_definition
from resolveflow.errors import ErrorCategory
from resolveflow.refine.domain.changes import fixing_commits

ODD_SUBJECT = "Odd: tab\there, «ünïcode», a \x1e separator and a % sign"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("git") / "src"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=git_env(1), check=True)
    loader = "".join(f"line {i}\n" for i in range(10))
    shas = {
        "initial": commit(repo, 1, "Initial import", {
            "src/loader.py": "def load(path):\n" + loader,
            "src/util.py": "class Helper:\n    def tidy(self):\n        pass\n",
            "README.md": "# demo\n",
        }),
        "squash": commit(repo, 2, "Fix loader (#7)", {
            "src/loader.py": "def load(path):\n" + loader.replace("line 3\n", "line 3a\nline 3b\n"),
        }),
        "fixes": commit(repo, 3, "Handle empty files\n\nLonger text (#12) here.\n\nfixes #3", {
            "src/util.py": "class Helper:\n    def tidy(self):\n        return None\n",
        }),
    }  # fmt: skip
    git(repo, "mv", "src/util.py", "src/helpers.py")
    shas["rename"] = commit(repo, 4, "Rename util to helpers (#8)", {})
    shas["binary"] = commit(repo, 5, "Add logo", {"logo.png": b"\x89PNG\x00\x01\x02" * 50})
    big = "".join(f"row {i} of the generated table\n" for i in range(500))
    shas["big"] = commit(repo, 6, "Regenerate table", {"data/big.txt": big})
    shas["odd"] = commit(repo, 7, f"{ODD_SUBJECT}\n\nbody with \x1e and\ttabs\n", {
        "docs/my file ü.md": "text\n",
    })  # fmt: skip
    return repo, shas


def test_commits_newest_first_with_utc_dates_subjects_and_messages(built: tuple) -> None:
    repo, shas = built
    commits = GitRepository(repo).commits()
    order = ["odd", "big", "binary", "rename", "fixes", "squash", "initial"]
    assert [c.sha for c in commits] == [shas[name] for name in order]
    assert commits[-1].committed_at == datetime(2023, 1, 1, 10, 0, tzinfo=UTC)
    assert all(c.committed_at.utcoffset() is not None for c in commits)
    by_sha = {c.sha: c for c in commits}
    assert by_sha[shas["squash"]].subject == "Fix loader (#7)"
    assert by_sha[shas["squash"]].message == ""
    assert by_sha[shas["fixes"]].message == "Longer text (#12) here.\n\nfixes #3"
    assert by_sha[shas["odd"]].subject == ODD_SUBJECT
    assert by_sha[shas["odd"]].message == "body with \x1e and\ttabs"
    found = fixing_commits(commits, 3, {7})
    assert [c.sha for c in found] == [shas["squash"], shas["fixes"]]


def test_commits_until_keeps_those_committed_at_or_before(built: tuple) -> None:
    repo, shas = built
    until = datetime(2023, 1, 3, 10, 0, tzinfo=UTC)  # exactly the third commit's time
    got = GitRepository(repo).commits(until=until)
    assert [c.sha for c in got] == [shas["fixes"], shas["squash"], shas["initial"]]
    assert GitRepository(repo).commits(until=datetime(2022, 1, 1, tzinfo=UTC)) == []
    assert [c.sha for c in GitRepository(repo).commits(rev=shas["squash"])] == [
        shas["squash"], shas["initial"],
    ]  # fmt: skip


def test_file_stats_for_many_commits_in_one_call(built: tuple) -> None:
    repo, shas = built
    stats = GitRepository(repo).file_stats(list(shas.values()))
    assert set(stats) == set(shas.values())
    assert stats[shas["squash"]] == [FileStat("src/loader.py", 2, 1)]
    assert stats[shas["fixes"]] == [FileStat("src/util.py", 1, 1)]
    assert stats[shas["rename"]] == [FileStat("src/helpers.py", 0, 0)]
    assert stats[shas["binary"]] == [FileStat("logo.png", None, None)]
    assert stats[shas["big"]] == [FileStat("data/big.txt", 500, 0)]
    assert stats[shas["odd"]] == [FileStat("docs/my file ü.md", 1, 0)]
    assert {s.path for s in stats[shas["initial"]]} == {"README.md", "src/loader.py", "src/util.py"}
    assert GitRepository(repo).file_stats([]) == {}


def test_diff_excerpt_is_bounded_and_says_when_it_was_cut(built: tuple) -> None:
    repo, shas = built
    git_repo = GitRepository(repo)
    small = git_repo.diff_excerpt(shas["squash"], "src/loader.py")
    assert not small.truncated
    assert small.text.startswith("diff --git a/src/loader.py b/src/loader.py\n")
    assert "-line 3\n+line 3a\n+line 3b\n" in small.text
    big = git_repo.diff_excerpt(shas["big"], "data/big.txt", max_lines=12)
    assert big.truncated and len(big.text.splitlines()) == 12
    assert big.text.splitlines()[-1].startswith("+row ")
    tiny = git_repo.diff_excerpt(shas["big"], "data/big.txt", max_lines=1000, max_bytes=300)
    assert tiny.truncated and 0 < len(tiny.text.encode()) <= 300 and tiny.text.endswith("\n")
    whole = git_repo.diff_excerpt(shas["big"], "data/big.txt", max_lines=600, max_bytes=10**6)
    assert not whole.truncated and whole.text.count("\n+row ") == 500
    assert git_repo.diff_excerpt(shas["odd"], "docs/my file ü.md").text.endswith("+text\n")
    untouched = git_repo.diff_excerpt(shas["squash"], "README.md")
    assert untouched.text == "" and not untouched.truncated


def test_tracked_files_head_and_definitions(built: tuple) -> None:
    repo, shas = built
    git_repo = GitRepository(repo)
    assert git_repo.head() == shas["odd"]
    assert set(git_repo.tracked_files()) == {
        "README.md", "data/big.txt", "docs/my file ü.md", "logo.png", "src/helpers.py",
        "src/loader.py",
    }  # fmt: skip
    assert set(git_repo.tracked_files(shas["initial"])) == {
        "README.md", "src/loader.py", "src/util.py",
    }  # fmt: skip
    assert git_repo.definitions() == {
        "load": {"src/loader.py"}, "Helper": {"src/helpers.py"}, "tidy": {"src/helpers.py"},
    }  # fmt: skip
    assert git_repo.definitions(shas["initial"])["Helper"] == {"src/util.py"}


def test_check_accepts_a_clone_and_a_bare_clone(built: tuple, tmp_path: Path) -> None:
    repo, _ = built
    GitRepository(repo).check()
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    GitRepository(bare).check()
    assert len(GitRepository(bare).commits()) == 7


def test_missing_path_and_plain_folders_are_not_clones(built: tuple, tmp_path: Path) -> None:
    repo, _ = built
    (tmp_path / "plain").mkdir()
    (repo / "not-a-clone").mkdir(exist_ok=True)  # inside a work tree: still not a clone itself
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "nope", tmp_path / "plain", repo / "not-a-clone", tmp_path / "file"):
        with pytest.raises(CloneMissing) as caught:
            GitRepository(path).check()
        assert str(path) in caught.value.message and "\n" not in caught.value.message
        assert caught.value.category is ErrorCategory.CONFIGURATION


def test_git_not_installed_is_told_apart_from_a_failed_command(built: tuple) -> None:
    repo, shas = built
    with pytest.raises(GitNotInstalled) as caught:
        GitRepository(repo, executable="no-such-git").check()
    assert caught.value.message == "git is not installed (looked for 'no-such-git' on PATH)"
    with pytest.raises(ObjectMissing) as missing:
        GitRepository(repo).file_stats(["0" * 40, shas["squash"]])
    assert "0" * 40 in missing.value.message
    assert missing.value.category is ErrorCategory.NOT_FOUND
    with pytest.raises(ObjectMissing):
        GitRepository(repo).diff_excerpt("deadbeef" * 5, "src/loader.py")
    with pytest.raises(ObjectMissing):
        GitRepository(repo).commits(rev="no-such-branch")


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.diff_excerpt("HEAD; rm -rf /", "x"),
        lambda r: r.diff_excerpt("--output=/tmp/x", "x"),
        lambda r: r.file_stats(["abc123"]),  # too short: diff-tree --stdin needs full ids
        lambda r: r.commits(rev="--all"),
        lambda r: r.tracked_files("-r"),
        lambda r: r.definitions("HEAD --"),
    ],
)
def test_bad_revisions_are_refused_before_git_runs(built: tuple, call: object) -> None:
    repo, _ = built
    with pytest.raises(InvalidRevision):
        call(GitRepository(repo, executable="no-such-git"))  # type: ignore[operator]


def _missing_objects(clone: Path) -> set[str]:
    # --missing=print lists absent objects and never fetches them.
    out = git(clone, "rev-list", "--objects", "--missing=print", "--all")
    return {line[1:] for line in out.splitlines() if line.startswith("?")}


@pytest.mark.parametrize("guards", ["both", "protocol.allow=never alone"])
def test_a_partial_clone_reports_a_missing_object_and_never_fetches_it(
    built: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guards: str
) -> None:
    if guards != "both":  # as on a git older than 2.39.4, which ignores GIT_NO_LAZY_FETCH
        environment = process.git_environment

        def without_variable(clone: Path) -> dict[str, str]:
            return {k: v for k, v in environment(clone).items() if k != "GIT_NO_LAZY_FETCH"}

        monkeypatch.setattr(process, "git_environment", without_variable)
    repo, shas = built
    git(repo, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    git(
        tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{repo}", str(clone)
    )
    blob = git(clone, "rev-parse", f"{shas['big']}:data/big.txt")
    before = _missing_objects(clone)
    assert blob in before
    partial = GitRepository(clone)
    partial.check()
    assert partial.commits()[0].sha == shas["odd"]  # commits and trees are there
    assert "data/big.txt" in partial.tracked_files()
    with pytest.raises(ObjectMissing) as caught:
        partial.diff_excerpt(shas["big"], "data/big.txt")
    assert str(clone) in caught.value.message and "\n" not in caught.value.message
    with pytest.raises(ObjectMissing):
        partial.file_stats([shas["big"]])
    assert _missing_objects(clone) == before  # nothing was fetched


def test_a_hanging_command_times_out(built: tuple, tmp_path: Path) -> None:
    repo, _ = built
    stuck = tmp_path / "stuck"
    git(tmp_path, "clone", "-q", str(repo), str(stuck))
    (stuck / ".git" / "packed-refs").unlink(missing_ok=True)
    os.mkfifo(stuck / ".git" / "packed-refs")  # git blocks opening it: no writer ever comes
    slow = GitRepository(stuck, timeout=0.3)
    with pytest.raises(GitTimeout) as caught:
        slow.head()
    assert "git rev-parse" in caught.value.message and "0.3 s" in caught.value.message
    assert caught.value.category is ErrorCategory.UNAVAILABLE
    with pytest.raises(GitTimeout):
        slow.diff_excerpt("a" * 40, "x")  # the bounded reader has its deadline too


def test_a_merge_commit_is_counted_against_its_first_parent(tmp_path: Path) -> None:
    repo = tmp_path / "merges"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=git_env(1), check=True)
    commit(repo, 1, "base", {"a.txt": "a\n"})
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, 2, "side work", {"b.txt": "b\nb\n"})
    git(repo, "checkout", "-q", "main")
    commit(repo, 3, "main work", {"c.txt": "c\n"})
    git(repo, "merge", "-q", "--no-ff", "--no-edit", "side", day=4)
    merge = git(repo, "rev-parse", "HEAD")
    assert GitRepository(repo).file_stats([merge]) == {merge: [FileStat("b.txt", 2, 0)]}
    assert "+b\n+b\n" in GitRepository(repo).diff_excerpt(merge, "b.txt").text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("def load(path):", "load"),
        ("    async def fetch():", "fetch"),
        ("class Builder(Base):", "Builder"),
        ("  class _Inner:", "_Inner"),
        ("# def commented()", None),
        ("undefined = 1", None),
        ("x = 'def f'", None),
    ],
)
def test_python_definition(line: str, expected: str | None) -> None:
    assert python_definition(line) == expected
