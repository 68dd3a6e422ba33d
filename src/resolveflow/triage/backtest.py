"""Backtest in shadow mode: replay triage on past issues and measure what it would have proposed.

Every record of the corpus files is indexed into a scratch tenant (removed afterwards); each issue
created on or after ``since`` is then replayed in creation order, at most ``limit`` of them: it is
classified by the same rules as a live run (the labels the maintainers applied later are hidden
from it), and an ai_investigation issue is investigated with retrieval as of its creation time
(the issue itself excluded) by the same code as a live run, with the configured model. Nothing is
proposed, recorded or sent: the only writes are to the scratch tenant's index.

Figures: the classification mix, the proposal rate (runs that would have produced a proposal),
the escalation rate (of investigated issues), label precision and recall against the topical
labels the maintainers applied (micro over every replayed issue; an issue with no proposed topical
label abstains), and, with ``fix_links.tsv``, how often a cited issue was fixed by the same pull
request as the replayed issue.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from resolveflow.accounts.model_budget import ModelCallBudget
from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.errors import InvalidInput
from resolveflow.llm.protocol import ChatModel
from resolveflow.policy_file import Classification, PolicyFile, RepositoryPolicy
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.metrics import LabelReport, label_report
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import read_corpus
from resolveflow.store.database import Database
from resolveflow.triage.domain.diagnosis import url_issue
from resolveflow.triage.domain.evidence import IssueEvidence, normalize
from resolveflow.triage.domain.rules import classify, propose
from resolveflow.triage.floor_backtest import FloorBacktest, floor_backtest, stream_issue
from resolveflow.triage.investigation import Investigation, InvestigationConfig, investigate
from resolveflow.triage.known_relations import known_cases
from resolveflow.triage.labels import topical

logger = logging.getLogger(__name__)

SOURCE = "backtest"
FALLBACK_REPOSITORY = "corpus/corpus"


@dataclass(frozen=True)
class Replayed:
    id: str
    classification: str
    outcome: str | None  # approve | escalate for investigated issues
    proposed: bool
    labels: tuple[str, ...]
    gold: tuple[str, ...]
    cited: tuple[str, ...]  # external ids of cited documents
    reason: str | None = None  # the review's, for investigated issues

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
    items: list[Replayed] = field(default_factory=list)
    floor: FloorBacktest | None = None  # with ``fit_before``: the fitted duplicate floor's effect

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
        }
        if items:
            data["items"] = [item.as_json() for item in self.items]
        return data


def read_fix_links(path: Path, *, merged_only: bool = False) -> dict[str, set[str]]:
    """issue id -> the pull requests that say they fix it (``issue<TAB>pr<TAB>pr_merged``);
    with ``merged_only``, only those merged (``pr_merged`` not 0): the ones that did fix it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    links: dict[str, set[str]] = defaultdict(set)
    for number, line in enumerate(lines, start=1):
        fields = line.strip().split("\t")
        if not line.strip() or (number == 1 and fields[0] == "issue"):
            continue
        if len(fields) < 2:
            raise InvalidInput(f"{path.name} line {number}: expected issue<TAB>pr")
        if merged_only and len(fields) > 2 and fields[2].strip() == "0":
            continue
        links[fields[0].strip()].add(fields[1].strip())
    return dict(links)


def evidence_at_creation(
    doc: SourceDocument, repository: str, labels: Iterable[str]
) -> IssueEvidence:
    """The issue as triage would have seen it when it was opened: no labels, no comments yet."""
    created = doc.created_at.isoformat() if doc.created_at else ""
    return normalize(
        {
            "repository": repository,
            "issue": {
                "number": int(doc.external_id),
                "title": doc.title,
                "body": doc.body,
                "state": "open",
                "author": "unknown",
                "author_association": "NONE",
                "labels": [],
                "created_at": created,
                "updated_at": created,
                "closed_at": None,
                "is_pull_request": False,
                "url": doc.url or "",
            },
            "comments": [],
            "check_runs": [],
            "repository_labels": sorted(labels),
        }
    )


def backtest_policy(repository: str, labels: set[str]) -> RepositoryPolicy:
    """Default rules; the investigation may propose any topical label of the repository."""
    extra = {Classification.AI_INVESTIGATION.value: sorted(topical(labels))}
    return PolicyFile(repositories={repository: {"extra_labels": extra}}).for_repository(repository)


def read_corpora(corpora: Iterable[Path]) -> list[SourceDocument]:
    documents = [doc for path in corpora for doc in read_corpus(path, SOURCE)]
    if not documents:
        raise InvalidInput("the corpus is empty")
    return documents


