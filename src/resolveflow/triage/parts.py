"""The parts of a triage result that need more than the issue itself (``domain/parts.py``).

- **labels**: one label model per repository (``labels.py``), learned from the repository's own
  labelled issues in the tenant's index and learned again when that history moves (the index
  follows the ``issues`` webhook), so what maintainers label is known to the next runs. Only a
  topical label that passes the repository's one label filter (``rules.usable_labels``: it
  exists, is not on the issue yet, the policy's ``allowed_labels`` or the repository's file lets
  it through) may be proposed, and only above its own floor (learned with the model, never below
  the global one); its reason is the issue's own words that weigh most for it.
- **missing facts**: pure (``domain/missing_facts.py``).
- **related issues**: the earlier issues retrieval finds at or above the investigation's
  relevance floor, on every branch (the investigation's own comment lists them on its branch, so
  there the part is left out by the graph).
- **docs**: for a question-like issue (``domain/docs.py``), the passages of the tenant's
  documentation a ``DocsAnswerer`` (Ask, wired in ``bootstrap/``) answers it with, cited, or
  nothing.
- **a likely duplicate**: the one earlier issue the signals of ``domain/duplicate_signals.py``
  score highest, when it clears the duplicate floor; it is then not listed again as related.

``TriageParts`` is what a run joins to its proposal (``graph/build.py``) and what a backtest
measures, through this same code.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Protocol
from uuid import UUID

from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.adapters.git.records import CommitInfo
from resolveflow.domain.commit_messages import squash_pr
from resolveflow.domain.localize import PastFix, suggest_files
from resolveflow.errors import ResolveFlowError
from resolveflow.policy_file import RepositoryPolicy
from resolveflow.retrieval.records import Hit
from resolveflow.store import documents
from resolveflow.store.database import Database
from resolveflow.triage.domain.diagnosis import Snippet
from resolveflow.triage.domain.docs import DocsAnswer, docs_part, question_like
from resolveflow.triage.domain.duplicate_signals import (
    DUPLICATE_FLOOR,
    likely_original,
    shared_title_words,
)
from resolveflow.triage.domain.evidence import IssueEvidence
from resolveflow.triage.domain.parts import (
    EarlierFix,
    Part,
    PartItem,
    PartName,
    TriageParts,
    duplicate_part,
    left_out,
    missing_facts_part,
    related_paragraph,
)
from resolveflow.triage.domain.rules import usable_labels
from resolveflow.triage.investigation import InvestigationConfig, Retriever, snippets_from_hits
from resolveflow.triage.labels import (
    DEFAULT_MIN_PROBABILITY,
    TARGET_PRECISION,
    Example,
    LabelModel,
    tenant_examples,
    topical,
    training_text,
)

logger = logging.getLogger(__name__)

# A run that finds the labelled history moved waits this long for the model that knows it (on
# hf-datasets' 1,473 labelled issues a training with the labels' floors takes several seconds on
# 2 busy cores; most runs find nothing moved and wait for nothing).
LABEL_MODEL_WAIT_SECONDS = 2.0
SIMILAR_DEPTH = 50  # similar issues searched: enough that a few have a fix in the clone (refine's)
MAX_FIXED_SIMILAR = 20  # of them, the fixed ones whose changed files vote (refine's MAX_TASKS)
SUGGESTED_FILES = 5


@dataclass(frozen=True)
class Learned:
    model: LabelModel
    examples: int


_Key = tuple[UUID, str]  # (tenant, repository in lower case)


@dataclass
class _Wanted:
    """A model someone waits for: learned from the history as it is when its training starts,
    so it knows at least what ``mark`` (the newest watermark a caller saw) says."""

    mark: documents.LabelledWatermark
    future: Future[Learned] = field(default_factory=Future)


class LabelModels:
    """A label model per (tenant, repository), learned on first use and again only when the
    repository's labelled history in the index has moved since (``labelled_watermark``: an
    issue labelled, unlabelled or edited while labelled, as the index follows the ``issues``
    webhook), so a run with no change trains nothing and a label a maintainer applies is known
    to the runs after it. A training runs on a thread of its own, one at a time per repository;
    a run that finds the history moved waits up to ``wait_seconds`` for it (None: as long as it
    takes) and otherwise goes on with the model before. Thread-safe: a web process and its
    worker share one."""

    def __init__(
        self,
        db: Database,
        *,
        wait_seconds: float | None = LABEL_MODEL_WAIT_SECONDS,
        train: Callable[[Sequence[Example]], LabelModel] = LabelModel.train,
    ) -> None:
        self._db = db
        self._wait = wait_seconds
        self._train = train
        self._lock = threading.Lock()
        self._models: dict[_Key, tuple[documents.LabelledWatermark, Learned]] = {}
        self._wanted: dict[_Key, _Wanted] = {}  # the next training of each repository
        self._running: dict[_Key, _Wanted] = {}  # the one under way
        self._learners: set[_Key] = set()  # the repositories whose learning thread is alive
        self.trainings = 0  # how many models were learned: what the watermark saves

    def for_issue(self, tenant_id: UUID, evidence: IssueEvidence) -> Learned:
        return self.learned(tenant_id, evidence.repository)

    def learned(self, tenant_id: UUID, repository: str) -> Learned:
        key = (tenant_id, repository.lower())
        with self._db.tenant(tenant_id) as conn:
            mark = documents.labelled_watermark(conn, tenant_id, _source(key))
        with self._lock:
            current = self._models.get(key)
            if current is not None and current[0] == mark:
                return current[1]
            future = self._future_for(key, mark)
        if current is None:  # nothing learned before: wait for it
            return future.result()
        try:
            return future.result(timeout=self._wait)
        except FutureTimeout:
            return current[1]

    def _future_for(self, key: _Key, mark: documents.LabelledWatermark) -> Future[Learned]:
        """The training that will know ``mark``: the one under way if it started from it, else
        the next (started here when none is under way). Called with the lock held."""
        running = self._running.get(key)
        if running is not None and running.mark == mark:
            return running.future
        wanted = self._wanted.setdefault(key, _Wanted(mark))
        wanted.mark = mark
        if key not in self._learners:  # its learner takes the wanted one when it is free
            self._learners.add(key)
            name = f"label-model-{key[1]}"
            threading.Thread(target=self._learn, args=(key,), name=name, daemon=True).start()
        return wanted.future

    def _learn(self, key: _Key) -> None:
        """Train while someone wants a newer model of ``key``; then leave."""
        while True:
            with self._lock:
                wanted = self._wanted.pop(key, None)
                if wanted is None:
                    self._running.pop(key, None)
                    self._learners.discard(key)
                    return
                self._running[key] = wanted
            try:
                mark, learned = self._learned_now(key)
            except Exception as exc:  # the callers waiting get it; the thread goes on
                logger.warning("label model not learned: %s", exc, extra={"repo": key[1]})
                wanted.future.set_exception(exc)
                continue
            with self._lock:
                self._models[key] = (mark, learned)
                self.trainings += 1
            wanted.future.set_result(learned)

    def _learned_now(self, key: _Key) -> tuple[documents.LabelledWatermark, Learned]:
        """The watermark, then the history (which is at least as new as it), then the model."""
        tenant_id = key[0]
        with self._db.tenant(tenant_id) as conn:
            mark = documents.labelled_watermark(conn, tenant_id, _source(key))
        examples = tenant_examples(self._db, tenant_id, source=_source(key))
        return mark, Learned(self._train(examples), len(examples))


def _source(key: _Key) -> str:
    return f"github:{key[1]}"


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
    """The most probable label the issue may be given, when it clears its own floor (learned
    with the model from the repository's history; never below ``floor``, the global one)."""
    if not learned.model.labels:
        return left_out(PartName.LABELS, "no labelled history of this repository to learn from")
    topics = sorted(topical(evidence.repository_labels))
    allowed = set(usable_labels(topics, policy.allowed_labels, evidence).labels)
    text = training_text(evidence.title, evidence.body)
    model = learned.model
    [best] = model.suggest_many([text], allowed=allowed, min_probability=0.0, own_floors=False)
    if best is None:
        return left_out(PartName.LABELS, "no label the issue may be given was learned")
    score = round(best.probability, 3)
    own = model.floor(best.label, floor)
    if best.probability < own:
        why = f"the likeliest label, {best.label}, is below its floor"
        if own > 1.0:
            why = f"the likeliest label, {best.label}, was never right often enough to propose"
        return left_out(PartName.LABELS, why, score, round(min(own, 1.0), 3))
    words = model.reasons(text, best.label)
    why = f"learned from {learned.examples} labelled issues of this repository"
    why += "; " + _floor_said(model, best.label, own)
    if words:
        why += "; the issue mentions " + ", ".join(f"'{word}'" for word in words)
    return Part(PartName.LABELS, score, round(own, 3), (PartItem(best.label, score, why),))


def _floor_said(model: LabelModel, label: str, floor: float) -> str:
    if label in model.floors and model.floors[label] >= floor:
        return (
            f"its floor {floor:.2f}, above which it was right at least {TARGET_PRECISION:.0%} "
            "of the time on this repository's held-out issues"
        )
    return f"its floor {floor:.2f} (the global one)"


def related_part(
    hits: list[Hit],
    evidence: IssueEvidence,
    config: InvestigationConfig,
    duplicate: str | None = None,
) -> Part:
    """The earlier issues that look related, at or above the relevance floor (the
    investigation's, calibrated by ``eval floor``), with links and how each was resolved; not
    ``duplicate``, the issue the duplicate part names."""
    found = snippets_from_hits(hits[: config.top_k], evidence)
    issues = [s for s in found if s.kind == "issue" and s.external_id != duplicate]
    best = round(max((s.relevance for s in issues), default=0.0), 3)
    floor = config.relevance_floor
    related = [s for s in issues if s.relevance >= floor][: config.max_related]
    if not related:
        why = "no earlier issue at or above the relevance floor"
        return left_out(PartName.RELATED, why, best if issues else None, floor)
    titles = [s.title for s in issues]
    words = shared_title_words(evidence.title, [s.title for s in related], titles)
    shared = {s.external_id: found for s, found in zip(related, words, strict=True)}
    items = tuple(
        PartItem(s.external_id, round(s.relevance, 3), _related_why(s, shared[s.external_id]))
        for s in related
    )
    paragraph = related_paragraph(related, evidence, shared)
    return Part(PartName.RELATED, best, floor, items, paragraph)


def _related_why(snippet: Snippet, shared: tuple[str, ...]) -> str:
    """Why an earlier issue looks related (the title words both use, how alike the texts are)
    and how it was resolved."""
    said = [f"both titles mention {', '.join(repr(w) for w in shared)}"] if shared else []
    said.append(f"the texts are alike (relevance {snippet.relevance:.2f})")
    resolved = _resolved(snippet.state, snippet.resolved_by)
    return "; ".join(said) + (f"; {resolved}" if resolved else "")


def files_part(
    history: RepositoryHistory | None,
    fixing_pulls: Callable[[list[str]], dict[str, list[str]]],
    evidence: IssueEvidence,
    similar: list[Hit],
) -> Part:
    """The files a change for this issue would likely touch (internal: shown to the team, never
    posted), ranked by ``domain/localize.py`` from the files the report names or its traceback
    runs through, and those the fixes of the most similar earlier issues changed, in the clone as
    it was when the issue was opened. Made for every report, not only failures: a feature's
    files are as useful to whoever takes it (on hf-datasets, failures only: Hit@5 0.56 over the
    fixed issues, 40 of 121 not read as failures; every report: 0.79). The part carries those
    earlier fixes (each similar issue, its commits, pull requests and subject line) for the run
    page and ``backtest --items``; it has no paragraph, so nothing of it is posted."""
    if history is None:
        return left_out(PartName.FILES, "no local clone of this repository is configured")
    snapshot = history.snapshot(evidence.created_at)
    if snapshot is None:
        return left_out(PartName.FILES, "the clone has no commit from before the issue")
    files = history.files_at(snapshot)
    found = _past_fixes(history, fixing_pulls, similar, evidence.created_at)
    fixes = _voting(history, found, frozenset(files))
    text = f"{evidence.title}\n\n{evidence.body}"
    ranked = suggest_files(text, files, {}, fixes, limit=SUGGESTED_FILES)
    if not ranked:
        return left_out(PartName.FILES, "nothing in the report or in similar fixes names a file")
    items = tuple(
        PartItem(r.path, round(r.score, 4), "; ".join(dict.fromkeys(r.reasons))) for r in ranked
    )
    earlier = tuple(_earlier(fix) for fix in found)
    # A ranking, not a probability: each file keeps its own score, the part none (no floor, no
    # band: it is never posted, so never decided).
    return Part(PartName.FILES, None, None, items, fixes=earlier)


@dataclass(frozen=True)
class _Found:
    """A similar earlier issue and the commits of the clone that fixed it."""

    hit: Hit
    commits: tuple[CommitInfo, ...]


def _past_fixes(
    history: RepositoryHistory,
    fixing_pulls: Callable[[list[str]], dict[str, list[str]]],
    similar: list[Hit],
    as_of: datetime,
) -> list[_Found]:
    """The similar earlier issues that a commit of the clone fixed before ``as_of``: the
    commits that say they fix one, and the squash commits of the pull requests that do."""
    ids = [hit.external_id for hit in similar if hit.external_id.isdigit()]
    pulls = fixing_pulls(ids) if ids else {}
    found: list[_Found] = []
    for hit in similar:
        if not hit.external_id.isdigit():
            continue
        commits = list(history.by_issue.get(int(hit.external_id), []))
        commits += history.squash_commits(pulls.get(hit.external_id, []))
        kept = {c.sha: c for c in commits if c.committed_at < as_of}
        if kept:
            found.append(_Found(hit, tuple(kept.values())))
        if len(found) == MAX_FIXED_SIMILAR:
            break
    return found


def _voting(
    history: RepositoryHistory, found: list[_Found], in_snapshot: frozenset[str]
) -> list[PastFix]:
    """Each fix as ``suggest_files`` weighs it: the files its commits changed."""
    stats = history.stats([c.sha for fix in found for c in fix.commits])
    return [
        PastFix(
            fix.hit.external_id,
            fix.hit.fused,
            frozenset(f.path for c in fix.commits for f in stats.get(c.sha, [])) & in_snapshot,
            tuple(c.sha for c in fix.commits),
        )
        for fix in found
    ]


def _earlier(fix: _Found) -> EarlierFix:
    pulls = (squash_pr(c.subject) for c in fix.commits)
    return EarlierFix(
        fix.hit.external_id,
        tuple(c.sha for c in fix.commits),
        tuple(dict.fromkeys(str(n) for n in pulls if n is not None)),
        fix.commits[0].subject,
    )


def _resolved(state: str | None, resolved_by: tuple[str, ...]) -> str:
    if resolved_by:
        return f"{state or 'closed'}, fixed by {', '.join(resolved_by[:3])}"
    return state or ""


class DocsAnswerer(Protocol):
    """The tenant's documentation asked one question: the passages that answer it, with the
    answer's score and floor; None when nothing in the documents relates. Records nothing: a
    triage run is no person asking."""

    def __call__(self, tenant_id: UUID, question: str) -> DocsAnswer | None: ...


@dataclass(frozen=True)
class PartsConfig:
    label_floor: float = DEFAULT_MIN_PROBABILITY
    duplicate_floor: float = DUPLICATE_FLOOR
    # Related issues (None: no retrieval, the part is not made); ``as_of_creation``: search the
    # index as it was when the issue was opened (a backtest), not as it is now.
    retriever: Retriever | None = None
    investigation: InvestigationConfig | None = None
    as_of_creation: bool = False
    # The repository's local clone, read once (None: no likely files).
    history_for: Callable[[str], RepositoryHistory | None] | None = None
    # The tenant's documentation (None: no docs part is made).
    docs: DocsAnswerer | None = None


class PartsMaker:
    """Every part of one issue's triage result, for a live run and a backtest alike."""

    def __init__(
        self, labels: LabelSource, config: PartsConfig | None = None, db: Database | None = None
    ) -> None:
        self._labels = labels  # the repository's model when the issue is read
        self._config = config or PartsConfig()
        self._db = db  # the index's fix links, for the likely files

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
            parts += self._found(tenant_id, evidence, config.retriever, config.investigation)
        if config.docs is not None:
            parts.append(self._docs(tenant_id, evidence, config.docs))
        return TriageParts(tuple(parts))

    def _docs(self, tenant_id: UUID, evidence: IssueEvidence, answerer: DocsAnswerer) -> Part:
        """The documentation that answers a question-like issue; only such an issue is asked."""
        if not question_like(evidence.title, evidence.body):
            return docs_part(False, None)
        try:
            answer = answerer(tenant_id, f"{evidence.title}\n\n{evidence.body}")
        except ResolveFlowError as exc:
            return left_out(PartName.DOCS, f"the documents could not be searched: {exc.message}")
        return docs_part(True, answer)

    def _found(
        self,
        tenant_id: UUID,
        evidence: IssueEvidence,
        retriever: Retriever,
        investigation: InvestigationConfig,
    ) -> list[Part]:
        """The parts read from the similar earlier issues: a likely duplicate, related issues,
        likely files."""
        config = self._config
        as_of = evidence.created_at if config.as_of_creation else None
        exclude = (f"github:{evidence.repository.lower()}", str(evidence.number))
        text = f"{evidence.title}\n\n{evidence.body}"
        depth = max(investigation.top_k, SIMILAR_DEPTH)
        try:
            hits = retriever.search(tenant_id, text, k=depth, as_of=as_of, exclude=exclude)
        except ResolveFlowError as exc:
            why = f"retrieval failed: {exc.message}"
            names = (PartName.DUPLICATE, PartName.RELATED, PartName.FILES)
            return [left_out(name, why) for name in names]
        issues = [h for h in hits if h.kind == "issue" and (h.source, h.external_id) != exclude]
        history = config.history_for(evidence.repository) if config.history_for else None
        fixing = partial(self._fixing_pulls, tenant_id, issues[0].source if issues else "")
        candidate = likely_original(
            evidence.title, evidence.body, snippets_from_hits(issues, evidence)
        )
        duplicate = duplicate_part(candidate, evidence, config.duplicate_floor)
        shown = duplicate.items[0].ref if duplicate.kept else None
        return [
            duplicate,
            related_part(hits, evidence, investigation, shown),
            files_part(history, fixing, evidence, issues),
        ]

    def _fixing_pulls(self, tenant_id: UUID, source: str, ids: list[str]) -> dict[str, list[str]]:
        if self._db is None:
            return {}
        with self._db.tenant(tenant_id) as conn:
            return documents.fixing_pulls(conn, tenant_id, source, ids)
