"""One local git clone, read through the git CLI (``process.py`` runs it; docs/dependencies.md
says why the CLI rather than a library).

Reads only: commits, file stats, a bounded diff excerpt, tracked files and Python definitions.
Output formats are NUL-separated, so subjects, messages and paths with any characters parse
safely. Whole-history reads are one git call each (``commits``, ``file_stats``): the refine step
and its evaluation read thousands of commits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from resolveflow.adapters.git.errors import (
    CloneMissing,
    GitCommandFailed,
    InvalidRevision,
    ObjectMissing,
)
from resolveflow.adapters.git.process import GitProcess
from resolveflow.adapters.git.records import CommitInfo, DiffExcerpt, FileStat
from resolveflow.errors import InvalidInput

_SHA = re.compile(r"[0-9a-fA-F]{4,64}")
_FULL_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
# A revision git may be given: not an option, no whitespace or control characters.
_REV = re.compile(r"[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]*")
_LOG_FORMAT = "--format=%H%x00%cI%x00%s%x00%b"
# git grep selects the lines (POSIX ERE); python_definition reads the name back from each.
_DEFINITION = r"^[[:space:]]*(async[[:space:]]+)?(def|class)[[:space:]]+[A-Za-z_][A-Za-z0-9_]*"
_DEFINITION_NAME = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_][A-Za-z0-9_]*)")
_NO_COMMITS = "does not have any commits yet"
# Against the first parent (a merge's own change), a root commit against the empty tree; no
# external diff or textconv program from the clone's attributes ever runs.
_DIFF = ("-r", "-M", "--root", "--diff-merges=first-parent", "--no-ext-diff", "--no-textconv")
_NUMSTAT = ("diff-tree", "--stdin", "--always", "-z", "--numstat", *_DIFF)
_PATCH = ("diff-tree", "-p", "--no-commit-id", "--no-color", *_DIFF)
_LS_TREE = ("ls-tree", "-r", "-z", "--name-only", "--full-tree")
_GREP = ("grep", "-z", "-I", "-o", "-E", "-e", _DEFINITION)


class GitRepository:
    """A local clone (bare or not). Never fetches: a missing object raises ``ObjectMissing``."""

    def __init__(self, path: Path, *, timeout: float = 30.0, executable: str = "git") -> None:
        self.path = Path(path)
        self._git = GitProcess(self.path, timeout=timeout, executable=executable)

    def check(self) -> None:
        """Raise ``CloneMissing`` unless the path is a git repository itself (a folder inside
        another repository does not count), ``GitNotInstalled`` when git cannot be run."""
        if not self.path.is_dir():
            what = "does not exist" if not self.path.exists() else "is not a folder"
            raise CloneMissing(f"the clone {self.path} {what}", clone=str(self.path))
        self._git.run(["rev-parse", "--git-dir"])

    def head(self) -> str:
        """The commit id HEAD points at."""
        out = self._git.run(["rev-parse", "--verify", "--end-of-options", "HEAD^{commit}"])
        return out.decode("ascii", "replace").strip()

    def commits(self, *, until: datetime | None = None, rev: str = "HEAD") -> list[CommitInfo]:
        """Every commit reachable from ``rev``, newest first (git's order); with ``until``, only
        those whose committer date is at or before it. One git call for the whole history."""
        if until is not None and until.tzinfo is None:
            raise InvalidInput("until must carry a timezone")
        args = ["log", "-z", _LOG_FORMAT, "--end-of-options", _revision(rev), "--"]
        try:
            out = self._git.run(args)
        except GitCommandFailed as exc:
            if _NO_COMMITS in exc.message:  # an empty repository: no history yet
                return []
            raise
        commits = _parse_log(out)
        # Filtered here, not with git's --until: exact to the second whatever the commit order.
        return [c for c in commits if until is None or c.committed_at <= until]

    def file_stats(self, shas: Sequence[str]) -> dict[str, list[FileStat]]:
        """Added and removed lines per file of each commit, against its first parent (a root
        commit against the empty tree); renames under the new path; binary files as None.
        One git call for all of them (ids on stdin). Full commit ids only."""
        wanted = list(dict.fromkeys(_full_sha(sha) for sha in shas))
        if not wanted:
            return {}
        out = self._git.run(_NUMSTAT, stdin="".join(f"{sha.lower()}\n" for sha in wanted).encode())
        found = _parse_numstat(out)
        missing = [sha for sha in wanted if sha.lower() not in found]
        if missing:  # diff-tree --stdin skips an id it cannot find, silently
            raise ObjectMissing(
                f"commit {missing[0]} is missing from the clone {self.path}"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                clone=str(self.path),
            )
        return {sha: found[sha.lower()] for sha in wanted}

    def diff_excerpt(
        self, sha: str, path: str, *, max_lines: int = 40, max_bytes: int = 4000
    ) -> DiffExcerpt:
        """The start of ``path``'s unified diff in commit ``sha`` (against its first parent): at
        most ``max_lines`` whole lines and ``max_bytes`` bytes, ``truncated`` when cut. Empty when
        the commit did not change that file. A renamed file shows as added (the path limits the
        diff, so git does not see the old name)."""
        if max_lines < 1 or max_bytes < 1:
            raise InvalidInput("max_lines and max_bytes must be positive")
        args = [*_PATCH, "--end-of-options", _short_sha(sha), "--", _pathspec(path)]
        raw, more = self._git.head_of_output(args, max_bytes + 1)
        lines = raw.decode("utf-8", "replace").splitlines(keepends=True)
        kept: list[str] = []
        size = 0
        for line in lines[:max_lines]:
            size += len(line.encode())
            if size > max_bytes:
                break
            kept.append(line)
        return DiffExcerpt("".join(kept), more or len(kept) < len(lines))

    def tracked_files(self, rev: str = "HEAD") -> list[str]:
        """Every file path in ``rev``'s tree (needs trees only: works in a blobless clone)."""
        out = self._git.run([*_LS_TREE, "--end-of-options", _revision(rev)])
        return [p.decode("utf-8", "replace") for p in out.split(b"\0") if p]

    def definitions(self, rev: str = "HEAD") -> dict[str, set[str]]:
        """Python names defined (``def``, ``class``, any indentation) in ``rev``'s ``*.py``
        files: name -> the files defining it. One ``git grep`` over the tree (needs the blobs)."""
        revision = _revision(rev)
        # git grep (2.39) takes no --end-of-options; _revision() already refused a leading "-".
        out = self._git.run([*_GREP, revision, "--", "*.py"], ok=(0, 1))  # 1: no match
        prefix = f"{revision}:"
        found: dict[str, set[str]] = {}
        for line in out.decode("utf-8", "replace").split("\n"):
            name, sep, match = line.partition("\0")
            defined = python_definition(match) if sep else None
            if defined:
                found.setdefault(defined, set()).add(name.removeprefix(prefix))
        return found


def python_definition(line: str) -> str | None:
    """The name a Python ``def`` or ``class`` line defines (any indentation), else None."""
    found = _DEFINITION_NAME.match(line)
    return found.group(1) if found else None


def _revision(rev: str) -> str:
    if not _REV.fullmatch(rev):
        raise InvalidRevision(f"not a revision git may be given: {rev!r}")
    return rev


def _short_sha(sha: str) -> str:
    if not _SHA.fullmatch(sha):
        raise InvalidRevision(f"not a commit id: {sha!r}")
    return sha


def _full_sha(sha: str) -> str:
    if not _FULL_SHA.fullmatch(sha):
        raise InvalidRevision(f"not a full commit id: {sha!r}")
    return sha


def _pathspec(path: str) -> str:
    # A literal path: "*" or ":(...)" in a file name must not be read as pathspec magic.
    if not path or "\0" in path:
        raise InvalidInput(f"not a file path: {path!r}")
    return f":(literal){path}"


def _parse_log(out: bytes) -> list[CommitInfo]:
    fields = out.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()  # each record ends with NUL
    if len(fields) % 4:
        raise GitCommandFailed("git log printed output that could not be read")
    commits = []
    for at in range(0, len(fields), 4):
        sha, date, subject, body = (f.decode("utf-8", "replace") for f in fields[at : at + 4])
        if not _FULL_SHA.fullmatch(sha):
            raise GitCommandFailed(f"git log printed {sha[:50]!r} where a commit id belongs")
        when = datetime.fromisoformat(date).astimezone(UTC)
        commits.append(CommitInfo(sha, when, subject, body.rstrip("\n")))
    return commits


def _parse_numstat(out: bytes) -> dict[str, list[FileStat]]:
    """``diff-tree --stdin -z --numstat``: a commit id token, then one token per file
    ("added TAB removed TAB path"); a rename has an empty path followed by old and new path."""
    tokens = [t.decode("utf-8", "replace") for t in out.split(b"\0")]
    found: dict[str, list[FileStat]] = {}
    current: list[FileStat] | None = None
    at = 0
    while at < len(tokens):
        token = tokens[at]
        if token.count("\t") >= 2 and current is not None:
            added, removed, path = token.split("\t", 2)
            if not path and at + 2 < len(tokens):
                path, at = tokens[at + 2], at + 2
            current.append(FileStat(path, _count(added), _count(removed)))
        elif _FULL_SHA.fullmatch(token):
            current = found.setdefault(token.lower(), [])
        elif token:
            raise GitCommandFailed(
                f"git diff-tree printed {token[:50]!r} where a commit id belongs"
            )
        at += 1
    return found


def _count(text: str) -> int | None:
    return None if text == "-" else int(text)
