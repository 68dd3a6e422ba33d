"""Thresholds fitted from the team's decisions (issue 31). Pure.

A threshold decides whether a suggestion is made at all (triage's duplicate relevance floor):
the product ships a default floor, chosen on dev data; a repository's own decisions then say
where, on that repository, a suggestion stops being worth a person's look.

The rule (``fit_threshold``), in the order it is applied:

1. Only suggestions the default would make count (scored at or above it), and only once there
   are ``MIN_DECISIONS`` of them with ``MIN_EACH`` of each outcome: fewer say too little (a
   share fitted from three approvals is noise), and the default stands.
2. The share approved is fitted as a non-decreasing function of the score (isotonic regression,
   pool-adjacent-violators): a higher score is never read as less likely to be approved, so one
   unlucky decision cannot carve a hole in the scale.
3. The threshold is the lowest score whose fitted share approved reaches ``TARGET_ACCEPTANCE``
   (a suggestion is worth making when the team approves it at least as often as it rejects it);
   when no score does, the highest step of the fit (the most selective the decisions support).
4. It never drops what the team approved below ``KEEP_APPROVED`` of it: the threshold is at most
   the score under which a fifth of the approved suggestions lie.
5. It is never below the default: decisions can only make the product quieter, never looser
   than what was chosen on dev data.

These are shares of the team's own yes and no, so they mean the same on any corpus; no constant
here was fitted to one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MIN_DECISIONS = 30
MIN_EACH = 10  # approved and rejected
TARGET_ACCEPTANCE = 0.5
KEEP_APPROVED = 0.8
BAND_WIDTH = 0.1


@dataclass(frozen=True)
class Scored:
    """One decided suggestion: the score it was made with, and whether the team took it."""

    score: float
    approved: bool  # as proposed or after an edit


@dataclass(frozen=True)
class Fitted:
    value: float  # the threshold to use
    default: float
    decisions: int  # decided suggestions at or above the default
    approved: int
    fitted: bool  # False: too few decisions, the default stands
    why: str

    def as_json(self) -> dict[str, Any]:
        return {
            "value": round(self.value, 4),
            "default": self.default,
            "decisions": self.decisions,
            "approved": self.approved,
            "fitted": self.fitted,
            "why": self.why,
        }


def isotonic(values: Sequence[float], weights: Sequence[int] | None = None) -> list[float]:
    """The non-decreasing sequence nearest ``values`` in (weighted) least squares, by pool
    adjacent violators: each run of values that decreases is replaced by its weighted mean."""
    blocks: list[tuple[float, int, int]] = []  # (mean, weight, values pooled)
    for value, weight in zip(values, weights or [1] * len(values), strict=True):
        mean, total, count = float(value), weight, 1
        while blocks and blocks[-1][0] > mean:
            last_mean, last_total, last_count = blocks.pop()
            mean = (last_mean * last_total + mean * total) / (last_total + total)
            total += last_total
            count += last_count
        blocks.append((mean, total, count))
    return [mean for mean, _, count in blocks for _ in range(count)]


def fit_threshold(
    decided: Sequence[Scored],
    default: float,
    *,
    minimum: int = MIN_DECISIONS,
    each: int = MIN_EACH,
    target: float = TARGET_ACCEPTANCE,
    keep: float = KEEP_APPROVED,
) -> Fitted:
    made = sorted((d for d in decided if d.score >= default), key=lambda d: d.score)
    approved = sum(d.approved for d in made)
    if len(made) < minimum:
        why = f"{len(made)} of the {minimum} decisions needed: the default stands"
        return Fitted(default, default, len(made), approved, False, why)
    if min(approved, len(made) - approved) < each:
        why = (
            f"{approved} approved and {len(made) - approved} rejected of {len(made)} decisions;"
            f" {each} of each needed: the default stands"
        )
        return Fitted(default, default, len(made), approved, False, why)
    # Decisions at one score are one point of the curve, whatever order they came in.
    scores = sorted({d.score for d in made})
    at = {score: [d.approved for d in made if d.score == score] for score in scores}
    fit = isotonic([sum(at[s]) / len(at[s]) for s in scores], [len(at[s]) for s in scores])
    reaching = next((i for i, share in enumerate(fit) if share >= target), None)
    step = reaching if reaching is not None else fit.index(fit[-1])
    wanted = scores[step]
    approved_scores = [d.score for d in made if d.approved]
    # The highest threshold that keeps ``keep`` of what was approved.
    cap = approved_scores[math.floor((1 - keep) * len(approved_scores))]
    value = max(default, min(wanted, cap))
    reached = (
        f"approved {fit[step]:.0%} of the time from {wanted:.2f} on"
        if reaching is not None
        else f"never approved half the time; best {fit[-1]:.0%} from {wanted:.2f} on"
    )
    capped = f", held at {cap:.2f} to keep {keep:.0%} of the approved" if cap < wanted else ""
    why = f"fitted from {len(made)} decisions ({approved} approved): {reached}{capped}"
    return Fitted(value, default, len(made), approved, True, why)


def band(score: float, width: float = BAND_WIDTH) -> tuple[float, float]:
    """The score band a score falls in ([0.7, 0.8) for 0.72; the top band holds 1.0)."""
    steps = round(1 / width)
    low = min(math.floor(score / width + 1e-9), steps - 1) * width
    return round(low, 4), round(low + width, 4)


@dataclass(frozen=True)
class BandFigure:
    """How the decided suggestions of one kind, in one place, whose score fell in one band fared:
    ``approved`` (as proposed or after an edit) of ``decisions``. A part made by a rule (no
    score) is read against every decision of its kind (``low`` and ``high`` None)."""

    low: float | None
    high: float | None
    approved: int
    decisions: int

    @property
    def acceptance(self) -> float | None:
        """The share approved; None before any decision."""
        return self.approved / self.decisions if self.decisions else None

    def as_json(self) -> dict[str, Any]:
        rate = self.acceptance
        return {
            "band": None if self.low is None else [self.low, self.high],
            "approved": self.approved,
            "decisions": self.decisions,
            "acceptance": None if rate is None else round(rate, 4),
        }


def band_of(score: float | None, decided: Sequence[Scored | bool]) -> BandFigure:
    """How suggestions of a kind in ``score``'s band fared: ``decided`` are that kind's decisions
    in one place (``Scored``, or a bare yes/no for decisions made without a score). With a score,
    only decisions scored in the same band count; without one, every decision does."""
    if score is None:
        taken = [d.approved if isinstance(d, Scored) else d for d in decided]
        return BandFigure(None, None, sum(taken), len(taken))
    low, high = band(score)
    inside = [d for d in decided if isinstance(d, Scored) and band(d.score) == (low, high)]
    return BandFigure(low, high, sum(d.approved for d in inside), len(inside))
