"""Label backtest through the product's own index and label suggestion code.

Items created before ``since`` are indexed and their labels learned; every item created on or
after it that carries at least one topical label gets a proposal from the same code triage uses
(only labels of the repository, i.e. seen in its indexed history, may be proposed). Micro
precision, recall and F1 over labels; an item with no proposal counts as abstained.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.retrieval.ingest import Indexer, IngestStats
from resolveflow.retrieval.metrics import LabelReport, label_report
from resolveflow.retrieval.sources import read_corpus
from resolveflow.store.database import Database
from resolveflow.triage.labels import (
    DEFAULT_MIN_PROBABILITY,
    LabelModel,
    tenant_examples,
    topical,
    training_text,
)

logger = logging.getLogger(__name__)

SOURCE = "eval"


@dataclass(frozen=True)
class LabelResult:
    report: LabelReport
    trained_on: int
    labels_known: list[str]
    ingest: IngestStats


def evaluate_labels(
    db: Database,
    embedder: Embedder,
    corpus: Path,
    since: datetime,
    *,
    min_probability: float = DEFAULT_MIN_PROBABILITY,
) -> LabelResult:
    documents = list(read_corpus(corpus, SOURCE))
    history = [d for d in documents if d.created_at is not None and d.created_at < since]
    tested = [
        d
        for d in documents
        if d.created_at is not None and d.created_at >= since and topical(d.labels)
    ]
    with scratch_tenant(db) as tenant_id:
        ingest = Indexer(db, embedder).upsert(tenant_id, history)
        examples = tenant_examples(db, tenant_id, before=since)
        model = LabelModel.train(examples)
        repository_labels = {label for example in examples for label in example.labels}
        suggestions = model.suggest_many(
            [training_text(d.title, d.body) for d in tested],
            allowed=repository_labels,
            min_probability=min_probability,
        )
    cases = [
        ({s.label} if s else set(), topical(d.labels))
        for d, s in zip(tested, suggestions, strict=True)
    ]
    report = label_report(cases)
    logger.info("labels evaluated", extra=report.as_json())
    return LabelResult(report, len(examples), model.labels, ingest)
