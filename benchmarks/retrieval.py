"""Retrieval benchmarks (opt-in, not part of the test suite).

    python benchmarks/retrieval.py ingest [--reports 600] [--variants 128-int8,128-fp32,256-fp32]
                                          [--vectors-per-report 1,64] [--batch-size 16]
                                          [--embedder onnx|torch]
    python benchmarks/retrieval.py search [--sizes 10000,100000] [--queries 200] [--home DIR]
    python benchmarks/retrieval.py recall [--queries 200]

``ingest``: real issue reports (shared/data/hf-datasets) through the one upsert path with the local
MiniLM embedder (the default ONNX Runtime int8 one; ``--embedder torch`` for the torch path and
fp32); documents/s, chunks/s and the embedder's busy share of the wall time, per setting
of sequence length, int8 dynamic quantization and vectors per report.

``search``: synthetic text at scale (Zipf-distributed words from a fixed vocabulary), embedded by
the hashing embedder in 384 dimensions (so the built-in HNSW index is used; embedding 100k chunks
with MiniLM would take a quarter of an hour on 2 cores and measures the model, not the index).
One tenant per size. Hybrid search latency (database part; the query embedding is reported
separately) p50/p95, and at the largest size HNSW recall@10 against exact search.

``recall``: HNSW recall@10 against exact search on real MiniLM vectors (hf-datasets issues and pull
requests, about 12k chunks), for three ``ef_search`` floors.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.bootstrap.app import migrate
from resolveflow.retrieval.fusion import FusionParams
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import read_corpus
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def open_db(home: Path | None = None) -> tuple[Database, str]:
    home = home or Path(tempfile.mkdtemp(prefix="rf-bench-retrieval-"))
    url = embedded_database_url(home)
    migrate(url)
    return Database(url, max_size=4, statement_timeout_ms=600_000).open(), url


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# --- ingestion --------------------------------------------------------------------------------


def minilm(
    which: str, max_seq_length: int = 128, quantize: bool = True, batch_size: int = 16
) -> Embedder:
    """The product's default (ONNX Runtime int8) or the torch path (extra ``torch``)."""
    if which == "onnx":
        if not quantize:
            raise SystemExit("the ONNX model is int8 only: use --embedder torch for fp32")
        return OnnxMiniLM(max_seq_length=max_seq_length)
    from resolveflow.adapters.embedder.local import LocalMiniLM

    return LocalMiniLM(max_seq_length=max_seq_length, quantize=quantize, batch_size=batch_size)


def ingest(args: argparse.Namespace) -> None:
    corpus = DATA / "hf-datasets" / "issues.jsonl"
    if not corpus.exists():
        raise SystemExit(f"needs {corpus} (shared/data beside the checkout)")
    reports = list(read_corpus(corpus, "bench"))[: args.reports]
    db, _ = open_db()
    results = []
    for variant, vectors_per_report in itertools.product(
        args.variants.split(","), [int(v) for v in args.vectors_per_report.split(",")]
    ):
        seq, kind = variant.split("-")
        embedder = minilm(args.embedder, int(seq), kind == "int8", args.batch_size)
        embedder.embed_documents(["load the model before timing"])
        tenant = admin.add_tenant(db, f"ingest-{seq}-{kind}-{vectors_per_report}").id
        indexer = Indexer(db, embedder, vectors_per_report=vectors_per_report)
        started = time.perf_counter()
        stats = indexer.upsert(tenant, reports)
        wall = time.perf_counter() - started
        row = {
            "variant": variant,
            "vectors_per_report": vectors_per_report,
            "batch_size": args.batch_size,
            "reports": stats.documents,
            "chunks": stats.chunks,
            "seconds": round(wall, 2),
            "reports_per_s": round(stats.documents / wall, 1),
            "chunks_per_s": round(stats.chunks / wall, 1),
            # The embedder runs beside the writes, so this is its busy share of the wall time.
            "embedder_busy_share": round(stats.embed_seconds / wall, 3),
        }
        results.append(row)
        print(json.dumps(row))
    db.close()


# --- search at scale ----------------------------------------------------------------------------


