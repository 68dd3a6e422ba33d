"""Label suggestion learned from a repository's own labelled history.

One logistic regression per topical label (balanced classes) on TF-IDF word features of title and
body; the single most probable label is proposed when its probability reaches a floor, otherwise
nothing is proposed (abstention). Labels that are not topical (duplicate, good first issue, help
wanted, wontfix, ...) are excluded by policy, labels with too few examples cannot be learned, and
only labels that exist in the repository may be proposed. Method and parameters were chosen on
the hf-datasets dev split (docs/retrieval.md); the triage workflow calls the same code.

Each label has its own floor, learned with the model from the repository's own history: the
lowest probability at which that label, proposed as an issue's likeliest, was right at least
``TARGET_PRECISION`` of the time on issues the model had not seen (``FOLDS``-fold
cross-validation over the labelled history), never below the global floor. A label with too few
examples to measure keeps the global floor; a label that never reaches the target precision is
not proposed. Precision on held-out issues means the same on any repository, where a single
probability does not (a common label is confidently right where a rare one is not).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np

from resolveflow.retrieval.chunking import normalize_text
from resolveflow.retrieval.linear import LogisticModel, SparseRows, TfidfWords, fit_logistic
from resolveflow.store import documents as store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

NON_TOPICAL = frozenset(
    {
        "duplicate",
        "good first issue",
        "good second issue",
        "help wanted",
        "wontfix",
        "won't fix",
        "invalid",
        "hacktoberfest",
        "stale",
        "needs triage",
        "needs-triage",
    }
)
MIN_EXAMPLES = 3  # a label seen fewer times cannot be learned
TEXT_CHARS = 5000
REGULARIZATION_C = 3.0
DEFAULT_MIN_PROBABILITY = 0.35
# The smoothed idf of a word found in half of the training texts (``TfidfWords``): below it, a
# word is too common to be a reason.
COMMON_IDF = 1.0 + math.log(2.0)
TARGET_PRECISION = 0.85  # what a label's own floor is set to reach on the held-out issues
FOLDS = 3
MIN_MEASURED = 10  # a label proposed fewer times than this out of fold keeps the global floor
NEVER = 1.01  # the floor of a label that never reaches the target: not proposed
FOLD_TOLERANCE = 1e-4  # the folds only rank probabilities; the full model keeps the tight fit


def topical(labels: Iterable[str]) -> set[str]:
    return {label for label in labels if label.strip().lower() not in NON_TOPICAL}


def training_text(title: str, body: str) -> str:
    return normalize_text(f"{title}\n{body}")[:TEXT_CHARS]


@dataclass(frozen=True)
class LabelSuggestion:
    label: str
    probability: float


@dataclass(frozen=True)
class Example:
    text: str
    labels: frozenset[str]


class LabelModel:
    """Trained per-label classifiers over one shared vocabulary."""

    def __init__(
        self,
        vectorizer: TfidfWords | None,
        labels: list[str],
        classifiers: list[LogisticModel | None],
        floors: Mapping[str, float] | None = None,
    ) -> None:
        self._vectorizer = vectorizer
        self.labels = labels
        self._classifiers = classifiers
        self.floors: dict[str, float] = dict(floors or {})  # a label's own, where measured
        # Each feature column's word, once per model (``reasons`` runs on every triage run).
        vocabulary = vectorizer.vocabulary if vectorizer is not None else {}
        self._words = sorted(vocabulary, key=vocabulary.__getitem__)

    @classmethod
    def train(cls, examples: Sequence[Example], *, own_floors: bool = True) -> LabelModel:
        """Learn from ``examples``; ``own_floors``: also each label's floor (``label_floors``)."""
        usable = [e for e in examples if topical(e.labels)]
        counts = Counter(label for e in usable for label in topical(e.labels))
        labels = sorted(label for label, n in counts.items() if n >= MIN_EXAMPLES)
        if not usable or not labels:
            return cls(None, [], [])
        try:
            vectorizer = TfidfWords.fit([e.text for e in usable], min_df=2)
        except ValueError:  # an empty vocabulary: nothing to learn from
            return cls(None, [], [])
        features = vectorizer.transform([e.text for e in usable])
        classifiers = [_fit(features, _targets(usable, label)) for label in labels]
        floors = label_floors(features, usable, labels) if own_floors else {}
        logger.info("label model trained", extra={"examples": len(usable), "labels": len(labels)})
        return cls(vectorizer, labels, classifiers, floors)

    def floor(self, label: str, default: float = DEFAULT_MIN_PROBABILITY) -> float:
        """The probability ``label`` must reach to be proposed: its own floor, never below
        ``default`` (the global one); ``default`` for a label whose floor was not measured."""
        return max(default, self.floors.get(label, default))

    def probabilities(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Shape (len(texts), len(labels))."""
        if self._vectorizer is None or not self.labels or not texts:
            return np.zeros((len(texts), len(self.labels)))
        features = self._vectorizer.transform(list(texts))
        columns = [
            clf.probability(features) if clf is not None else np.ones(len(texts))
            for clf in self._classifiers
        ]
        return np.stack(columns, axis=1)

    def reasons(self, text: str, label: str, n: int = 3) -> list[str]:
        """The words of ``text`` that weigh most towards ``label`` (its classifier's weight
        times the word's TF-IDF in the text), strongest first: what in the issue led to it."""
        if self._vectorizer is None or label not in self.labels:
            return []
        classifier = self._classifiers[self.labels.index(label)]
        if classifier is None:
            return []
        row = self._vectorizer.transform([text])
        weights = row.values * classifier.weights[row.columns]
        # A word most of the repository's issues use ("on", "with", "the") says nothing about
        # this one, whatever its weight: only words in at most half of them are given as reasons.
        common = self._vectorizer.idf[row.columns] < COMMON_IDF
        weights = np.where(common, 0.0, weights)
        order = np.argsort(-weights)
        return [self._words[int(row.columns[i])] for i in order[:n] if weights[i] > 0]

    def suggest_many(
        self,
        texts: Sequence[str],
        *,
        allowed: set[str] | None = None,
        min_probability: float = DEFAULT_MIN_PROBABILITY,
        own_floors: bool = True,
    ) -> list[LabelSuggestion | None]:
        """The single most probable allowed label per text, or None (abstain) when it is below
        ``min_probability`` or, with ``own_floors``, below its own floor."""
        probabilities = self.probabilities(texts)
        usable = np.array([allowed is None or label in allowed for label in self.labels])
        results: list[LabelSuggestion | None] = []
        for row in probabilities:
            if not usable.any():
                results.append(None)
                continue
            masked = np.where(usable, row, -1.0)
            best = int(np.argmax(masked))
            probability, label = float(masked[best]), self.labels[best]
            floor = self.floor(label, min_probability) if own_floors else min_probability
            results.append(LabelSuggestion(label, probability) if probability >= floor else None)
        return results


def _targets(examples: Sequence[Example], label: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
    return np.array([label in e.labels for e in examples])


def _fit(
    features: SparseRows, target: np.ndarray[Any, np.dtype[np.bool_]], tolerance: float = 1e-7
) -> LogisticModel | None:
    if target.all() or not target.any():  # one class only: nothing to tell apart
        return None
    return fit_logistic(features, target, c=REGULARIZATION_C, tolerance=tolerance)


def label_floors(
    features: SparseRows, examples: Sequence[Example], labels: list[str]
) -> dict[str, float]:
    """Each measurable label's floor: the lowest probability above which, proposed as an
    issue's likeliest label on issues held out of training, it was right at least
    ``TARGET_PRECISION`` of the time (``NEVER`` when it never was). A label proposed fewer than
    ``MIN_MEASURED`` times out of fold is left out (the global floor applies)."""
    held_out = _held_out_probabilities(features, examples, labels)
    likeliest, top = held_out.argmax(axis=1), held_out.max(axis=1)
    floors: dict[str, float] = {}
    for column, label in enumerate(labels):
        picked = np.flatnonzero(likeliest == column)
        right = [label in examples[int(i)].labels for i in picked]
        floor = precision_floor(top[picked].tolist(), right)
        if floor is not None:
            floors[label] = floor
    return floors


def precision_floor(probabilities: Sequence[float], right: Sequence[bool]) -> float | None:
    """The lowest of ``probabilities`` at or above which the share ``right`` is at least
    ``TARGET_PRECISION`` (``NEVER`` when no such probability exists); None when there are fewer
    than ``MIN_MEASURED`` to measure."""
    if len(probabilities) < MIN_MEASURED:
        return None
    order = np.argsort(-np.asarray(probabilities), kind="stable")
    ranked = np.asarray(probabilities)[order]
    precision = np.cumsum(np.asarray(right)[order]) / np.arange(1, len(order) + 1)
    # Ties: a floor lets through every probability equal to it, so only the last of a run of
    # equal probabilities is a point the precision can be read at.
    last_of_tie = np.append(ranked[1:] != ranked[:-1], True)
    reached = np.flatnonzero((precision >= TARGET_PRECISION) & last_of_tie)
    return float(ranked[reached[-1]]) if len(reached) else NEVER


def _held_out_probabilities(
    features: SparseRows, examples: Sequence[Example], labels: list[str]
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Each example's probabilities from models learned on the other folds (the vocabulary is
    the whole history's: cheap, and only the weights are what a fold must not have seen)."""
    fold_of = np.arange(len(examples)) % FOLDS
    result = np.zeros((len(examples), len(labels)))
    for fold in range(FOLDS):
        learn, hold = np.flatnonzero(fold_of != fold), np.flatnonzero(fold_of == fold)
        learn_x, hold_x = features.take(learn), features.take(hold)
        learn_examples = [examples[int(i)] for i in learn]
        for column, label in enumerate(labels):
            target = _targets(learn_examples, label)
            model = _fit(learn_x, target, FOLD_TOLERANCE)
            result[hold, column] = (
                model.probability(hold_x) if model is not None else float(target.all())
            )
    return result


def tenant_examples(
    db: Database, tenant_id: UUID, *, before: datetime | None = None, source: str | None = None
) -> list[Example]:
    """The tenant's labelled issues (optionally of one source, created before a time)."""
    with db.tenant(tenant_id) as conn:
        rows = store.labelled_documents(conn, tenant_id, before=before, source=source)
    return [Example(training_text(row.title, row.body), frozenset(row.labels)) for row in rows]
