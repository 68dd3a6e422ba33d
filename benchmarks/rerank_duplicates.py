"""A learning-to-rank re-ranker over the duplicates' top 30, for ``benchmarks/generalization.py
--rerank`` (issue 16: what the field does beyond one embedding). Not part of the product.

Eight features per candidate (fused score, cosine, BM25, 1/rank, title cosine, title word overlap,
the summed idf of shared identifiers such as CamelCase, dotted names, exception names and paths,
and the creation-time gap), a logistic regression scored leave-one-query-out on the SeaMonkey dev
pairs, then the same with one feature left out at a time. The findings are in docs/retrieval.md.
"""

from __future__ import annotations

import math
import re
from typing import Any

from generalization import (
    DEFAULT,
    Measured,
    first_rank,
    ids,
    mrr_at,
    recall_at,
    refuse,
)

from resolveflow.retrieval.search import SearchParams

IDENTIFIER = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # dotted: prefs, hosts, file.js, nsIFoo.bar
    r"|[a-z]+[A-Z]\w*|[A-Z]+[a-z0-9]+[A-Z]\w*"  # camelCase, CamelCase, LSOpenURLs
    r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+"  # NS_ERROR_FAILURE
    r"|\w*(?:Error|Exception)\b"
    r"|0x[0-9a-fA-F]{4,}"
    r"|(?:/[\w.-]+){2,}"  # paths
)
WORD = re.compile(r"[a-z0-9]{3,}")
FEATURES = ["fused", "cosine", "bm25", "1/rank", "title cos", "title jaccard", "idents", "gap"]


def identifiers(text: str) -> set[str]:
    return {match.lower() for match in IDENTIFIER.findall(text)}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def rerank_features(m: Measured, depth: int) -> tuple[list[Any], list[Any], list[list[str]]]:
    """Per query, its top ``depth`` by today's fusion: one feature row per candidate, whether it
    is a listed duplicate of the query, and the candidates' ids."""
    import numpy as np

    corpus = m.corpus
    idents = {i: identifiers(f"{d.title}\n{d.body}") for i, d in corpus.items()}
    df: dict[str, int] = {}
    for found in idents.values():
        for x in found:
            df[x] = df.get(x, 0) + 1
    idf = {x: math.log(len(corpus) / n) for x, n in df.items()}
    words = {i: set(WORD.findall(d.title.lower())) for i, d in corpus.items()}
    positives: dict[str, set[str]] = {}
    for q in m.duplicates[DEFAULT[0]]:
        positives.setdefault(q.id, set()).update(q.right)
    features, labels, candidates = [], [], []
    for q in m.duplicates[DEFAULT[0]]:
        docs = refuse(q.rows, SearchParams().fusion, depth)
        top_lexical = max(d.lexical for d in docs) or 1.0
        rows = []
        for n, d in enumerate(docs, start=1):
            c = d.best.external_id
            gap = abs((corpus[q.id].created_at - corpus[c].created_at).total_seconds()) / 86_400
            rows.append([
                d.fused, d.cosine, d.lexical / top_lexical, 1.0 / n,
                float(np.dot(m.title_vectors[q.id], m.title_vectors[c])),
                jaccard(words[q.id], words[c]),
                math.log1p(sum(idf[x] for x in idents[q.id] & idents[c])),
                math.log1p(gap),
            ])  # fmt: skip
        features.append(np.array(rows))
        labels.append(np.array([c in positives[q.id] for c in ids(docs)]))
        candidates.append(ids(docs))
    return features, labels, candidates


def rerank(m: Measured, depth: int = 30) -> None:
    """Logistic regression (C = 1, balanced, standardised features; fixed before measuring),
    leave-one-query-out: each query is ranked by a model fitted on the other queries only. Then
    the same with one feature left out at a time (ablations, measured after the first result)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    def fit(x: Any, y: Any) -> tuple[StandardScaler, LogisticRegression]:
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
        return scaler, model.fit(scaler.transform(x), y)

    queries = m.duplicates[DEFAULT[0]]
    features, labels, candidates = rerank_features(m, depth)
    before = [first_rank(c, q.right, depth) for c, q in zip(candidates, queries, strict=True)]

    def loqo(columns: list[int]) -> list[int | None]:
        after = []
        for held, q in enumerate(queries):
            train = [i for i, other in enumerate(queries) if other.id != q.id]
            x = np.vstack([features[i][:, columns] for i in train])
            scaler, model = fit(x, np.concatenate([labels[i] for i in train]))
            scores = model.decision_function(scaler.transform(features[held][:, columns]))
            order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))  # ties: fused
            after.append(first_rank([candidates[held][i] for i in order], q.right, depth))
        return after

    def line(name: str, ranks: list[int | None]) -> None:
        cells = [f"MRR@5 {mrr_at(ranks, 5):.3f}"]
        cells += [f"R@{k} {recall_at(ranks, k):.3f}" for k in (1, 5, 10)]
        print(f"  {name}: {'  '.join(cells)}")

    print(f"\nre-ranker over the top {depth}, leave-one-query-out, {len(queries)} queries")
    print(f"  target in the top {depth}: {recall_at(before, depth):.3f}")
    line("without", before)
    after = loqo(list(range(len(FEATURES))))
    line("with", after)
    moved = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    print(f"  ranks that moved (before, after): {moved}")
    _, model = fit(np.vstack(features), np.concatenate(labels))
    coefficients = zip(FEATURES, model.coef_[0], strict=True)
    print("  coefficients, all queries: " + ", ".join(f"{n} {c:+.2f}" for n, c in coefficients))
    for left_out in range(len(FEATURES)):
        line(
            f"without {FEATURES[left_out]}",
            loqo([i for i in range(len(FEATURES)) if i != left_out]),
        )