def vocabulary(size: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def zipf_text(words: list[str], cumulative: list[float], n: int, rng: random.Random) -> str:
    return " ".join(rng.choices(words, cum_weights=cumulative, k=n))


def synthetic(n: int, words: list[str], weights: list[float], rng: random.Random, tag: str):  # type: ignore[no-untyped-def]
    for i in range(n):
        yield SourceDocument(
            source="synthetic",
            external_id=f"{tag}-{i}",
            kind="issue",
            title=zipf_text(words, weights, 6, rng),
            body=zipf_text(words, weights, 40, rng),
            created_at=T0 + timedelta(seconds=i),
        )


def sentence_pool() -> tuple[list[str], list[str]]:
    """Real titles and sentences (hf-datasets issues and pull requests, SeaMonkey reports)."""
    titles: list[str] = []
    sentences: list[str] = []
    files = [
        DATA / "hf-datasets" / "issues.jsonl",
        DATA / "hf-datasets" / "pulls.jsonl",
        DATA / "seamonkey" / "corpus.jsonl",
    ]
    for path in files:
        if not path.exists():
            raise SystemExit(f"needs {path} (shared/data beside the checkout)")
        for doc in read_corpus(path, "pool"):
            if doc.title.strip():
                titles.append(doc.title.strip())
            for part in re.split(r"(?<=[.!?])\s+|\n+", doc.body):
                sentence = part.strip()
                if 30 <= len(sentence) <= 240 and not re.search(
                    r"[{}<>=`|]|http|user-?agent", sentence, re.I
                ):
                    sentences.append(sentence)
    return titles, sentences


def realistic(n: int, titles: list[str], sentences: list[str], rng: random.Random, tag: str):  # type: ignore[no-untyped-def]
    """Reports recombined from real titles and sentences: text the model has meaning for, at any
    scale, so the vectors cluster as real ones do (word salad hashes to near-random vectors)."""
    for i in range(n):
        yield SourceDocument(
            source="synthetic",
            external_id=f"{tag}-{i}",
            kind="issue",
            title=rng.choice(titles),
            body=" ".join(rng.sample(sentences, 3)),
            created_at=T0 + timedelta(seconds=i),
        )


def timed_searches(
    searcher: Searcher, tenant: UUID, queries: list[str]
) -> tuple[list[float], list[float], list[list[str]]]:
    database_ms, embed_ms, results = [], [], []
    for query in queries:
        hits = searcher.search(tenant, query, k=10)
        assert searcher.last_timing is not None
        database_ms.append(searcher.last_timing.database_ms)
        embed_ms.append(searcher.last_timing.embed_ms)
        results.append([hit.external_id for hit in hits])
    return database_ms, embed_ms, results


def search(args: argparse.Namespace) -> None:
    rng = random.Random(7)
    embedder: Embedder
    if args.text == "zipf":
        words = vocabulary(20_000, rng)
        weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))
        embedder = HashingEmbedder(384)

        def make_query(r: random.Random) -> str:
            return zipf_text(words, weights, r.randint(4, 8), r)

        def documents(size: int):  # type: ignore[no-untyped-def]
            return synthetic(size, words, weights, rng, str(size))
    else:
        titles, sentences = sentence_pool()
        embedder = minilm(args.embedder)

        def make_query(r: random.Random) -> str:
            return f"{r.choice(titles)} {r.choice(sentences)}"

        def documents(size: int):  # type: ignore[no-untyped-def]
            return realistic(size, titles, sentences, rng, str(size))

    queries = [make_query(rng) for _ in range(args.queries)]
    # Other queries first, as a running server would have served: the embedded server starts
    # with empty shared buffers, and the first few hundred searches would measure disk reads.
    warmup_rng = random.Random(99)
    warmup = [make_query(warmup_rng) for _ in range(args.warmup)]
    db, _ = open_db(args.home)
    sizes = [int(s) for s in args.sizes.split(",")]
    existing = {t.name: t.id for t in admin.list_tenants(db)}
    for size in sizes:
        started = time.perf_counter()
        name = f"{args.text}-{size}"
        if name in existing:  # --home of an earlier run: reuse its index
            tenant = existing[name]
            chunks = size
        else:
            tenant = admin.add_tenant(db, name).id
            chunks = Indexer(db, embedder, batch_size=500).upsert(tenant, documents(size)).chunks
        load_s = time.perf_counter() - started
        with db.unscoped() as conn:
            conn.execute("ANALYZE chunks")
        tuned = SearchParams(ef_search_min=args.ef_search_min, max_term_share=args.max_term_share)
        hybrid = Searcher(db, embedder, tuned)
        timed_searches(hybrid, tenant, warmup)
        database_ms, embed_ms, _ = timed_searches(hybrid, tenant, queries)
        row: dict[str, object] = {
            "chunks": chunks,
            "load_seconds": round(load_s, 1),
            "path": "exact" if size <= SearchParams().exact_max_chunks else "hnsw",
            "hybrid_p50_ms": round(statistics.median(database_ms), 2),
            "hybrid_p95_ms": round(percentile(database_ms, 95), 2),
            "query_embed_p50_ms": round(statistics.median(embed_ms), 2),
        }
        if size == max(sizes):
            vector_only = FusionParams("weighted", 1.0, 0.0)
            approximate = Searcher(
                db, embedder, replace(tuned, fusion=vector_only, exact_max_chunks=0)
            )
            exact = Searcher(
                db, embedder, replace(tuned, fusion=vector_only, exact_max_chunks=10**9)
            )
            hnsw_ms, _, found = timed_searches(approximate, tenant, queries)
            exact_ms, _, truth = timed_searches(exact, tenant, queries)
            overlap = [len(set(a) & set(b)) / 10 for a, b in zip(found, truth, strict=True)]
            row.update(
                hnsw_recall_at_10=round(statistics.mean(overlap), 4),
                vector_hnsw_p95_ms=round(percentile(hnsw_ms, 95), 2),
                vector_exact_p95_ms=round(percentile(exact_ms, 95), 2),
            )
        print(json.dumps(row))
    db.close()


