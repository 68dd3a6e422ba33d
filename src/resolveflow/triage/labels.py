"""Label suggestion learned from a repository's own labelled history.

One logistic regression per topical label (balanced classes) on TF-IDF word features of title and
body; the single most probable label is proposed when its probability reaches a floor, otherwise
nothing is proposed (abstention). Labels that are not topical (duplicate, good first issue, help
wanted, wontfix, ...) are excluded by policy, labels with too few examples cannot be learned, and
only labels that exist in the repository may be proposed. Method and parameters were chosen on
the hf-datasets dev split (docs/retrieval.md); the triage workflow calls the same code.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np

from resolveflow.retrieval.chunking import normalize_text
from resolveflow.retrieval.linear import LogisticModel, TfidfWords, fit_logistic
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
    ) -> None:
        self._vectorizer = vectorizer
        self.labels = labels
        self._classifiers = classifiers
        # Each feature column's word, once per model (``reasons`` runs on every triage run).
        vocabulary = vectorizer.vocabulary if vectorizer is not None else {}
        self._words = sorted(vocabulary, key=vocabulary.__getitem__)

    @classmethod
    def train(cls, examples: Sequence[Example]) -> LabelModel:
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
        classifiers: list[LogisticModel | None] = []
        for label in labels:
            target = np.array([label in e.labels for e in usable])
            if target.all():  # one class only: nothing to tell apart
                classifiers.append(None)
                continue
            classifiers.append(fit_logistic(features, target, c=REGULARIZATION_C))
        logger.info("label model trained", extra={"examples": len(usable), "labels": len(labels)})
        return cls(vectorizer, labels, classifiers)

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
        order = np.argsort(-weights)
        return [self._words[int(row.columns[i])] for i in order[:n] if weights[i] > 0]

    def suggest_many(
        self,
        texts: Sequence[str],
        *,
        allowed: set[str] | None = None,
        min_probability: float = DEFAULT_MIN_PROBABILITY,
    ) -> list[LabelSuggestion | None]:
        """The single most probable allowed label per text, or None (abstain)."""
        probabilities = self.probabilities(texts)
        usable = np.array([allowed is None or label in allowed for label in self.labels])
        results: list[LabelSuggestion | None] = []
        for row in probabilities:
            if not usable.any():
                results.append(None)
                continue
            masked = np.where(usable, row, -1.0)
            best = int(np.argmax(masked))
            probability = float(masked[best])
            results.append(
                LabelSuggestion(self.labels[best], probability)
                if probability >= min_probability
                else None
            )
        return results


def tenant_examples(
    db: Database, tenant_id: UUID, *, before: datetime | None = None, source: str | None = None
) -> list[Example]:
    """The tenant's labelled issues (optionally of one source, created before a time)."""
    with db.tenant(tenant_id) as conn:
        rows = store.labelled_documents(conn, tenant_id, before=before, source=source)
    return [Example(training_text(row.title, row.body), frozenset(row.labels)) for row in rows]
