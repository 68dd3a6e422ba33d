"""What triage proposed on each replayed issue, part by part, measured against what the
maintainers did: the figures a team would judge it by. Pure: a function of the replay's records
(``ReplayRecord``) and the corpus's ground truth (``GroundTruth``); ``triage/backtest.py`` makes
both. The definitions (docs/investigation.md says the same in words):

- a part's item is **verified right** when it is a topical label the maintainers applied, a
  related issue known to be a duplicate of the issue or fixed by the same merged pull request, a
  duplicate flag naming a known duplicate, or one of the first five suggested files that the
  issue's fixing pull request changed;
- it is **verified wrong** when it is a topical label the maintainers did not apply on an issue
  that has at least one topical label; a duplicate flag on an issue the maintainers closed as
  something other than a duplicate (Bugzilla's ``resolution``, GitHub's ``state_reason``), or
  naming another issue than its known duplicates (``duplicates.tsv``), or, where pairs are given
  but the corpus says nothing of how issues were closed, naming an issue not paired with it; a
  files part on an issue with a known fix whose first five files include none the fix changed is
  one wrong part;
- anything else is unverified: a label on an issue with no topical label, a duplicate flag on an
  issue closed as a duplicate with no pair listed (right or wrong, nobody says which) or not
  closed at all, a related issue not known to relate (it may still relate), a docs answer, a
  request for missing facts, a failing check.

``helped_share``: replayed issues with at least one item verified right, over the replayed issues
with any ground truth (a topical label, an earlier known duplicate, an earlier issue fixed by the
same pull request, or a fix whose changed files are known). ``wrong_per_100``: items and parts
verified wrong per 100 replayed issues. A share whose denominator is zero is None, never 0.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any

from resolveflow.triage.domain.parts import PartName

TOP_FILES = 5  # a suggested file counts when it is among the first five
EXAMPLES = 5  # issues shown per unverified part with ``--items``


@dataclass(frozen=True)
class ProposedPart:
    """One part and its items, best first: labels, issue ids (related, duplicate), file paths,
    document ids, the names of the missing facts, the names of failing checks."""

    name: PartName
    items: tuple[str, ...]


@dataclass(frozen=True)
class ReplayRecord:
    """What triage proposed on one replayed issue, and how long the replay took."""

    issue: str
    proposed: bool  # the run would have ended with a proposal for a person
    seconds: float
    parts: tuple[ProposedPart, ...] = ()

    def items(self, name: PartName) -> tuple[str, ...]:
        return tuple(item for part in self.parts if part.name is name for item in part.items)

    def as_json(self) -> dict[str, list[str]]:
        return {name.value: list(self.items(name)) for name in PartName if self.items(name)}


class ClosedAs(StrEnum):
    """How the maintainers closed an issue, as far as a duplicate flag is concerned."""

    DUPLICATE = "duplicate"  # resolution DUPLICATE, state_reason duplicate, a duplicate label
    OTHER = "other"  # closed, and said to be something else (FIXED, completed, not planned, ...)


class DuplicateVerdict(StrEnum):
    RIGHT = "right"
    WRONG = "wrong"
    UNVERIFIED = "unverified"


@dataclass(frozen=True)
class GroundTruth:
    """What the maintainers did, per issue id. ``duplicates`` is None when no pairs were given;
    ``closed_as`` None when the corpus says nothing of how its issues were closed (then, with
    pairs, a flag not naming a pair is wrong, and without, a flag cannot be verified either way);
    the other mappings leave out issues with none."""

    labels: Mapping[str, frozenset[str]]  # the topical labels the issue ended with
    duplicates: Mapping[str, frozenset[str]] | None  # earlier reports known as its duplicates
    same_fix: Mapping[str, frozenset[str]] = field(default_factory=dict)  # earlier, same merged PR
    fixed_files: Mapping[str, frozenset[str]] = field(default_factory=dict)  # what its fix changed
    closed_as: Mapping[str, ClosedAs] | None = None  # issues whose closing is known

    def gold_labels(self, issue: str) -> frozenset[str]:
        return self.labels.get(issue, frozenset())

    def duplicates_of(self, issue: str) -> frozenset[str]:
        return (self.duplicates or {}).get(issue, frozenset())

    def known_related(self, issue: str) -> frozenset[str]:
        return self.duplicates_of(issue) | self.same_fix.get(issue, frozenset())

    def fix_files(self, issue: str) -> frozenset[str]:
        return self.fixed_files.get(issue, frozenset())

    def any_for(self, issue: str) -> bool:
        return bool(self.gold_labels(issue) or self.known_related(issue) or self.fix_files(issue))

    @property
    def verifies_duplicates(self) -> bool:
        return self.duplicates is not None or self.closed_as is not None

    def duplicate_verdict(self, issue: str, original: str) -> DuplicateVerdict:
        """A flag saying ``issue`` duplicates ``original``, against what the maintainers did."""
        known = self.duplicates_of(issue)
        if original in known:
            return DuplicateVerdict.RIGHT
        if known:
            return DuplicateVerdict.WRONG  # its original is known, and it is another
        if self.closed_as is None:
            # A corpus that says nothing of closing: the pairs are the whole truth, if given.
            known_all = self.duplicates is not None
            return DuplicateVerdict.WRONG if known_all else DuplicateVerdict.UNVERIFIED
        if self.closed_as.get(issue) is ClosedAs.OTHER:
            return DuplicateVerdict.WRONG
        return DuplicateVerdict.UNVERIFIED  # closed as a duplicate of an unlisted one, or open


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass(frozen=True)
class LabelFigures:
    labelled: int  # replayed issues with at least one topical label
    covered: int  # ... of which a label was proposed on
    proposed: int  # labels proposed on labelled issues
    right: int  # ... that the maintainers applied
    gold: int  # topical labels of the labelled issues
    unverified: int  # labels proposed on issues with no topical label

    def as_json(self) -> dict[str, Any]:
        return {
            "precision": _rounded(share(self.right, self.proposed)),
            "recall": _rounded(share(self.right, self.gold)),
            "coverage": _rounded(share(self.covered, self.labelled)),
            "labelled_issues": self.labelled,
            "issues_with_a_label": self.covered,
            "proposed": self.proposed,
            "right": self.right,
            "unverified": self.unverified,
        }


@dataclass(frozen=True)
class DuplicateFigures:
    known: bool  # duplicate pairs were given
    flags: int  # issues named as a duplicate, over every replayed issue
    right: int  # ... known pairs
    pairs: int  # known pairs whose later report was replayed
    wrong: int = 0  # flags verified wrong
    unverified: int = 0  # flags neither right nor wrong
    closed_as_duplicate: int = 0  # ... of them on issues closed as a duplicate (no pair listed)
    verifiable: bool = False  # pairs were given or the corpus says how issues were closed

    def as_json(self) -> dict[str, Any]:
        return {
            "precision": _rounded(share(self.right, self.right + self.wrong))
            if self.verifiable
            else None,
            # Every flag not naming a known pair counted wrong (the figure before verification).
            "precision_all_flags": _rounded(share(self.right, self.flags)) if self.known else None,
            "recall": _rounded(share(self.right, self.pairs)) if self.known else None,
            "flags": self.flags,
            "right": self.right,
            "wrong": self.wrong,
            "unverified": self.unverified,
            "unverified_closed_as_duplicate": self.closed_as_duplicate,
            "known_pairs": self.pairs if self.known else None,
        }


@dataclass(frozen=True)
class FileFigures:
    fixed: int  # replayed issues whose fix's changed files are known
    suggested: int  # ... of which files were suggested for
    hits: int  # ... with a changed file among the first five

    def as_json(self) -> dict[str, Any]:
        return {
            "hit@5": _rounded(share(self.hits, self.fixed)),
            "fixed_issues": self.fixed,
            "issues_with_files": self.suggested,
            "hits": self.hits,
        }


@dataclass(frozen=True)
class RelatedFigures:
    known: int  # replayed issues with an earlier known duplicate or same-fix issue
    citing_known: int  # ... of which the related part names one
    citing: int  # replayed issues with a related part
    citations: int
    citations_known: int

    def as_json(self) -> dict[str, Any]:
        return {
            "share": _rounded(share(self.citing_known, self.known)),
            "issues_with_known_related": self.known,
            "issues_citing_known": self.citing_known,
            "issues_citing": self.citing,
            "citations": self.citations,
            "citations_known": self.citations_known,
        }


@dataclass(frozen=True)
class CountFigures:
    """A part with no ground truth: how many issues got it, and a few of them."""

    count: int
    examples: tuple[tuple[str, tuple[str, ...]], ...]

    def as_json(self, examples: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {"count": self.count}
        if examples:
            data["examples"] = [{"issue": i, "items": list(items)} for i, items in self.examples]
        return data


@dataclass(frozen=True)
class Seconds:
    median: float | None
    p95: float | None

    def as_json(self) -> dict[str, float | None]:
        return {"median": _rounded(self.median), "p95": _rounded(self.p95)}


@dataclass(frozen=True)
class BacktestFigures:
    replayed: int
    proposals: int
    with_truth: int  # replayed issues with any ground truth
    helped: int  # ... with at least one item verified right
    wrong: Mapping[PartName, int]  # items (labels, duplicate flags) and parts (files) wrong
    labels: LabelFigures
    duplicates: DuplicateFigures
    files: FileFigures
    related: RelatedFigures
    counted: Mapping[PartName, CountFigures]  # docs, missing facts, failing checks
    seconds: Seconds

    @property
    def wrong_total(self) -> int:
        return sum(self.wrong.values())

    def as_json(self, examples: bool = False) -> dict[str, Any]:
        per_100 = share(100 * self.wrong_total, self.replayed)
        parts: dict[str, Any] = {
            "labels": self.labels.as_json(),
            "duplicates": self.duplicates.as_json(),
            "files": self.files.as_json(),
            "related": self.related.as_json(),
        }
        parts.update({name.value: c.as_json(examples) for name, c in self.counted.items()})
        return {
            "helped_share": _rounded(share(self.helped, self.with_truth)),
            "helped": {"issues": self.helped, "with_ground_truth": self.with_truth},
            "wrong_per_100": _rounded(per_100),
            "wrong": {"total": self.wrong_total, **{k.value: v for k, v in self.wrong.items()}},
            "proposal_rate": _rounded(share(self.proposals, self.replayed)),
            "seconds_per_issue": self.seconds.as_json(),
            "parts": parts,
        }


COUNTED = (PartName.DOCS, PartName.MISSING_FACTS, PartName.FAILING_CHECKS)


def backtest_figures(records: Sequence[ReplayRecord], truth: GroundTruth) -> BacktestFigures:
    """Every figure of the replay; see the module's docstring for the definitions."""
    with_truth = [r for r in records if truth.any_for(r.issue)]
    return BacktestFigures(
        replayed=len(records),
        proposals=sum(r.proposed for r in records),
        with_truth=len(with_truth),
        helped=sum(bool(right_items(r, truth)) for r in with_truth),
        wrong={
            PartName.LABELS: sum(len(wrong_labels(r, truth)) for r in records),
            PartName.DUPLICATE: sum(len(wrong_duplicates(r, truth)) for r in records),
            PartName.FILES: sum(files_missed(r, truth) for r in records),
        },
        labels=label_figures(records, truth),
        duplicates=duplicate_figures(records, truth),
        files=file_figures(records, truth),
        related=related_figures(records, truth),
        counted={name: count_figures(records, name) for name in COUNTED},
        seconds=seconds(r.seconds for r in records),
    )