def replay_setting(
    documents: Iterable[SourceDocument], policy: PolicyFile | None = None
) -> tuple[str, set[str], RepositoryPolicy]:
    """The repository the corpus is of (its first issue link says; else a stand-in), every label
    it uses, and the rules: the policy's, or any topical label of the corpus."""
    documents = list(documents)
    located = next((url_issue(d.url) for d in documents if url_issue(d.url)), None)
    repository = located[0] if located else FALLBACK_REPOSITORY
    labels = {label for doc in documents for label in doc.labels}
    rules = policy.for_repository(repository) if policy else backtest_policy(repository, labels)
    return repository, labels, rules


@dataclass(frozen=True)
class Replay:
    """What every replayed issue is investigated with."""

    repository: str
    labels: set[str]
    rules: RepositoryPolicy
    searcher: Searcher
    tenant_id: UUID
    model: ChatModel | None
    config: InvestigationConfig

    def investigate(self, doc: SourceDocument) -> Investigation:
        """``doc`` investigated as a live run would have when it was opened; nothing counted."""
        return investigate(
            evidence_at_creation(doc, self.repository, self.labels),
            self.rules,
            retriever=self.searcher,
            tenant_id=self.tenant_id,
            model=self.model,
            config=self.config,
            budget=ModelCallBudget.shadow(self.tenant_id),  # nothing counted or written
            as_of=doc.created_at,
        )


def run_backtest(
    db: Database,
    embedder: Embedder,
    corpora: list[Path],
    since: datetime,
    *,
    limit: int | None = None,
    fix_links: dict[str, set[str]] | None = None,
    model: ChatModel | None = None,
    config: InvestigationConfig,
    params: SearchParams | None = None,
    policy: PolicyFile | None = None,
    fit_before: datetime | None = None,
    duplicates: Iterable[tuple[str, str]] = (),
    merged_fix_links: dict[str, set[str]] | None = None,
) -> BacktestReport:
    """With ``fit_before``, also what the duplicate floor fitted from the decisions a team would
    have made on the issues before it changes on those after (``floor_backtest.py``; the
    corpus's answers are the ``duplicates`` pairs and the issues fixed by one merged pull
    request, ``merged_fix_links``)."""
    documents = read_corpora(corpora)
    repository, labels, rules = replay_setting(documents, policy)
    replay = sorted(
        (
            d
            for d in documents
            if d.kind == "issue"
            and d.external_id.isdigit()
            and d.created_at is not None
            and d.created_at >= since
        ),
        key=lambda d: (d.created_at, int(d.external_id)),
    )[:limit]
    with scratch_tenant(db) as tenant_id:
        Indexer(db, embedder).upsert(tenant_id, documents)
        searcher = Searcher(db, embedder, params)
        setting = Replay(repository, labels, rules, searcher, tenant_id, model, config)
        items = [_replay(doc, setting) for doc in replay]
        floor = None
        if fit_before is not None:
            known = {
                c.issue: c.related for c in known_cases(documents, duplicates, merged_fix_links)
            }
            # Retrieval alone decides whether a duplicate suggestion is made: no model here.
            shown = replace(setting, model=None)
            stream = [
                stream_issue(doc, shown.investigate(doc), known.get(doc.external_id, frozenset()))
                for doc in replay
            ]
            floor = floor_backtest(stream, fit_before, config.relevance_floor, config.max_related)
    report = _report(items, fix_links, model.provider if model else "none")
    report.floor = floor
    return report


def _replay(doc: SourceDocument, setting: Replay) -> Replayed:
    evidence = evidence_at_creation(doc, setting.repository, setting.labels)
    result = classify(evidence, setting.rules)
    gold = tuple(sorted(topical(doc.labels)))
    if result.classification is not Classification.AI_INVESTIGATION:
        action = propose(evidence, result, setting.rules, result.classification)
        return Replayed(
            doc.external_id,
            result.classification.value,
            None,
            not action.empty,
            tuple(sorted(topical(action.labels))),
            gold,
            (),
        )
    found = setting.investigate(doc)
    by_id = {s.id: s for s in found.snippets}
    cited = tuple(by_id[c].external_id for c in dict.fromkeys(found.citations) if c in by_id)
    return Replayed(
        doc.external_id,
        result.classification.value,
        found.review.outcome.value,
        not found.action.empty,
        tuple(sorted(topical(found.action.labels))),
        gold,
        cited,
        found.reason,
    )


def _report(
    items: list[Replayed], fix_links: dict[str, set[str]] | None, provider: str
) -> BacktestReport:
    investigated = [i for i in items if i.outcome is not None]
    fixes = None
    if fix_links is not None:
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
        fixes = FixLinkReport(issues, same, citations, citations_same)
    return BacktestReport(
        replayed=len(items),
        classification=dict(sorted(Counter(i.classification for i in items).items())),
        proposals=sum(i.proposed for i in items),
        investigated=len(investigated),
        escalated=sum(i.outcome == "escalate" for i in investigated),
        labels=label_report((set(i.labels), set(i.gold)) for i in items),
        fix_links=fixes,
        provider=provider,
        items=items,
    )