def recall(args: argparse.Namespace) -> None:
    """HNSW recall@10 against exact search on real MiniLM vectors (hf-datasets issues and pull
    requests), with the HNSW path forced."""
    folder = DATA / "hf-datasets"
    if not folder.exists():
        raise SystemExit(f"needs {folder} (shared/data beside the checkout)")
    documents = list(read_corpus(folder / "issues.jsonl", "hf")) + list(
        read_corpus(folder / "pulls.jsonl", "hf")
    )
    embedder = minilm(args.embedder)
    db, _ = open_db(args.home)
    existing = {t.name: t.id for t in admin.list_tenants(db)}
    tenant = existing.get("recall") or admin.add_tenant(db, "recall").id
    stats = Indexer(db, embedder).upsert(tenant, documents)
    with db.unscoped() as conn:
        conn.execute("ANALYZE chunks")
    rng = random.Random(11)
    queries = [doc.title for doc in rng.sample(documents, args.queries) if doc.title.strip()]
    vector_only = FusionParams("weighted", 1.0, 0.0)
    for ef_min in (40, 100, 200):
        params = SearchParams(vector_only, exact_max_chunks=0, ef_search_min=ef_min)
        approximate = Searcher(db, embedder, params)
        exact = Searcher(db, embedder, replace(params, exact_max_chunks=10**9))
        hnsw_ms, _, found = timed_searches(approximate, tenant, queries)
        exact_ms, _, truth = timed_searches(exact, tenant, queries)
        overlap = [len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(found, truth, strict=True)]
        print(
            json.dumps(
                {
                    "chunks": stats.chunks or "reused",
                    "ef_search_min": ef_min,
                    "hnsw_recall_at_10": round(statistics.mean(overlap), 4),
                    "hnsw_p95_ms": round(percentile(hnsw_ms, 95), 2),
                    "exact_p95_ms": round(percentile(exact_ms, 95), 2),
                }
            )
        )
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p_ingest = sub.add_parser("ingest")
    p_ingest.add_argument("--reports", type=int, default=600)
    p_ingest.add_argument("--variants", default="128-int8", help="SEQ-int8|fp32, comma-separated")
    p_ingest.add_argument(
        "--vectors-per-report", default="1", help="comma list; 64 embeds every chunk"
    )
    p_ingest.add_argument("--batch-size", type=int, default=16, help="the embedder's batch")
    p_search = sub.add_parser("search")
    p_search.add_argument("--sizes", default="10000,100000")
    p_search.add_argument("--queries", type=int, default=200)
    p_search.add_argument("--warmup", type=int, default=300, help="other queries first")
    p_search.add_argument("--home", type=Path, default=None, help="reuse this database folder")
    p_search.add_argument(
        "--text",
        choices=["realistic", "zipf"],
        default="realistic",
        help="real sentences recombined, MiniLM vectors; or Zipf word salad, hashing vectors",
    )
    p_search.add_argument("--ef-search-min", type=int, default=SearchParams().ef_search_min)
    p_search.add_argument("--max-term-share", type=float, default=SearchParams().max_term_share)
    p_recall = sub.add_parser("recall")
    p_recall.add_argument("--queries", type=int, default=200)
    for command in (p_ingest, p_search, p_recall):
        command.add_argument(
            "--embedder", choices=("onnx", "torch"), default="onnx", help="MiniLM on which runtime"
        )
    p_recall.add_argument("--home", type=Path, default=None, help="reuse this database folder")
    args = parser.parse_args()
    {"ingest": ingest, "search": search, "recall": recall}[args.what](args)


if __name__ == "__main__":
    main()
