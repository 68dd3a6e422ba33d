"""Calibrating the relevance floor: relevance of related pairs against unrelated ones.

For a pair (query report, earlier report) the score is exactly what search would give the earlier
report as a hit for the query: the relevance (``retrieval.relevance``) of the best cosine between
the query's embedding and the report's chunks, embedded as the indexer embeds them. Three
distributions: related pairs (duplicates), random pairs of the same corpus, and the best hit of
each report of another corpus (a topic the index does not hold: real but unrelated snippets).
For each candidate floor, the share of each distribution at or above it. No database is used.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from resolveflow.adapters.embedder.protocol import Embedder, Vectors
from resolveflow.errors import InvalidInput
from resolveflow.evals.duplicates import query_and_target
from resolveflow.retrieval.chunking import (
    DEFAULT_VECTORS_PER_REPORT,
    chunk_document,
    embedding_text,
    gets_vector,
    normalize_text,
    query_text,
)
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.relevance import relevance
from resolveflow.retrieval.sources import read_corpus, read_pairs

FLOORS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
RANDOM_PAIRS = 2000


@dataclass(frozen=True)
class Embedded:
    ids: list[str]
    chunks: Vectors
    owner: np.ndarray[Any, np.dtype[np.int64]]
    queries: Vectors


def embed_corpus(embedder: Embedder, docs: list[SourceDocument]) -> Embedded:
    texts: list[str] = []
    owner: list[int] = []
    for i, doc in enumerate(docs):
        title = normalize_text(doc.title)
        for chunk in chunk_document(title, doc.body, doc.comments):
            if not gets_vector(doc.kind, chunk.ordinal, DEFAULT_VECTORS_PER_REPORT):
                continue
            texts.append(embedding_text(title, chunk.section, chunk.text))
            owner.append(i)
    queries = embedder.embed_documents([query_text(f"{d.title}\n\n{d.body}") for d in docs])
    return Embedded(
        [d.external_id for d in docs], embedder.embed_documents(texts), np.array(owner), queries
    )


def _summary(values: list[float]) -> dict[str, Any]:
    array = np.array(values) if values else np.zeros(1)
    quantiles = {
        f"p{int(p * 100):02d}": round(float(np.quantile(array, p)), 4)
        for p in (0.05, 0.25, 0.5, 0.75, 0.95)
    }
    return {"n": len(values), **quantiles, "max": round(float(array.max()), 4)}


def calibrate(
    embedder: Embedder, corpus: Path, pairs_file: Path, negatives: Path | None, seed: int = 7
) -> dict[str, Any]:
    docs = list(read_corpus(corpus, "calibration"))
    index = {doc.external_id: i for i, doc in enumerate(docs)}
    data = embed_corpus(embedder, docs)
    space = embedder.space

    def score(query: int, target: int) -> float:
        cosine = float((data.chunks[data.owner == target] @ data.queries[query]).max())
        return relevance(space, cosine)

    pairs = read_pairs(pairs_file)
    related: list[float] = []
    for a, b in pairs:
        if a not in index or b not in index:
            raise InvalidInput(f"pair {a}-{b}: both ids must be in {corpus.name}")
        placed = query_and_target(docs[index[a]], docs[index[b]])
        if placed is not None:
            related.append(score(index[placed[0].external_id], index[placed[1].external_id]))
    known = {frozenset(pair) for pair in pairs}
    rng = random.Random(seed)  # noqa: S311 - a reproducible sample, not a secret
    unrelated: list[float] = []
    while len(unrelated) < min(RANDOM_PAIRS, len(docs) * (len(docs) - 1) // 2 - len(known)):
        first, second = rng.sample(range(len(docs)), 2)
        if frozenset((docs[first].external_id, docs[second].external_id)) not in known:
            unrelated.append(score(first, second))
    distributions = {"related_pairs": related, "random_pairs": unrelated}
    if negatives is not None:
        other = embed_corpus(embedder, list(read_corpus(negatives, "negatives")))
        best = (other.queries @ data.chunks.T).max(axis=1)
        distributions["best_hit_of_another_corpus"] = [relevance(space, float(c)) for c in best]
    return {
        "space": str(space),
        "distributions": {k: _summary(v) for k, v in distributions.items()},
        "share_at_or_above": [
            {
                "floor": f,
                **{
                    k: round(float(np.mean(np.array(v) >= f)), 4) if v else 0.0
                    for k, v in distributions.items()
                },
            }
            for f in FLOORS
        ],
    }
