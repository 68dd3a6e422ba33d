"""Does refine's context point at the right code? Suggested files against each issue's own fix.

Protocol: the issues and pull requests are indexed into a scratch tenant (pull requests' "fixes
#N" become fix links, as in a live index). For every issue created on or after ``since`` that has
a merged fixing pull request (``fix_links.tsv``) whose squash commit is in the clone and changed
a file under ``src/``, in creation order and as of the moment the issue was created (only earlier
issues, pull requests and commits are visible; the issue itself is excluded), refine's related
and changes steps run on the issue's title and body. A hit: a suggested file under ``src/`` that
the issue's own fix changed. Figures: Hit@3, Hit@5, MRR@10, and side by side the two reference
rankings of the issue: similarity-weighted votes alone, and the files changed most often.
"""

from __future__ import annotations

import bisect
import csv
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.adapters.git import GitRepository
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.domain.localize import PastFix, vote_files
from resolveflow.errors import InvalidInput
from resolveflow.refine.changes import SIMILAR_DEPTH, ChangesDeps, changes_step, task_from_hit
from resolveflow.refine.domain.document import RefineDocument, Ticket, TicketSource
from resolveflow.refine.domain.rules import FileRules, RefinePolicy
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import read_corpus
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

SOURCE = "eval"
# Dev targets of issue 14 (hf-datasets issues of 2023).
TARGETS = {"hit@5": 0.78, "mrr@10": 0.56}
SCOPE = FileRules(include=("src/**",))
TASKS = RefinePolicy()  # which hits are tasks: the related step's rule (no source marked)
DEPTH = 10


@dataclass(frozen=True)
class Ranking:
    hit3: float
    hit5: float
    mrr10: float

    def as_json(self) -> dict[str, float]:
        return {
            "hit@3": round(self.hit3, 3),
            "hit@5": round(self.hit5, 3),
            "mrr@10": round(self.mrr10, 3),
        }


@dataclass(frozen=True)
class ChangesResult:
    issues: int
    refine: Ranking
    votes_only: Ranking
    most_changed: Ranking
    ranks: list[int | None]  # refine's rank of the first right file, per issue (None: not in 10)
    skipped_no_src: int  # issues whose fix changed no file under src/ (cannot be hit)

    def as_json(self) -> dict[str, Any]:
        return {
            "issues": self.issues,
            "refine": self.refine.as_json(),
            "votes_only": self.votes_only.as_json(),
            "most_changed": self.most_changed.as_json(),
            "skipped_fix_outside_src": self.skipped_no_src,
        }

    def checks(self) -> dict[str, dict[str, Any]]:
        values = self.refine.as_json()
        return {
            name: {"value": values[name], "target": target, "met": values[name] >= target}
            for name, target in TARGETS.items()
        }


