"""Backtest in shadow mode: replay triage on past issues and measure what it would have proposed.

Every record of the corpus files is indexed into a scratch tenant (removed afterwards); each issue
created on or after ``since`` is then replayed in creation order, at most ``limit`` of them: it is
classified by the same rules as a live run (the labels the maintainers applied later are hidden
from it), and an ai_investigation issue is investigated with retrieval as of its creation time
(the issue itself excluded) by the same code as a live run, with the configured model. Nothing is
proposed, recorded or sent: the only writes are to the scratch tenant's index.

Each replayed issue becomes one ``ReplayRecord``: what triage proposed, part by part (today the
labels and the related issues the investigation cited), and the seconds its replay took. The
figures a team would judge it by (``helped_share``, ``wrong_per_100``, each part's) are a pure
function of those records and the ground truth (``triage/domain/backtest_figures.py``,
``triage/backtest_truth.py``). Beside them, the earlier figures: the classification mix, the
proposal rate, the escalation rate (of investigated issues), label precision and recall micro over
every replayed issue (an issue with no proposed topical label abstains), and, with
``fix_links.tsv``, how often a cited issue was fixed by the same pull request.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from uuid import UUID

from resolveflow.accounts.model_budget import ModelCallBudget
from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.quiet import place_modes
from resolveflow.llm.protocol import ChatModel
from resolveflow.policy_file import Classification, PolicyFile, RepositoryPolicy
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import DocsFolder, read_corpus
from resolveflow.store.database import Database
from resolveflow.triage.backtest_report import (
    BacktestInputs,
    BacktestReport,
    Replayed,
    backtest_report,
)
from resolveflow.triage.backtest_truth import ground_truth, read_resolutions
from resolveflow.triage.domain.backtest_figures import ProposedPart, ReplayRecord
from resolveflow.triage.domain.composition import Composed, Modes, compose
from resolveflow.triage.domain.diagnosis import url_issue
from resolveflow.triage.domain.evidence import IssueEvidence, normalize
from resolveflow.triage.domain.parts import PartName, TriageParts
from resolveflow.triage.domain.rules import ClassificationResult, classify
from resolveflow.triage.floor_backtest import FloorBacktest, floor_backtest, stream_issue
from resolveflow.triage.investigation import Investigation, InvestigationConfig, investigate
from resolveflow.triage.known_relations import known_cases
from resolveflow.triage.labels import topical
from resolveflow.triage.parts import DocsAnswerer, LabelModelsAsOf, PartsConfig, PartsMaker

logger = logging.getLogger(__name__)

SOURCE = "backtest"
DOCS_SOURCE = "docs"  # as ``index docs`` names a folder's documents
FALLBACK_REPOSITORY = "corpus/corpus"


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
    parts: PartsMaker | None = None  # what every live run joins to its proposal
    modes: Modes = field(default_factory=dict)  # the policy file's modes for the repository

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


def replay_for(
    db: Database,
    embedder: Embedder,
    documents: Sequence[SourceDocument],
    tenant_id: UUID,
    config: InvestigationConfig,
    *,
    params: SearchParams | None = None,
    policy: PolicyFile | None = None,
    model: ChatModel | None = None,
    history: RepositoryHistory | None = None,
    docs: Callable[[Searcher], DocsAnswerer] | None = None,
) -> Replay:
    """What each issue of ``documents`` (indexed in ``tenant_id``) is replayed with: the rules,
    the policy's modes, and the parts a live run makes, as of the issue's creation; ``docs``
    makes the answerer of the docs part over the same search."""
    repository, labels, rules = replay_setting(documents, policy)
    searcher = Searcher(db, embedder, params)
    parts = PartsMaker(
        LabelModelsAsOf(db, SOURCE).for_issue,
        PartsConfig(
            retriever=searcher,
            investigation=config,
            as_of_creation=True,
            history_for=lambda _: history,
            docs=docs(searcher) if docs is not None else None,
        ),
        db,
    )
    modes = place_modes(policy, repository) if policy is not None else {}
    return Replay(repository, labels, rules, searcher, tenant_id, model, config, parts, modes)


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
    duplicates: Sequence[tuple[str, str]] | None = None,
    merged_fix_links: dict[str, set[str]] | None = None,
    history: RepositoryHistory | None = None,
    docs: Path | None = None,
    docs_answerer: Callable[[Searcher], DocsAnswerer] | None = None,
) -> BacktestReport:
    """The figures are measured against the ground truth (``backtest_truth.py``): the corpus's
    labels, the ``duplicates`` pairs, the issues fixed by one merged pull request
    (``merged_fix_links``) and, with the clone's ``history``, the files each fix changed. The
    ``docs`` folder is indexed beside the corpus as ``index docs`` indexes it, and
    ``docs_answerer`` (Ask, from the wiring) answers question-like issues from it as a live run's
    docs part does: today's documents, not as of each issue (without ``docs``, from nothing).
    With ``fit_before``, also what the duplicate floor fitted from the decisions a team would
    have made on the issues before it changes on those after (``floor_backtest.py``)."""
    documents = read_corpora(corpora)
    replay = replayed_issues(documents, since, limit)
    truth = ground_truth(
        documents,
        {d.external_id for d in replay},
        duplicates=duplicates,
        merged_fix_links=merged_fix_links,
        history=history,
        resolutions=read_resolutions(corpora),
    )
    with scratch_tenant(db) as tenant_id:
        started = time.perf_counter()
        Indexer(db, embedder).upsert(tenant_id, documents)
        if docs is not None:
            Indexer(db, embedder).upsert(tenant_id, DocsFolder(docs, DOCS_SOURCE))
        indexed = time.perf_counter() - started
        setting = replay_for(
            db,
            embedder,
            documents,
            tenant_id,
            config,
            params=params,
            policy=policy,
            model=model,
            history=history,
            docs=docs_answerer,
        )
        items = [_replay(doc, setting) for doc in replay]
        floor = None
        if fit_before is not None:
            known = {
                c.issue: c.related
                for c in known_cases(documents, duplicates or (), merged_fix_links)
            }
            floor = _floor(setting, replay, known, fit_before)
    report = backtest_report(items, fix_links, model.provider if model else "none", truth)
    report.floor = floor
    report.index_seconds = indexed
    report.inputs = BacktestInputs(
        fix_links=fix_links is not None or merged_fix_links is not None,
        duplicates=duplicates is not None,
        clone=history.repo.path if history else None,
        docs=docs,
    )
    return report


def replayed_issues(
    documents: Iterable[SourceDocument], since: datetime, limit: int | None
) -> list[SourceDocument]:
    """The issues created from ``since`` on, oldest first, at most ``limit``."""
    return sorted(
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


def _floor(
    setting: Replay,
    replay: Sequence[SourceDocument],
    known: dict[str, frozenset[str]],
    fit_before: datetime,
) -> FloorBacktest:
    # Retrieval alone decides whether a duplicate suggestion is made: no model here.
    shown = replace(setting, model=None)
    stream = [
        stream_issue(doc, shown.investigate(doc), known.get(doc.external_id, frozenset()))
        for doc in replay
    ]
    config = setting.config
    return floor_backtest(stream, fit_before, config.relevance_floor, config.max_related)


@dataclass(frozen=True)
class ReplayedProposal:
    """One replayed issue's proposal, composed as a live run composes it."""

    result: ClassificationResult
    composed: Composed
    investigation: Investigation | None


