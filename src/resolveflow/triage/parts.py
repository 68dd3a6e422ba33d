"""The parts of a triage result that need more than the issue itself (``domain/parts.py``).

- **labels**: one label model per repository (``labels.py``), learned from the repository's own
  labelled issues in the tenant's index and learned again after ``max_age_seconds``, so that what
  maintainers label (the index follows the ``issues`` webhook) is learned within minutes. Only a
  label the repository has, that the issue does not carry yet, that the policy's
  ``allowed_labels`` (or the repository's file) lets through, and that is topical may be
  proposed, and only above the floor; its reason is the issue's own words that weigh most for it.
- **missing facts**: pure (``domain/missing_facts.py``).

``TriageParts`` is what a run joins to its proposal (``graph/build.py``) and what a backtest
measures, through this same code.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from resolveflow.policy_file import RepositoryPolicy
from resolveflow.store.database import Database
from resolveflow.triage.domain.evidence import IssueEvidence
from resolveflow.triage.domain.parts import (
    Part,
    PartItem,
    PartName,
    TriageParts,
    left_out,
    missing_facts_part,
)
from resolveflow.triage.labels import (
    DEFAULT_MIN_PROBABILITY,
    LabelModel,
    tenant_examples,
    topical,
    training_text,
)

logger = logging.getLogger(__name__)

LABEL_MODEL_MAX_AGE_SECONDS = 600.0


@dataclass(frozen=True)
class Learned:
    model: LabelModel
    examples: int


class LabelModels:
    """A label model per (tenant, repository), learned on first use and again once older than
    ``max_age_seconds``. Thread-safe: a web process and its worker share one."""

    def __init__(
        self,
        db: Database,
        *,
        max_age_seconds: float = LABEL_MODEL_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._max_age = max_age_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._models: dict[tuple[UUID, str], tuple[float, Learned]] = {}

    def for_issue(self, tenant_id: UUID, evidence: IssueEvidence) -> Learned:
        return self.learned(tenant_id, evidence.repository)

    def learned(self, tenant_id: UUID, repository: str) -> Learned:
        key = (tenant_id, repository.lower())
        with self._lock:
            cached = self._models.get(key)
            if cached is not None and self._clock() - cached[0] < self._max_age:
                return cached[1]
        examples = tenant_examples(self._db, tenant_id, source=f"github:{key[1]}")
        learned = Learned(LabelModel.train(examples), len(examples))
        with self._lock:
            self._models[key] = (self._clock(), learned)
        return learned


class LabelModelsAsOf:
    """For a backtest: the model a live process would have had when each issue was opened,
    learned from the corpus's issues created before the start of its month (the live model is
    learned again every ten minutes; a month keeps a replay of a year to a dozen trainings). The
    corpus holds each issue's final labels, so an issue labelled after the month began counts
    as labelled: a slight advantage over the live model, said in docs/investigation.md."""

    def __init__(self, db: Database, source: str) -> None:
        self._db = db
        self._source = source
        self._models: dict[tuple[UUID, datetime], Learned] = {}

    def for_issue(self, tenant_id: UUID, evidence: IssueEvidence) -> Learned:
        month = evidence.created_at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        key = (tenant_id, month)
        if key not in self._models:
            examples = tenant_examples(self._db, tenant_id, before=month, source=self._source)
            self._models[key] = Learned(LabelModel.train(examples), len(examples))
        return self._models[key]


LabelSource = Callable[[UUID, IssueEvidence], Learned]


def label_part(
    learned: Learned, evidence: IssueEvidence, policy: RepositoryPolicy, floor: float
) -> Part:
    """The most probable label the issue may be given, when it clears ``floor``."""
    if not learned.model.labels:
        return left_out(PartName.LABELS, "no labelled history of this repository to learn from")
    allowed = topical(set(evidence.repository_labels) - set(evidence.labels))
    if policy.allowed_labels is not None:
        allowed &= set(policy.allowed_labels)
    text = training_text(evidence.title, evidence.body)
    [best] = learned.model.suggest_many([text], allowed=allowed, min_probability=0.0)
    if best is None:
        return left_out(PartName.LABELS, "no label the issue may be given was learned")
    score = round(best.probability, 3)
    if best.probability < floor:
        why = f"the likeliest label, {best.label}, is below its floor"
        return left_out(PartName.LABELS, why, score, floor)
    words = learned.model.reasons(text, best.label)
    why = f"learned from {learned.examples} labelled issues of this repository"
    if words:
        why += "; the issue mentions " + ", ".join(f"'{word}'" for word in words)
    return Part(PartName.LABELS, score, floor, (PartItem(best.label, score, why),))


@dataclass(frozen=True)
class PartsConfig:
    label_floor: float = DEFAULT_MIN_PROBABILITY


class PartsMaker:
    """Every part of one issue's triage result, for a live run and a backtest alike."""

    def __init__(self, labels: LabelSource, config: PartsConfig | None = None) -> None:
        self._labels = labels  # the repository's model when the issue is read
        self._config = config or PartsConfig()

    def __call__(
        self, tenant_id: UUID, evidence: IssueEvidence, policy: RepositoryPolicy
    ) -> TriageParts:
        learned = self._labels(tenant_id, evidence)
        return TriageParts(
            (
                label_part(learned, evidence, policy, self._config.label_floor),
                missing_facts_part(evidence.title, evidence.body, evidence.author_association),
            )
        )