def read_fix_links(path: Path) -> dict[str, list[str]]:
    """issue -> merged fixing pull requests, from ``issue<TAB>pr<TAB>pr_merged``."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    links: dict[str, list[str]] = {}
    for number, row in enumerate(rows, start=2):
        if not row.get("issue") or not row.get("pr"):
            raise InvalidInput(f"{path.name} line {number}: expected issue, pr and pr_merged")
        if row.get("pr_merged", "").strip() == "1":
            links.setdefault(row["issue"].strip(), []).append(row["pr"].strip())
    return links


def evaluate_changes(
    db: Database,
    embedder: Embedder,
    params: SearchParams,
    corpora: Sequence[Path],
    fix_links: Path,
    clone: Path,
    *,
    since: datetime,
) -> ChangesResult:
    links = read_fix_links(fix_links)
    history = RepositoryHistory.read("corpus", GitRepository(clone))
    documents = [d for path in corpora for d in read_corpus(path, SOURCE)]
    queries, eligible = _queries(documents, links, history, since)
    with scratch_tenant(db) as tenant_id:
        Indexer(db, embedder).upsert(tenant_id, documents)
        searcher = Searcher(db, embedder, params)
        deps = ChangesDeps(db, tenant_id, {"corpus": history}, files=SCOPE, excerpts=False)
        most = MostChanged(history)  # the queries come oldest first
        rows = [_one(searcher, deps, most, doc, gold) for doc, gold in queries]
    ranks = [r[0] for r in rows]
    return ChangesResult(
        issues=len(rows),
        refine=_ranking(ranks),
        votes_only=_ranking([r[1] for r in rows]),
        most_changed=_ranking([r[2] for r in rows]),
        ranks=ranks,
        skipped_no_src=eligible - len(rows),
    )


def _queries(
    documents: Sequence[SourceDocument],
    links: dict[str, list[str]],
    history: RepositoryHistory,
    since: datetime,
) -> tuple[list[tuple[SourceDocument, set[str]]], int]:
    """The issues to replay with their right files, and how many had a fix in the clone."""
    chosen = []
    eligible = 0
    for doc in sorted(documents, key=lambda d: (d.created_at or since, d.external_id)):
        if doc.kind != "issue" or doc.created_at is None or doc.created_at < since:
            continue
        commits = history.squash_commits(links.get(doc.external_id, []))
        gold = {p for p in history.changed_files(commits) if p.startswith("src/")}
        eligible += bool(commits)
        if gold:
            chosen.append((doc, gold))
    return chosen, eligible


def _one(
    searcher: Searcher,
    deps: ChangesDeps,
    most: MostChanged,
    doc: SourceDocument,
    gold: set[str],
) -> tuple[int | None, int | None, int | None]:
    hits = searcher.search(
        deps.tenant_id,
        f"{doc.title}\n\n{doc.body}",
        k=SIMILAR_DEPTH,
        as_of=doc.created_at,
        exclude=(SOURCE, doc.external_id),
    )
    ticket = Ticket(
        source=TicketSource.TEXT,
        title=doc.title,
        body=doc.body,
        created_at=doc.created_at,
        repository="corpus",
    )
    tasks = [task_from_hit(h) for h in hits if TASKS.is_task(h.kind, h.source)]
    refined = changes_step(RefineDocument(ticket=ticket, related=tasks), deps)
    ranked = [f.path for f in refined.suggested_files]
    fixes = [
        PastFix(
            c.task,
            next(t.score for t in refined.related if t.external_id == c.task),
            frozenset(f.path for f in c.files if f.path.startswith("src/")),
        )
        for c in refined.changes
    ]
    votes, _ = vote_files(fixes)
    by_votes = [p for p, _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))]
    assert doc.created_at is not None  # _queries keeps only issues with a creation time
    return _rank(ranked, gold), _rank(by_votes, gold), _rank(most.before(doc.created_at), gold)


class MostChanged:
    """The files under ``src/`` ranked by how many commits before a moment changed them: a
    running count, so replaying issues in time order reads and counts each commit once (not
    every earlier commit again for each issue). A moment earlier than the last starts over."""

    def __init__(self, history: RepositoryHistory) -> None:
        self.history = history
        self._times = [c.committed_at for c in history.commits]  # oldest first
        self._counts: Counter[str] = Counter()
        self._counted = 0  # history.commits[:_counted] are in _counts

    def before(self, moment: datetime) -> list[str]:
        end = bisect.bisect_left(self._times, moment)  # the commits strictly before ``moment``
        if end < self._counted:
            self._counts, self._counted = Counter(), 0
        new = [c.sha for c in self.history.commits[self._counted : end]]
        for stats in self.history.stats(new).values():
            self._counts.update(s.path for s in stats if s.path.startswith("src/"))
        self._counted = end
        return [p for p, _ in sorted(self._counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def _rank(ranked: Sequence[str], gold: set[str]) -> int | None:
    return next((n for n, path in enumerate(ranked[:DEPTH], start=1) if path in gold), None)


def _ranking(ranks: Sequence[int | None]) -> Ranking:
    n = len(ranks) or 1
    return Ranking(
        hit3=sum(1 for r in ranks if r is not None and r <= 3) / n,
        hit5=sum(1 for r in ranks if r is not None and r <= 5) / n,
        mrr10=sum(1 / r for r in ranks if r is not None) / n,
    )
