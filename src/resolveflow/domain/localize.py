"""Suggested files: which files of a repository a ticket most likely needs changed. Pure.

Four kinds of evidence, each scaled to [0, 1] within the ticket and added with fixed weights:

- **votes**: the files that the fixes of similar past tasks changed; a task's vote is its
  similarity squared, shared among its files by 1/sqrt(number of files) so that one sweeping
  change does not outvote several focused ones;
- **named**: a file path or file name the ticket writes (outside a traceback);
- **traceback**: files in the ticket's Python traceback frames, plus the deepest such frame again
  (where the error surfaced);
- **symbols**: identifiers in the ticket that are defined (``def``/``class``) in at most three files.

The weights were chosen on the hf-datasets dev issues of 2023 and cross-validated on halves
(docs/refine.md); they are round numbers on purpose.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

WEIGHT_VOTES = 1.0
WEIGHT_NAMED = 2.0
WEIGHT_TRACEBACK = 1.0
WEIGHT_DEEPEST_FRAME = 0.5
WEIGHT_SYMBOLS = 0.25
VOTE_POWER = 2.0
IDF_POWER = 0.5  # votes times the scaled idf to this power: measured 0, 0.5, 1 (docs/refine.md)
MAX_SYMBOL_FILES = 3  # an identifier defined in more files than this says little about which one

_FRAME = re.compile(r'File "([^"\n]+?\.py)", line (\d+), in ([\w<>]+)')
# An installed package's file: its own path follows the last site-packages (a venv's included).
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
# Python's own library (``/usr/lib/python3.11/``, ``~/.pyenv/.../lib/python3.11/``,
# ``C:\Python311\Lib\``): never a file of the repository, whatever its name.
_STDLIB = re.compile(r"(?:^|[/\\])lib(?:64)?[/\\](?:python|pypy)\d[\d.]*[/\\]|"
                     r"[/\\]python\d[\d.]*[/\\]lib[/\\]", re.IGNORECASE)  # fmt: skip
_ABSOLUTE = re.compile(r"^(?:[/\\~]|[A-Za-z]:[/\\])")
_PATH = re.compile(r"(?<![\w/.-])[\w./-]*?([\w-]+(?:/[\w-]+)*\.py)\b")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,}\b")


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str


@dataclass(frozen=True)
class PastFix:
    """A similar past task and the files its fixing commits changed."""

    task: str
    similarity: float
    files: frozenset[str]
    commits: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChangeCounts:
    """How many of a history's ``commits`` changed each file (``files``), before the ticket."""

    files: Mapping[str, int]
    commits: int

    def weight(self, path: str) -> float:
        """The file's idf over the commits, scaled to [0, 1]: 1 for a file no commit changed,
        0 for one every commit changed. A file most changes touch (the changelog, the project
        file, the test guide) says little about where this change lands."""
        if self.commits <= 0:
            return 1.0
        touched = min(self.files.get(path, 0), self.commits)
        return math.log((self.commits + 1) / (touched + 1)) / math.log(self.commits + 1)


@dataclass
class Ranked:
    path: str
    score: float
    reasons: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)


def traceback_frames(text: str) -> list[Frame]:
    """Python traceback frames in ``text``, outermost first."""
    return [Frame(p, int(n), f) for p, n, f in _FRAME.findall(text)]


def without_tracebacks(text: str) -> str:
    return _FRAME.sub(" ", text)


def match_path(mention: str, files: Collection[str]) -> list[str]:
    """The files that ``mention`` names: the longest suffix of its path that ends a tracked path
    (``/usr/lib/python3/site-packages/datasets/load.py`` -> ``src/datasets/load.py``).

    A path outside the repository never matches by its base name alone: Python's own library
    (``/usr/lib/python3.11/mailbox.py``) matches nothing; an installed package's file matches
    only with its whole path inside the package (``datasets/load.py``), and any other absolute
    path with at least its last folder (``mail/files.py``). A relative path is the repository's
    own and may match by its name."""
    path = mention.replace("\\", "/")
    installed = list(_INSTALLED.finditer(path))
    if installed:
        path, shortest = path[installed[-1].end() :], None
    elif _STDLIB.search(path):
        return []
    else:
        shortest = 2 if _ABSOLUTE.match(path) else 1
    parts = [p for p in path.strip("./").split("/") if p]
    if shortest is None and len(parts) == 1:  # an installed top-level module: at most src/x.py
        return sorted(
            f for f in files if f == parts[0] or (f.count("/") == 1 and f.endswith("/" + parts[0]))
        )
    for start in range(len(parts) - (shortest or len(parts)) + 1):
        suffix = "/".join(parts[start:])
        hits = sorted(f for f in files if f == suffix or f.endswith("/" + suffix))
        if hits:
            return hits
    return []