def right_items(record: ReplayRecord, truth: GroundTruth) -> list[tuple[PartName, str]]:
    """The items of ``record`` verified right."""
    issue = record.issue
    gold = truth.gold_labels(issue)
    related = truth.known_related(issue)
    duplicates = truth.duplicates_of(issue)
    fixed = truth.fix_files(issue)
    checks = (
        (PartName.LABELS, gold, record.items(PartName.LABELS)),
        (PartName.RELATED, related, record.items(PartName.RELATED)),
        (PartName.DUPLICATE, duplicates, record.items(PartName.DUPLICATE)),
        (PartName.FILES, fixed, record.items(PartName.FILES)[:TOP_FILES]),
    )
    return [(name, item) for name, known, items in checks for item in items if item in known]


def wrong_labels(record: ReplayRecord, truth: GroundTruth) -> list[str]:
    gold = truth.gold_labels(record.issue)
    return [label for label in record.items(PartName.LABELS) if gold and label not in gold]


def wrong_duplicates(record: ReplayRecord, truth: GroundTruth) -> list[str]:
    verdict = partial(truth.duplicate_verdict, record.issue)
    flags = record.items(PartName.DUPLICATE)
    return [issue for issue in flags if verdict(issue) is DuplicateVerdict.WRONG]


def files_missed(record: ReplayRecord, truth: GroundTruth) -> bool:
    """A files part on an issue with a known fix, none of whose first five the fix changed."""
    fixed = truth.fix_files(record.issue)
    top = record.items(PartName.FILES)[:TOP_FILES]
    return bool(fixed and top and not fixed.intersection(top))