def replayed_proposal(doc: SourceDocument, setting: Replay) -> ReplayedProposal:
    """``doc`` as the live path would have triaged it when it was opened: the same rules, the
    same parts and the same composition (``triage/domain/composition.py``) as ``graph/build.py``."""
    evidence = evidence_at_creation(doc, setting.repository, setting.labels)
    result = classify(evidence, setting.rules)
    branch = result.classification
    found = setting.investigate(doc) if branch is Classification.AI_INVESTIGATION else None
    made = setting.parts(setting.tenant_id, evidence, setting.rules) if setting.parts else None
    composed = compose(
        evidence,
        result,
        setting.rules,
        branch,
        setting.modes,
        made or TriageParts(),
        found.action if found else None,
    )
    return ReplayedProposal(result, composed, found)


def _replay(doc: SourceDocument, setting: Replay) -> Replayed:
    """``doc`` replayed, timed, and measured part by part."""
    started = time.perf_counter()
    replayed = replayed_proposal(doc, setting)
    action, found = replayed.composed.action, replayed.investigation
    outcome = reason = None
    cited: tuple[str, ...] = ()
    if found is not None:
        outcome, reason = found.review.outcome.value, found.reason
        by_id = {s.id: s for s in found.snippets}
        cited = tuple(by_id[c].external_id for c in dict.fromkeys(found.citations) if c in by_id)
    record = ReplayRecord(
        doc.external_id,
        not action.empty,
        time.perf_counter() - started,
        proposed_parts(replayed.composed, cited),
    )
    gold = tuple(sorted(topical(doc.labels)))
    classification = replayed.result.classification.value
    fixes = tuple(f for p in replayed.composed.parts.parts for f in p.fixes)
    return Replayed(doc.external_id, classification, outcome, gold, record, reason, fixes)


def proposed_parts(composed: Composed, cited: tuple[str, ...] = ()) -> tuple[ProposedPart, ...]:
    """What is measured of a proposal: its topical labels (whoever proposed them), the related
    issues (those the investigation cited, then the part's), and every other kept part's items,
    whatever its name; a part with nothing is not listed."""
    kept = {p.name: tuple(i.ref for i in p.items) for p in composed.parts.kept}
    labels = tuple(sorted(topical(composed.action.labels)))
    related = cited + kept.pop(PartName.RELATED, ())
    kept.pop(PartName.LABELS, None)
    parts = (
        ProposedPart(PartName.LABELS, labels),
        ProposedPart(PartName.RELATED, related),
        *(ProposedPart(name, refs) for name, refs in kept.items()),
    )
    return tuple(p for p in parts if p.items)
