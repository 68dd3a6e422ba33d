"""Calibrating refine's relevance thresholds (domain/refine_rules.py) on dev data only.

The SeaMonkey duplicate pairs (../shared/data/seamonkey): each pair's later report is the ticket,
the reports created before it are the candidates, ranked by the product's embedder (MiniLM, the
same query clean-up and document chunks as the index; a document's cosine is its best chunk's).
A duplicate is the clearest "high"; the other top-10 candidates are mostly "low". Printed: the
cosine quantiles of both, and for thresholds around the chosen ones, the share of top-10
candidates at or above each that are the duplicate, and the share of duplicates reached.

    .venv/bin/python benchmarks/refine_relevance.py ../shared/data/seamonkey
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import numpy as np

from resolveflow.adapters.embedder.local import LocalMiniLM
from resolveflow.domain.refine_rules import HIGH_COSINE, MEDIUM_COSINE
from resolveflow.retrieval.chunking import DEFAULT_VECTORS_PER_REPORT as VECTORS_PER_REPORT
from resolveflow.retrieval.chunking import chunk_document, embedding_text, query_text


def main(folder: Path) -> None:
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    pairs = [line.split("\t") for line in (folder / "duplicates.tsv").read_text().splitlines()[1:]]
    ids = [d["id"] for d in docs]
    created = np.array([datetime.fromisoformat(d["created_at"]).timestamp() for d in docs])
    embedder = LocalMiniLM()
    owners, texts = [], []
    for i, d in enumerate(docs):
        for chunk in chunk_document(d["title"], d.get("body") or "")[:VECTORS_PER_REPORT]:
            owners.append(i)
            texts.append(embedding_text(d["title"], chunk.section, chunk.text))
    chunk_vectors = embedder.embed_documents(texts)
    owner = np.array(owners)
    dup_cos, other_cos, top = [], [], []  # top: (cosine, is duplicate) of every top-10 candidate
    for a, b in pairs:
        ia, ib = ids.index(a.strip()), ids.index(b.strip())
        q, t = (ia, ib) if created[ia] > created[ib] else (ib, ia)
        query = embedder.embed_query(
            query_text(f"{docs[q]['title']}\n\n{docs[q].get('body') or ''}")
        )
        sims = chunk_vectors @ query.reshape(-1)
        best = np.full(len(docs), -1.0)
        np.maximum.at(best, owner, sims)
        best[created >= created[q]] = -1.0  # only earlier reports are candidates
        ranked = np.argsort(-best)[:10]
        dup_cos.append(float(best[t]))
        for i in ranked:
            top.append((float(best[i]), i == t))
            if i != t:
                other_cos.append(float(best[i]))
    print(
        f"pairs {len(pairs)}; duplicate cosine quantiles (10/25/50/75%):",
        np.round(np.quantile(dup_cos, [0.1, 0.25, 0.5, 0.75]), 3),
    )
    print(
        "other top-10 cosine quantiles (50/75/90/95%):",
        np.round(np.quantile(other_cos, [0.5, 0.75, 0.9, 0.95]), 3),
    )
    for threshold in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85):
        above = [d for c, d in top if c >= threshold]
        precision = sum(above) / len(above) if above else float("nan")
        reached = sum(c >= threshold for c in dup_cos) / len(dup_cos)
        mark = (
            " <- HIGH"
            if threshold == HIGH_COSINE
            else " <- MEDIUM"
            if threshold == MEDIUM_COSINE
            else ""
        )
        print(
            f"cosine >= {threshold:.2f}: {len(above):4d} top-10 candidates, "
            f"duplicate share {precision:.2f}, duplicates reached {reached:.2f}{mark}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
