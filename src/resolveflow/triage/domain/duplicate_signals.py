"""Is this issue a duplicate of an earlier one? One score in [0, 1] from signals that mean the
same on any corpus (pure; ``triage/parts.py`` reads the retrieved issues and makes the part).

The candidates are the first few earlier issues retrieval found for the report (as of its
creation in a backtest). Each is read with:

- **relevance**: retrieval's calibrated relevance of the candidate (docs/retrieval.md);
- **margin**: how far it stands above the best other candidate (a report many earlier issues
  match equally, such as a template filled in for one more web site, is not a duplicate of one);
- **title overlap**: the words the two titles share, each weighted by how rare it is among the
  titles of every issue retrieved for this report (a word most of them carry, "broken" or the
  product's name, says little; a word only these two carry says they are about one thing);
- **names differ**: both titles name a web host or a file and none is the same (the same
  complaint about another site or another file is another issue): the score is halved;
- **shared error**: the report and the candidate quote the same error line (``KeyError: ...``)
  or the same deepest traceback frame: a third of the distance left to 1 is added;
- **reporter says so**: the report itself says it duplicates the candidate ("duplicate of #N",
  "same as bug N"): the score is at least ``REPORTER_SAYS``.

Only the report's own text at its creation and what retrieval returned are read; never what
happened to the report later (its resolution, its comments).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from resolveflow.triage.domain.diagnosis import Snippet

CANDIDATES = 5  # the first retrieved issues read as possible originals
REPORTER_SAYS = 0.9
# The floor a candidate must reach to be shown. No floor reaches precision 0.5 on the dev pairs
# (SeaMonkey); 0.45 is where the verified precision is highest (0.47: 7 right, 8 wrong of 24
# flags, about 2.5 per 100 issues); docs/investigation.md gives the curve.
DUPLICATE_FLOOR = 0.45
NAMES_DIFFER_FACTOR = 0.5
SHARED_ERROR_GAIN = 1 / 3

_STOP = frozenset(
    re.findall(
        r"\w+",
        "a an the and or of to in on for with is are was be it its this that not no does doesn t "
        "don can cannot when after from by as at i my me you we if but so",
    )
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")
_HOST = re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,6}\b")
_FILE_SUFFIXES = (".xhtml", ".html", ".js", ".jsm", ".py", ".rs", ".css", ".xul", ".json", ".ts")
_FILE = re.compile(r"\b[\w-]+\.(?:xhtml|html|jsm?|py|rs|css|xul|json|ts|cpp|h)\b")
_ERROR_LINE = re.compile(r"\b([A-Z]\w*(?:Error|Exception)): ?([^\n]{0,160})")
_FRAME = re.compile(r'File "([^"\n]+)", line \d+, in (\w+)')
_SAYS = re.compile(
    r"(?:duplicate of|dup(?:e)? of|same as|duplicates)\s+(?:bug\s*|issue\s*)?#?(\d+)", re.I
)


@dataclass(frozen=True)
class DuplicateSignals:
    relevance: float
    margin: float
    title_overlap: float
    shared_words: tuple[str, ...]
    names_differ: bool
    shared_error: str | None
    reporter_says: bool


@dataclass(frozen=True)
class DuplicateCandidate:
    """The likeliest original of a report, with its score and the signals behind it."""

    snippet: Snippet
    score: float
    signals: DuplicateSignals

    @property
    def why(self) -> str:
        return why_text(self.signals)


def likely_original(
    title: str, body: str, found: Sequence[Snippet], *, depth: int = CANDIDATES
) -> DuplicateCandidate | None:
    """The candidate among the first ``depth`` earlier issues of ``found`` (retrieval's order,
    issues only) with the highest score, or None when there is none."""
    issues = [s for s in found if s.kind == "issue"]
    if not issues:
        return None
    weight = _rarity([s.title for s in issues])
    scored = [
        _candidate(title, body, snippet, issues[:depth], weight) for snippet in issues[:depth]
    ]
    return max(scored, key=lambda c: c.score)


def duplicate_score(signals: DuplicateSignals) -> float:
    """The signals as one score in [0, 1] (see the module's docstring)."""
    margin = min(max(signals.margin, 0.0), 1.0)
    score = (signals.relevance + margin + signals.title_overlap) / 3
    if signals.names_differ:
        score *= NAMES_DIFFER_FACTOR
    if signals.shared_error is not None:
        score += (1 - score) * SHARED_ERROR_GAIN
    if signals.reporter_says:
        score = max(score, REPORTER_SAYS)
    return round(min(max(score, 0.0), 1.0), 3)


def why_text(signals: DuplicateSignals) -> str:
    """The signals in plain words, the strongest first."""
    reasons: list[str] = []
    if signals.reporter_says:
        reasons.append("the report says it is the same")
    if signals.shared_error is not None:
        reasons.append(f"both quote the error '{signals.shared_error}'")
    if signals.shared_words:
        words = ", ".join(f"'{word}'" for word in signals.shared_words)
        reasons.append(f"the titles share {words}")
    reasons.append(f"the texts are alike (relevance {signals.relevance:.2f})")
    return "; ".join(reasons)


def _candidate(
    title: str,
    body: str,
    snippet: Snippet,
    issues: Sequence[Snippet],
    weight: dict[str, float],
) -> DuplicateCandidate:
    others = [s.relevance for s in issues if s is not snippet]
    overlap, shared = _title_overlap(title, snippet.title, weight)
    signals = DuplicateSignals(
        relevance=round(snippet.relevance, 3),
        margin=round(snippet.relevance - max(others, default=0.0), 3),
        title_overlap=round(overlap, 3),
        shared_words=shared,
        names_differ=_names_differ(title, snippet.title),
        shared_error=_shared_error(f"{title}\n{body}", f"{snippet.title}\n{snippet.text}"),
        reporter_says=snippet.external_id in _said(f"{title}\n{body}"),
    )
    return DuplicateCandidate(snippet, duplicate_score(signals), signals)


def shared_title_words(
    title: str, others: Sequence[str], titles: Sequence[str]
) -> list[tuple[str, ...]]:
    """For each of ``others``, the words it shares with ``title``, rarest among ``titles`` (the
    retrieved issues') first, at most three: why an earlier issue looks related, in its own
    words."""
    weight = _rarity(titles)
    return [_title_overlap(title, other, weight)[1] for other in others]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def _rarity(titles: Sequence[str]) -> dict[str, float]:
    """Each word's weight: the log of how rare it is among the retrieved issues' titles."""
    counts = Counter(word for t in titles for word in _words(t))
    size = len(titles)
    return {word: math.log((size + 1) / (count + 0.5)) for word, count in counts.items()}


def _title_overlap(
    title: str, other: str, weight: dict[str, float]
) -> tuple[float, tuple[str, ...]]:
    """A cosine of the two titles' word sets under ``weight`` (a word of the report retrieved
    in no title is as rare as can be), and the shared words, rarest first, at most three."""
    rarest = math.log(len(weight) + 2) if weight else 1.0

    def w(word: str) -> float:
        return max(weight.get(word, rarest), 0.0)

    mine, theirs = _words(title), _words(other)
    shared = mine & theirs
    norm = math.sqrt(sum(w(x) for x in mine) * sum(w(x) for x in theirs))
    overlap = sum(w(x) for x in shared) / norm if norm else 0.0
    ranked = sorted((x for x in shared if w(x) > 0), key=lambda x: (-w(x), x))
    return min(overlap, 1.0), tuple(ranked[:3])


def _names(title: str) -> set[str]:
    text = title.lower()
    hosts = {h.removeprefix("www.") for h in _HOST.findall(text) if not h.endswith(_FILE_SUFFIXES)}
    return {h for h in hosts if not h.replace(".", "").isdigit()} | set(_FILE.findall(text))


def _names_differ(title: str, other: str) -> bool:
    mine, theirs = _names(title), _names(other)
    return bool(mine and theirs and not mine & theirs)


def _errors(text: str) -> set[str]:
    found = _ERROR_LINE.findall(text)
    lines = {f"{kind}: {message.strip()}".strip().rstrip(":") for kind, message in found}
    # Only the deepest frame: the outer ones (a library's entry points) are shared by most reports.
    frames = _FRAME.findall(text)[-1:]
    deepest = {f"{path.rsplit('/', 1)[-1]} in {func}" for path, func in frames}
    return {line for line in lines if len(line) > 12} | deepest


def _shared_error(text: str, other: str) -> str | None:
    shared = _errors(text) & _errors(other)
    return min(shared, key=lambda s: (-len(s), s))[:120] if shared else None


def _said(text: str) -> set[str]:
    return set(_SAYS.findall(text))
