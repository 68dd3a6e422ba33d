"""Ranking and labelling metrics. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RankingReport:
    n: int
    mrr_at_5: float
    recall_at_1: float
    recall_at_5: float
    recall_at_10: float

    def as_json(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "mrr_at_5": round(self.mrr_at_5, 4),
            "recall_at_1": round(self.recall_at_1, 4),
            "recall_at_5": round(self.recall_at_5, 4),
            "recall_at_10": round(self.recall_at_10, 4),
        }


def ranking_report(ranks: Sequence[int | None]) -> RankingReport:
    """``ranks``: the 1-based rank of each query's target, None when it was not retrieved."""
    n = len(ranks)
    if n == 0:
        return RankingReport(0, 0.0, 0.0, 0.0, 0.0)

    def recall(cutoff: int) -> float:
        return sum(1 for r in ranks if r is not None and r <= cutoff) / n

    mrr = sum(1.0 / r for r in ranks if r is not None and r <= 5) / n
    return RankingReport(n, mrr, recall(1), recall(5), recall(10))


@dataclass(frozen=True)
class LabelReport:
    n: int
    precision: float
    recall: float
    f1: float
    abstained: int

    def as_json(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "abstained": self.abstained,
        }


def label_report(cases: Iterable[tuple[set[str], set[str]]]) -> LabelReport:
    """Micro-averaged over (proposed, gold) label sets; an empty proposal is an abstention."""
    n = tp = proposed = gold_total = abstained = 0
    for suggested, gold in cases:
        n += 1
        tp += len(suggested & gold)
        proposed += len(suggested)
        gold_total += len(gold)
        abstained += not suggested
    precision = tp / proposed if proposed else 0.0
    recall = tp / gold_total if gold_total else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return LabelReport(n, precision, recall, f1, abstained)