def label_figures(records: Sequence[ReplayRecord], truth: GroundTruth) -> LabelFigures:
    labelled = [r for r in records if truth.gold_labels(r.issue)]
    proposed = [set(r.items(PartName.LABELS)) for r in labelled]
    golds = [truth.gold_labels(r.issue) for r in labelled]
    return LabelFigures(
        labelled=len(labelled),
        covered=sum(bool(p) for p in proposed),
        proposed=sum(len(p) for p in proposed),
        right=sum(len(p & g) for p, g in zip(proposed, golds, strict=True)),
        gold=sum(len(g) for g in golds),
        unverified=sum(
            len(r.items(PartName.LABELS)) for r in records if not truth.gold_labels(r.issue)
        ),
    )


def duplicate_figures(records: Sequence[ReplayRecord], truth: GroundTruth) -> DuplicateFigures:
    closed = truth.closed_as or {}
    judged = [
        (truth.duplicate_verdict(r.issue, flag), closed.get(r.issue))
        for r in records
        for flag in r.items(PartName.DUPLICATE)
    ]
    verdicts = Counter(verdict for verdict, _ in judged)
    return DuplicateFigures(
        known=truth.duplicates is not None,
        flags=len(judged),
        right=verdicts[DuplicateVerdict.RIGHT],
        pairs=sum(len(truth.duplicates_of(r.issue)) for r in records),
        wrong=verdicts[DuplicateVerdict.WRONG],
        unverified=verdicts[DuplicateVerdict.UNVERIFIED],
        closed_as_duplicate=sum(
            verdict is DuplicateVerdict.UNVERIFIED and how is ClosedAs.DUPLICATE
            for verdict, how in judged
        ),
        verifiable=truth.verifies_duplicates,
    )


