"""Diagnoses measured on past issues whose answer is known (``resolveflow eval diagnoses``,
issue 30): a team runs it with its own model on its own history.

A case is an issue with a known earlier issue it relates to: the report it duplicates (a pair of
``duplicates.tsv``, the later report being the case) or another issue the same merged pull
request fixed (``fix_links.tsv``, ``pr_merged`` not 0; the earlier ones). Every record of the
corpus files is indexed into a scratch tenant (removed afterwards) and each case is investigated
as triage would have when it was opened (``backtest.Replay``: retrieval as of its creation,
itself excluded, labels hidden), whatever the classification rules would have routed it to:
what is measured is the diagnosis. Nothing is proposed or recorded.

Figures (each over the cases, the first ``limit`` in creation order):

- ``escalated``: the share a person would get as an escalation (a gate failed, or the model gave
  no valid diagnosis), with the failed gates counted;
- ``model_wrote``: the share whose diagnosis is the model's and valid (the rest: none, or invalid);
- ``known_retrieved``: the known issue was among the documents shown (retrieval's part: the most
  citing could reach), and ``cited_known``: the diagnosis cited it (``cited_known_of_retrieved``
  over the cases where it could); ``duplicate_named``: the duplicate cases whose ``duplicate_of``
  names the known original;
- severity: how many diagnoses said each, and ``severity_sane``: of the cases the maintainers
  labelled a request, a question or documentation (not a defect), the share not rated ``high``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.errors import InvalidInput
from resolveflow.llm.protocol import ChatModel
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.store.database import Database
from resolveflow.triage.backtest import Replay, read_corpora, replay_setting
from resolveflow.triage.domain.review import resolve_reference
from resolveflow.triage.investigation import Investigation, InvestigationConfig
from resolveflow.triage.known_relations import DUPLICATE, KnownCase, known_cases

# A label whose words say the issue is not a defect: a high severity there is not sane.
_REQUEST_WORDS = frozenset(
    {"enhancement", "feature", "request", "documentation", "docs", "question", "discussion"}
)


@dataclass(frozen=True)
class DiagnosisOutcome:
    id: str
    how: str
    outcome: str  # approve | escalate
    model_wrote: bool
    failed_gates: tuple[str, ...]
    known_retrieved: bool
    cited_known: bool
    duplicate_named: bool
    severity: str | None
    request_like: bool  # the maintainers' labels say it is not a defect

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__, failed_gates=list(self.failed_gates))


@dataclass(frozen=True)
class DiagnosisReport:
    cases: int
    duplicate_cases: int
    escalated: float
    model_wrote: float
    known_retrieved: float
    cited_known: float
    cited_known_of_retrieved: float
    duplicate_named: float
    severity: dict[str, int]
    request_like: int
    severity_sane: float | None  # None: no request-like issue was diagnosed
    failed_gates: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def _request_like(labels: Iterable[str]) -> bool:
    return any(set(re.split(r"[^a-z]+", label.lower())) & _REQUEST_WORDS for label in labels)


def diagnosis_outcome(
    case: KnownCase, doc: SourceDocument, found: Investigation
) -> DiagnosisOutcome:
    shown = {s.external_id for s in found.snippets}
    diagnosis = found.diagnosis
    # The model's own citations when it gave a valid diagnosis, else what the comment cites.
    refs = diagnosis.citations if diagnosis is not None else list(found.citations)
    cited = {t.external_id for r in refs if (t := resolve_reference(r, found.snippets))}
    named = None
    if diagnosis is not None and diagnosis.duplicate_of:
        target = resolve_reference(diagnosis.duplicate_of, found.snippets)
        named = target.external_id if target else None
    return DiagnosisOutcome(
        id=case.issue,
        how=case.how,
        outcome=found.review.outcome.value,
        model_wrote=diagnosis is not None,
        failed_gates=tuple(g.name for g in found.review.failed),
        known_retrieved=bool(shown & case.related),
        cited_known=bool(cited & case.related),
        duplicate_named=named in case.related,
        severity=diagnosis.severity if diagnosis else None,
        request_like=_request_like(doc.labels),
    )


def report(outcomes: Sequence[DiagnosisOutcome]) -> DiagnosisReport:
    if not outcomes:
        raise InvalidInput("no issue of the corpus has a known duplicate or fix to measure")
    n = len(outcomes)

    def share(items: Sequence[DiagnosisOutcome], when: str) -> float:
        return sum(1 for o in items if getattr(o, when)) / len(items) if items else 0.0

    retrieved = [o for o in outcomes if o.known_retrieved]
    duplicates = [o for o in outcomes if o.how == DUPLICATE]
    requests = [o for o in outcomes if o.request_like and o.severity is not None]
    return DiagnosisReport(
        cases=n,
        duplicate_cases=len(duplicates),
        escalated=sum(1 for o in outcomes if o.outcome == "escalate") / n,
        model_wrote=share(outcomes, "model_wrote"),
        known_retrieved=share(outcomes, "known_retrieved"),
        cited_known=share(outcomes, "cited_known"),
        cited_known_of_retrieved=share(retrieved, "cited_known"),
        duplicate_named=share(duplicates, "duplicate_named"),
        severity=dict(sorted(Counter(o.severity or "none" for o in outcomes).items())),
        request_like=len(requests),
        severity_sane=(
            sum(1 for o in requests if o.severity != "high") / len(requests) if requests else None
        ),
        failed_gates=dict(sorted(Counter(g for o in outcomes for g in o.failed_gates).items())),
    )


def evaluate_diagnoses(
    db: Database,
    embedder: Embedder,
    corpora: Sequence[Path],
    *,
    duplicates: Iterable[tuple[str, str]] = (),
    fix_links: dict[str, set[str]] | None = None,
    model: ChatModel | None,
    config: InvestigationConfig,
    params: SearchParams | None = None,
    limit: int | None = None,
) -> tuple[DiagnosisReport, list[DiagnosisOutcome]]:
    documents = read_corpora(corpora)
    cases = known_cases(documents, duplicates, fix_links)[:limit]
    by_id = {d.external_id: d for d in documents if d.kind == "issue"}
    repository, labels, rules = replay_setting(documents)
    outcomes: list[DiagnosisOutcome] = []
    with scratch_tenant(db) as tenant_id:
        Indexer(db, embedder).upsert(tenant_id, documents)
        searcher = Searcher(db, embedder, params)
        setting = Replay(repository, labels, rules, searcher, tenant_id, model, config)
        for case in cases:
            doc = by_id[case.issue]
            outcomes.append(diagnosis_outcome(case, doc, setting.investigate(doc)))
    return report(outcomes), outcomes
