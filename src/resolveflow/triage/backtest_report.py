"""What ``backtest`` reports: each replayed issue (``Replayed``: its classification, outcome and
``ReplayRecord``), the earlier figures (classification mix, proposal and escalation rates, label
precision and recall over every replayed issue, citations fixed by the same pull request) and,
beside them, the figures of ``triage/domain/backtest_figures.py``, with what the ground truth came
from and notes on what the figures cannot say."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolveflow.retrieval.metrics import LabelReport, label_report
from resolveflow.triage.domain.backtest_figures import (
    BacktestFigures,
    GroundTruth,
    ReplayRecord,
    backtest_figures,
)
from resolveflow.triage.domain.parts import EarlierFix, PartName
from resolveflow.triage.floor_backtest import FloorBacktest


@dataclass(frozen=True)
class Replayed:
    id: str
    classification: str
    outcome: str | None  # approve | escalate for investigated issues
    gold: tuple[str, ...]
    record: ReplayRecord  # what was proposed, part by part, and how long it took
    reason: str | None = None  # the review's, for investigated issues
    # the likely files part's evidence: the earlier fixes of similar issues (internal)
    earlier_fixes: tuple[EarlierFix, ...] = ()

    @property
    def proposed(self) -> bool:
        return self.record.proposed

    @property
    def labels(self) -> tuple[str, ...]:
        return self.record.items(PartName.LABELS)

    @property
    def cited(self) -> tuple[str, ...]:  # external ids of cited documents
        return self.record.items(PartName.RELATED)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "classification": self.classification,
            "outcome": self.outcome,
            "proposed": self.proposed,
            "labels": list(self.labels),
            "gold": list(self.gold),
            "cited": list(self.cited),
            "reason": self.reason,
            "parts": self.record.as_json(),
            "seconds": round(self.record.seconds, 4),
            **(
                {"earlier_fixes": [fix.as_json() for fix in self.earlier_fixes]}
                if self.earlier_fixes
                else {}
            ),
        }


@dataclass(frozen=True)
class FixLinkReport:
    with_fix_and_citation: int  # replayed issues with a known fixing PR that cited something
    cited_same_fix: int  # ... of which at least one cited issue was fixed by the same PR
    citations: int  # citations of those issues
    citations_same_fix: int

    def as_json(self) -> dict[str, Any]:
        rate = (
            self.cited_same_fix / self.with_fix_and_citation if self.with_fix_and_citation else 0.0
        )
        per = self.citations_same_fix / self.citations if self.citations else 0.0
        return {
            "issues": self.with_fix_and_citation,
            "issues_citing_same_fix": self.cited_same_fix,
            "rate": round(rate, 4),
            "citations": self.citations,
            "citations_same_fix": self.citations_same_fix,
            "citation_rate": round(per, 4),
        }


@dataclass
class BacktestReport:
    replayed: int
    classification: dict[str, int]
    proposals: int
    investigated: int
    escalated: int
    labels: LabelReport
    fix_links: FixLinkReport | None
    provider: str
    figures: BacktestFigures
    items: list[Replayed] = field(default_factory=list)
    floor: FloorBacktest | None = None  # with ``fit_before``: the fitted duplicate floor's effect
    inputs: BacktestInputs | None = None
    index_seconds: float = 0.0

    def as_json(self, items: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "replayed": self.replayed,
            "provider": self.provider,
            "classification": self.classification,
            "proposals": self.proposals,
            "proposal_rate": round(self.proposals / self.replayed, 4) if self.replayed else 0.0,
            "investigated": self.investigated,
            "escalated": self.escalated,
            "escalation_rate": round(self.escalated / self.investigated, 4)
            if self.investigated
            else 0.0,
            "labels": self.labels.as_json(),
            "fix_links": self.fix_links.as_json() if self.fix_links else None,
            "duplicate_floor": self.floor.as_json() if self.floor else None,
            **self.figures.as_json(examples=items),
            "index_seconds": round(self.index_seconds, 1),
            "inputs": (self.inputs or BacktestInputs()).as_json(),
            "notes": notes(self.inputs or BacktestInputs()),
        }
        if items:
            data["items"] = [item.as_json() for item in self.items]
        return data


@dataclass(frozen=True)
class BacktestInputs:
    """What the ground truth came from, recorded in the output."""

    fix_links: bool = False
    duplicates: bool = False
    clone: Path | None = None
    docs: Path | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "fix_links": self.fix_links,
            "duplicates": self.duplicates,
            "clone": str(self.clone) if self.clone else None,
            "docs": str(self.docs) if self.docs else None,
        }


# The parts the replay makes through the live run's code (``triage/parts.py``; docs with
# --docs); the others are measured as zero until the live run's code produces them.
FILLED = (
    PartName.LABELS,
    PartName.RELATED,
    PartName.DUPLICATE,
    PartName.FILES,
    PartName.MISSING_FACTS,
    PartName.DOCS,
)


def notes(inputs: BacktestInputs) -> list[str]:
    """What the figures cannot say, in plain words, rather than silently."""
    said = [
        "failing_checks is not replayed: a CI failure's checks come from the issue's linked "
        "CI runs, which a corpus does not hold (its figure is 0)"
    ]
    empty = [p.value for p in PartName if p not in FILLED and p is not PartName.FAILING_CHECKS]
    if empty:
        said.append(f"the replay does not make these parts yet: {', '.join(empty)}")
    if inputs.clone:
        said.append(
            "--clone is read for the files each fixing pull request changed (the files "
            "ground truth) and for the files part, as of each issue"
        )
    else:
        said.append("no --clone: the files part has no ground truth")
    if inputs.docs:
        said.append(
            "--docs is indexed beside the corpus and answers question-like issues (the docs "
            "part) as the folder is today, not as of each issue"
        )
    else:
        said.append("no --docs: no document answers a question (the docs part is left out)")
    if not inputs.duplicates:
        said.append(
            "no --duplicates: no duplicate flag can be verified right (only wrong, on an issue the "
            "corpus says was closed as something else)"
        )
    if not inputs.fix_links:
        said.append("no --fix-links: no issue is known to share a fix")
    return said


def backtest_report(
    items: list[Replayed],
    fix_links: dict[str, set[str]] | None,
    provider: str,
    truth: GroundTruth,
) -> BacktestReport:
    investigated = [i for i in items if i.outcome is not None]
    return BacktestReport(
        replayed=len(items),
        classification=dict(sorted(Counter(i.classification for i in items).items())),
        proposals=sum(i.proposed for i in items),
        investigated=len(investigated),
        escalated=sum(i.outcome == "escalate" for i in investigated),
        labels=label_report((set(i.labels), set(i.gold)) for i in items),
        fix_links=_fix_link_report(items, fix_links) if fix_links is not None else None,
        provider=provider,
        figures=backtest_figures([i.record for i in items], truth),
        items=items,
    )


def _fix_link_report(items: list[Replayed], fix_links: dict[str, set[str]]) -> FixLinkReport:
    issues = same = citations = citations_same = 0
    for item in items:
        mine = fix_links.get(item.id, set())
        if not mine or not item.cited:
            continue
        issues += 1
        shared = [c for c in item.cited if fix_links.get(c, set()) & mine]
        same += bool(shared)
        citations += len(item.cited)
        citations_same += len(shared)
    return FixLinkReport(issues, same, citations, citations_same)
