"""The parts of a triage result that need more than the issue itself (``domain/parts.py``).

- **labels**: one label model per repository (``labels.py``), learned from the repository's own
  labelled issues in the tenant's index and learned again after ``max_age_seconds``, so that what
  maintainers label (the index follows the ``issues`` webhook) is learned within minutes. Only a
  label the repository has, that the issue does not carry yet, that the policy's
  ``allowed_labels`` (or the repository's file) lets through, and that is topical may be
  proposed, and only above the floor; its reason is the issue's own words that weigh most for it.
- **missing facts**: pure (``domain/missing_facts.py``).
- **related issues**: the earlier issues retrieval finds at or above the investigation's
  relevance floor, on every branch (the investigation's own comment lists them on its branch, so
  there the part is left out by the graph).

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

from resolveflow.errors import ResolveFlowError
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
    related_paragraph,
)
from resolveflow.triage.investigation import InvestigationConfig, Retriever, snippets_from_hits
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


def related_part(
    retriever: Retriever,
    tenant_id: UUID,
    evidence: IssueEvidence,
    config: InvestigationConfig,
    as_of: datetime | None,
) -> Part:
    """The earlier issues that look related, at or above the relevance floor (the
    investigation's, calibrated by ``eval floor``), with links and how each was resolved."""
    exclude = (f"github:{evidence.repository.lower()}", str(evidence.number))
    text = f"{evidence.title}\n\n{evidence.body}"
    hits = retriever.search(tenant_id, text, k=config.top_k, as_of=as_of, exclude=exclude)
    issues = [s for s in snippets_from_hits(hits, evidence) if s.kind == "issue"]
    best = round(max((s.relevance for s in issues), default=0.0), 3)
    floor = config.relevance_floor
    related = [s for s in issues if s.relevance >= floor][: config.max_related]
    if not related:
        why = "no earlier issue at or above the relevance floor"
        return left_out(PartName.RELATED, why, best if issues else None, floor)
    items = tuple(
        PartItem(s.external_id, round(s.relevance, 3), _resolved(s.state, s.resolved_by))
        for s in related
    )
    return Part(PartName.RELATED, best, floor, items, related_paragraph(related, evidence))


def _resolved(state: str | None, resolved_by: tuple[str, ...]) -> str:
    if resolved_by:
        return f"{state or 'closed'}, fixed by {', '.join(resolved_by[:3])}"
    return state or ""


@dataclass(frozen=True)
class PartsConfig:
    label_floor: float = DEFAULT_MIN_PROBABILITY
    # Related issues (None: no retrieval, the part is not made); ``as_of_creation``: search the
    # index as it was when the issue was opened (a backtest), not as it is now.
    retriever: Retriever | None = None
    investigation: InvestigationConfig | None = None
    as_of_creation: bool = False


class PartsMaker:
    """Every part of one issue's triage result, for a live run and a backtest alike."""

    def __init__(self, labels: LabelSource, config: PartsConfig | None = None) -> None:
        self._labels = labels  # the repository's model when the issue is read
        self._config = config or PartsConfig()

    def __call__(
        self, tenant_id: UUID, evidence: IssueEvidence, policy: RepositoryPolicy
    ) -> TriageParts:
        config = self._config
        learned = self._labels(tenant_id, evidence)
        parts = [
            label_part(learned, evidence, policy, config.label_floor),
            missing_facts_part(evidence.title, evidence.body, evidence.author_association),
        ]
        if config.retriever is not None and config.investigation is not None:
            as_of = evidence.created_at if config.as_of_creation else None
            try:
                found = related_part(
                    config.retriever, tenant_id, evidence, config.investigation, as_of
                )
            except ResolveFlowError as exc:
                found = left_out(PartName.RELATED, f"retrieval failed: {exc.message}")
            parts.append(found)
        return TriageParts(tuple(parts))
