"""A repository's git history as its past tasks, with no index and no tracker.

When the tenant's index holds no task for a ticket (nothing indexed, or only pages), the commits
of the ticket repository's local clone before the ticket are its past tasks: a commit whose
subject ends ``(#N)`` is pull request N (its squash commit), any other commit is a task of its
own, whose fix is itself. They are found as the index's search finds tasks: the commits sharing
the ticket's words (BM25, ``refine/domain/commit_search.py``), the best ``CANDIDATES`` of them
then embedded with the ticket and fused by the search's own weights for tasks (cosine and the
words' score scaled by the best), so their ``score`` and ``cosine`` mean what an indexed task's
do and the relevance rules judge them alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.adapters.git import CommitInfo
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.domain.commit_messages import squash_pr
from resolveflow.refine.domain.commit_search import rank_texts
from resolveflow.refine.domain.document import (
    COMMIT_KIND,
    GIT_SOURCE_PREFIX,
    RefineDocument,
    RelatedTask,
    TaskKind,
)
from resolveflow.retrieval.chunking import query_text
from resolveflow.retrieval.fusion import FusionParams

CANDIDATES = 100  # the commits found by their words that are then placed by meaning
EXCERPT_CHARS = 300


def commit_text(commit: CommitInfo) -> str:
    return f"{commit.subject}\n\n{commit.message}".strip()


def history_tasks(
    doc: RefineDocument,
    history: RepositoryHistory,
    embedder: Embedder,
    fusion: FusionParams,
    k: int,
) -> list[RelatedTask]:
    """The ``k`` commits before the ticket most like it, as related tasks, best first."""
    as_of = doc.ticket.created_at
    commits = [c for c in history.commits if as_of is None or c.committed_at < as_of]
    query = query_text(f"{doc.ticket.title}\n\n{doc.ticket.body}")
    found = rank_texts(query, [commit_text(c) for c in commits])[:CANDIDATES]
    if not found:
        return []
    chosen = [commits[at] for at, _ in found]
    top = found[0][1]
    cosines = _cosines(embedder, query, chosen)
    scored = [
        (fusion.vector_weight * cos + fusion.lexical_weight * lexical / top, cos, commit)
        for (_, lexical), cos, commit in zip(found, cosines, chosen, strict=True)
    ]
    scored.sort(key=lambda row: (-row[0], -row[1], row[2].sha))
    tasks: dict[str, RelatedTask] = {}  # a pull request merged twice (a revert) is one task
    for fused, cos, commit in scored:
        task = _task(history.name, commit, fused, cos)
        tasks.setdefault(task.external_id, task)
    return list(tasks.values())[:k]


def _cosines(embedder: Embedder, query: str, commits: Sequence[CommitInfo]) -> list[float]:
    texts = [query_text(commit_text(c)) or c.sha for c in commits]
    vectors = embedder.embed_documents(texts)
    asked = embedder.embed_query(query)
    return [float(v) for v in vectors @ asked]


def _task(repository: str, commit: CommitInfo, fused: float, cosine: float) -> RelatedTask:
    pull = squash_pr(commit.subject)
    return RelatedTask(
        source=f"{GIT_SOURCE_PREFIX}{repository}",
        external_id=str(pull) if pull is not None else commit.sha,
        kind=TaskKind.PULL if pull is not None else COMMIT_KIND,
        title=commit.subject,
        score=round(fused, 6),
        cosine=round(cosine, 6),
        created_at=commit.committed_at,
        excerpt=commit.message[:EXCERPT_CHARS],
    )