def named_files(text: str, files: Collection[str]) -> Counter[str]:
    found: Counter[str] = Counter()
    for mention in _PATH.finditer(without_tracebacks(text)):
        for path in match_path(mention.group(), files):
            found[path] += 1
    return found


def frame_files(frames: Sequence[Frame], files: Collection[str]) -> tuple[Counter[str], set[str]]:
    """Every frame's file (counted), and the deepest frame's file that is tracked."""
    counts: Counter[str] = Counter()
    for frame in frames:
        counts.update(match_path(frame.path, files))
    deepest: set[str] = set()
    for frame in reversed(frames):
        hits = match_path(frame.path, files)
        if hits:
            deepest.update(hits)
            break
    return counts, deepest


def symbol_files(text: str, definitions: Mapping[str, Collection[str]]) -> dict[str, float]:
    """Files defining identifiers the ticket uses; an identifier defined in k files gives 1/k."""
    found: dict[str, float] = {}
    for name in set(_IDENT.findall(without_tracebacks(text))):
        where = set(definitions.get(name, ()))
        if 0 < len(where) <= MAX_SYMBOL_FILES:
            for path in where:
                found[path] = found.get(path, 0.0) + 1 / len(where)
    return found


def vote_files(fixes: Iterable[PastFix]) -> tuple[Counter[str], dict[str, list[str]]]:
    votes: Counter[str] = Counter()
    behind: dict[str, list[str]] = {}
    for fix in fixes:
        if not fix.files or fix.similarity <= 0:
            continue
        share = fix.similarity**VOTE_POWER / math.sqrt(len(fix.files))
        for path in fix.files:
            votes[path] += share
            commits = behind.setdefault(path, [])
            commits.extend(c for c in fix.commits if c not in commits)
    return votes, behind


def _scaled(counts: Mapping[str, float]) -> dict[str, float]:
    top = max(counts.values(), default=0.0)
    return {k: v / top for k, v in counts.items()} if top > 0 else {}


def suggest_files(
    text: str,
    files: Collection[str],
    definitions: Mapping[str, Collection[str]],
    fixes: Sequence[PastFix],
    *,
    limit: int = 10,
    allowed: Callable[[str], bool] = lambda path: True,
    counts: ChangeCounts | None = None,
) -> list[Ranked]:
    """The ``limit`` best files for the ticket ``text`` that ``allowed`` lets through (the
    repository's file rules), best first (ties by path).

    ``files`` are the repository's tracked files when the ticket was written; ``definitions``
    maps an identifier to the files defining it; ``fixes`` are the similar past tasks' fixes.
    Whatever kind of evidence names a file, a file ``allowed`` refuses is never returned: the
    check is on the ranking itself, not on each kind's inputs (a name defined in a test file, a
    fix that changed one). With ``counts``, a file's votes are weighed by how rarely commits
    change it (``ChangeCounts.weight``): a similar fix's sweeping files do not crowd out its
    own.
    """
    votes, behind = vote_files(fixes)
    if counts is not None:
        votes = Counter({path: v * counts.weight(path) ** IDF_POWER for path, v in votes.items()})
    frames, deepest = frame_files(traceback_frames(text), files)
    evidence: list[tuple[float, dict[str, float], str]] = [
        (WEIGHT_VOTES, _scaled(votes), "changed by the fixes of similar tasks"),
        (WEIGHT_NAMED, _scaled(named_files(text, files)), "named in the ticket"),
        (WEIGHT_TRACEBACK, _scaled(frames), "in the ticket's traceback"),
        (WEIGHT_DEEPEST_FRAME, dict.fromkeys(deepest, 1.0), "where the traceback ends"),
        (
            WEIGHT_SYMBOLS,
            _scaled(symbol_files(text, definitions)),
            "defines a name the ticket uses",
        ),
    ]
    ranked: dict[str, Ranked] = {}
    for weight, scores, reason in evidence:
        for path, value in scores.items():
            entry = ranked.setdefault(path, Ranked(path, 0.0, commits=behind.get(path, [])))
            entry.score += weight * value
            entry.reasons.append(reason)
    best = sorted((r for r in ranked.values() if allowed(r.path)), key=lambda r: (-r.score, r.path))
    return best[:limit]
