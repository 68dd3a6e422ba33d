"""Duplicate-report retrieval, measured through the product's own index and search.

Protocol: each pair's later-created report is the query; only reports created before it are
candidates (the search's as-of filter), and the query itself is excluded. The query text is the
report's title and body, exactly what triage would search with. ``misses`` names each query whose
duplicate did not come first, with its rank and what came first instead.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.errors import InvalidInput
from resolveflow.retrieval.ingest import Indexer, IngestStats
from resolveflow.retrieval.metrics import RankingReport, ranking_report
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import read_corpus, read_pairs
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

SOURCE = "eval"
DEPTH = 10  # R@10 needs the top ten


@dataclass(frozen=True)
class DuplicateMiss:
    query: str  # the later report's id
    duplicate: str  # the earlier report it duplicates
    rank: int | None  # of the duplicate in the top ten; None: not there
    first: str | None  # what came first instead

    def as_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class DuplicateResult:
    report: RankingReport
    ranks: list[int | None]
    pairs_skipped: int
    ingest: IngestStats
    misses: tuple[DuplicateMiss, ...] = ()


def query_and_target(
    a: SourceDocument, b: SourceDocument
) -> tuple[SourceDocument, SourceDocument] | None:
    if a.created_at is None or b.created_at is None or a.created_at == b.created_at:
        return None  # no "later" report: the protocol cannot place this pair
    return (a, b) if a.created_at > b.created_at else (b, a)


def evaluate_duplicates(
    db: Database,
    embedder: Embedder,
    corpus: Path,
    pairs_file: Path,
    params: SearchParams | None = None,
) -> DuplicateResult:
    documents = {doc.external_id: doc for doc in read_corpus(corpus, SOURCE)}
    pairs = read_pairs(pairs_file)
    queries: list[tuple[SourceDocument, SourceDocument]] = []
    for a, b in pairs:
        if a not in documents or b not in documents:
            raise InvalidInput(f"pair {a}-{b}: both ids must be in {corpus.name}")
        placed = query_and_target(documents[a], documents[b])
        if placed is not None:
            queries.append(placed)
    with scratch_tenant(db) as tenant_id:
        ingest = Indexer(db, embedder).upsert(tenant_id, documents.values())
        searcher = Searcher(db, embedder, params)
        ranks: list[int | None] = []
        misses: list[DuplicateMiss] = []
        for query, target in queries:
            hits = searcher.search(
                tenant_id,
                f"{query.title}\n\n{query.body}",
                k=DEPTH,
                as_of=query.created_at,
                exclude=(SOURCE, query.external_id),
            )
            found = [hit.external_id for hit in hits]
            rank = found.index(target.external_id) + 1 if target.external_id in found else None
            ranks.append(rank)
            if rank != 1:
                first = found[0] if found else None
                misses.append(DuplicateMiss(query.external_id, target.external_id, rank, first))
    report = ranking_report(ranks)
    logger.info("duplicates evaluated", extra=report.as_json())
    return DuplicateResult(report, ranks, len(pairs) - len(queries), ingest, tuple(misses))