def file_figures(records: Sequence[ReplayRecord], truth: GroundTruth) -> FileFigures:
    fixed = [r for r in records if truth.fix_files(r.issue)]
    tops = [(r.items(PartName.FILES)[:TOP_FILES], truth.fix_files(r.issue)) for r in fixed]
    return FileFigures(
        fixed=len(fixed),
        suggested=sum(bool(top) for top, _ in tops),
        hits=sum(bool(gold.intersection(top)) for top, gold in tops),
    )


def related_figures(records: Sequence[ReplayRecord], truth: GroundTruth) -> RelatedFigures:
    cited = [(r.items(PartName.RELATED), truth.known_related(r.issue)) for r in records]
    return RelatedFigures(
        known=sum(bool(known) for _, known in cited),
        citing_known=sum(bool(known.intersection(items)) for items, known in cited),
        citing=sum(bool(items) for items, _ in cited),
        citations=sum(len(items) for items, _ in cited),
        citations_known=sum(sum(i in known for i in items) for items, known in cited),
    )


def count_figures(records: Sequence[ReplayRecord], name: PartName) -> CountFigures:
    having = [(r.issue, r.items(name)) for r in records if r.items(name)]
    return CountFigures(len(having), tuple(having[:EXAMPLES]))


def seconds(values: Iterable[float]) -> Seconds:
    """The median and the 95th percentile (nearest rank) of the replay times."""
    ordered = sorted(values)
    if not ordered:
        return Seconds(None, None)
    rank = math.ceil(0.95 * len(ordered))
    return Seconds(statistics.median(ordered), ordered[rank - 1])
