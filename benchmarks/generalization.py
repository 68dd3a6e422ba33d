"""Retrieval settings across every dev set at once (issue 16), picked by the worst case.

    .venv/bin/python benchmarks/generalization.py [--home DIR] [--data DIR] [--clone DIR]
                                                 [--cache FILE] [--no-changes] [--rerank]

Dev data only (``shared/data`` beside the checkout). Each dev set is indexed into a scratch tenant
through the product's ``Indexer`` with the default embedder (ONNX MiniLM int8, 128 tokens, batch
16), once per vector setting (one vector per report, the default; every chunk embedded). Every
query is searched once through ``Searcher.search`` with the default settings while the candidate
rows it fuses are recorded; each fusion setting is then applied to the same rows in Python
(``fusion.py`` is pure), which is exactly what a search with that setting returns (checked: the
default setting must reproduce the live search's ranking for every query).

- SeaMonkey duplicates (``evals/duplicates.py`` protocol): MRR@5, R@5; also on the long-report
  subset (query's or target's body > 128 tokens).
- Runbook questions (42 answerable of ``questions-dev.jsonl``): MRR@5 and R@5 of the first right
  page, plain search and with ``ask``'s title bonus (the figure the 0.95 target is set on).
- Change localization (``evals/changes.py``): Hit@5, MRR@10 of refine's suggested files on the
  hf-datasets issues of 2023, ``changes_step`` re-run on each setting's hits.
- hf-datasets labels are TF-IDF only (no vectors, no search): independent of these settings.

Also ingestion reports/s per vector setting (``benchmarks/retrieval.py ingest``'s method: the
first 600 hf-datasets issues, wall time) and, with ``--rerank``, a learning-to-rank re-ranker over
the top 30 for duplicates, measured by leave-one-query-out (not part of the product).

``--home`` keeps the embedded Postgres there (default: a temporary folder); ``--cache FILE``
stores the measurements (pickle) and a second run with it only re-fuses and prints.
Runtime on a shared 2-core machine: about 15-20 minutes (ingesting hf-datasets twice, ~6,400
documents, is most of it); with ``--cache`` of an earlier run, seconds.
"""

from __future__ import annotations

import argparse
import math
import pickle
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.adapters.git import GitRepository
from resolveflow.domain.refine import RefineDocument, Ticket, TicketSource
from resolveflow.evals import changes as changes_eval
from resolveflow.evals.answers import read_questions
from resolveflow.evals.duplicates import query_and_target, read_pairs
from resolveflow.evals.scratch import scratch_tenant
from resolveflow.retrieval import search as search_module
from resolveflow.retrieval.chunking import MAX_CHUNKS
from resolveflow.retrieval.fusion import FusionParams, fuse, group_by_document
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import read_corpus, read_docs_dir
from resolveflow.service import ask as ask_module
from resolveflow.service.refine_changes import (
    SIMILAR_DEPTH,
    ChangesDeps,
    RepositoryHistory,
    changes_step,
    task_from_hit,
)
from resolveflow.store import answers as answers_store
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url
from resolveflow.wiring import migrate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SOURCE = "eval"
LONG_TOKENS = 128

# Dev targets: duplicates (issue 5), runbook answers (issue 13, on ask's ranking), changes (14).
TARGETS = {"sm_mrr5": 0.72, "sm_r5": 0.89, "rb_mrr5": 0.95, "ch_hit5": 0.78, "ch_mrr10": 0.56}
REPORT_SETTINGS: dict[str, tuple[str, float, float]] = {
    "weighted 0.9/0.1": ("weighted", 0.9, 0.1),
    "weighted 0.8/0.2": ("weighted", 0.8, 0.2),  # today's default
    "weighted 0.7/0.3": ("weighted", 0.7, 0.3),
    "weighted 0.6/0.4": ("weighted", 0.6, 0.4),
    "RRF 1:1": ("rrf", 1.0, 1.0),
    "RRF 3:1": ("rrf", 3.0, 1.0),
}
DOC_SETTINGS: dict[str, tuple[float, float]] = {
    "0.3/0.7": (0.3, 0.7),  # today's default
    "0.2/0.8": (0.2, 0.8),
    "0.5/0.5": (0.5, 0.5),
}
VECTOR_SETTINGS = {"1 vector/report": 1, "every chunk": MAX_CHUNKS}
DEFAULT = ("1 vector/report", "weighted 0.8/0.2", "0.3/0.7")


def params_for(report: str, doc: str) -> FusionParams:
    method, vw, lw = REPORT_SETTINGS[report]
    dvw, dlw = DOC_SETTINGS[doc]
    return FusionParams(method, vw, lw, 60, dvw, dlw)  # type: ignore[arg-type]


# --- pure helpers -------------------------------------------------------------------------------


def mrr_at(ranks: Sequence[int | None], cutoff: int) -> float:
    return sum(1.0 / r for r in ranks if r is not None and r <= cutoff) / max(1, len(ranks))


def recall_at(ranks: Sequence[int | None], cutoff: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= cutoff) / max(1, len(ranks))


def first_rank(ranked: Sequence[str], right: set[str], depth: int) -> int | None:
    return next((n for n, x in enumerate(ranked[:depth], start=1) if x in right), None)


def margins(figures: dict[str, float], targets: dict[str, float]) -> list[float]:
    """Each measured figure minus its target, smallest first (figures without one are skipped)."""
    return sorted(figures[name] - target for name, target in targets.items() if name in figures)


def pick_by_worst_case(rows: dict[Any, list[float]]) -> list[Any]:
    """Settings ordered best first by their margins compared smallest first (leximin): the worst
    margin decides, the second worst breaks its ties, and so on."""
    return sorted(rows, key=lambda key: [-round(m, 9) for m in rows[key]])


# --- capturing the candidates a search fuses --------------------------------------------------


class Capture:
    """Records the rows each ``Searcher.search`` hands to ``group_by_document`` (after its own
    exclusion), so every fusion setting can be applied later to exactly those candidates."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    @contextmanager
    def active(self):  # type: ignore[no-untyped-def]
        def recording(rows: Sequence[dict[str, Any]]) -> Any:
            self.rows = [dict(r) for r in rows]
            return group_by_document(rows)

        search_module.group_by_document = recording  # type: ignore[assignment]
        try:
            yield self
        finally:
            search_module.group_by_document = group_by_document


def refuse(rows: list[dict[str, Any]], params: FusionParams, k: int) -> list[Any]:
    """The top ``k`` documents (fusion candidates) a search with ``params`` returns."""
    return fuse(group_by_document(rows), params)[:k]


@dataclass
class Query:
    id: str
    right: set[str]
    rows: list[dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Measured:
    duplicates: dict[str, list[Query]] = field(default_factory=dict)  # vector setting -> queries
    runbooks: list[Query] = field(default_factory=list)
    changes: dict[str, dict[str, list[int | None]]] = field(default_factory=dict)  # vec -> rep
    changes_queries: int = 0
    ingest: dict[str, list[float]] = field(default_factory=dict)  # vector setting -> reports/s
    long_queries: set[str] = field(default_factory=set)
    multi_chunk_reports: int = 0
    corpus: dict[str, Any] = field(default_factory=dict)  # SeaMonkey id -> SourceDocument
    title_vectors: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def seamonkey_corpus(data: Path) -> Path:
    return data / "seamonkey" / "corpus.jsonl"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def check_same(live: list[str], rows: list[dict[str, Any]], k: int, what: str) -> None:
    again = [d.best["external_id"] for d in refuse(rows, SearchParams().fusion, k)]
    if again != live:
        raise SystemExit(f"{what}: re-fusing the captured rows does not give the live ranking")


# --- measuring ----------------------------------------------------------------------------------


def measure_duplicates(db: Database, embedder: OnnxMiniLM, data: Path, vpr: int) -> list[Query]:
    documents = {d.external_id: d for d in read_corpus(seamonkey_corpus(data), SOURCE)}
    pairs = read_pairs(data / "seamonkey" / "duplicates.tsv")
    placed = [query_and_target(documents[a], documents[b]) for a, b in pairs]
    capture, queries = Capture(), []
    with scratch_tenant(db) as tenant, capture.active():
        Indexer(db, embedder, vectors_per_report=vpr).upsert(tenant, documents.values())
        searcher = Searcher(db, embedder, SearchParams())
        for query, target in (p for p in placed if p is not None):
            rows = search_report(searcher, capture, tenant, query, 10)
            queries.append(Query(query.external_id, {target.external_id}, rows))
            queries[-1].extra["target"] = target.external_id
    return queries


def search_report(
    searcher: Searcher, capture: Capture, tenant: Any, doc: Any, k: int
) -> list[dict[str, Any]]:
    """A report searched as the evaluations do (title and body, as of its creation, itself
    excluded); the rows fused, after checking that re-fusing them gives the live ranking."""
    hits = searcher.search(
        tenant,
        f"{doc.title}\n\n{doc.body}",
        k=k,
        as_of=doc.created_at,
        exclude=(SOURCE, doc.external_id),
    )
    check_same([h.external_id for h in hits], capture.rows, k, doc.external_id)
    return capture.rows


def measure_runbooks(db: Database, embedder: OnnxMiniLM, data: Path) -> list[Query]:
    """Runbooks get a vector per chunk whatever the report setting: measured once."""
    folder = data / "runbooks"
    questions = [q for q in read_questions(folder / "questions-dev.jsonl") if q.answers]
    capture, queries = Capture(), []
    with scratch_tenant(db) as tenant, capture.active():
        Indexer(db, embedder).upsert(tenant, list(read_docs_dir(folder / "corpus", "docs")))
        searcher = Searcher(db, embedder, SearchParams())
        for q in questions:
            text = q.question.strip()
            hits = searcher.search(tenant, text, k=ask_module.DEPTH)
            check_same([h.external_id for h in hits], capture.rows, ask_module.DEPTH, q.id)
            ids = list({r["document_id"] for r in capture.rows})
            with db.tenant(tenant) as conn:
                cover = answers_store.title_cover(conn, tenant, text, ids)
            queries.append(Query(q.id, set(q.answers), capture.rows, {"cover": cover}))
    return queries


def runbook_rank(query: Query, params: FusionParams, bonus: bool) -> int | None:
    """Rank of the first right page in the top 5: plain search, or ``ask``'s ranking (the fused
    score plus its title bonus, over the top ten)."""
    docs = refuse(query.rows, params, ask_module.DEPTH)
    if bonus:
        cover = query.extra["cover"]
        docs = sorted(
            docs,
            key=lambda d: (
                -(d.fused + ask_module.TITLE_BONUS * cover.get(d.document_id, 0.0)),
                str(d.document_id),
            ),
        )
    return first_rank([d.best["external_id"] for d in docs], query.right, 5)


def measure_changes(
    db: Database, embedder: OnnxMiniLM, data: Path, clone: Path, vpr: int
) -> tuple[dict[str, list[int | None]], int]:
    """Refine's rank of the first right file per 2023 issue, for each report setting (document
    weights cannot matter: hf-datasets holds only issues and pull requests)."""
    folder = data / "hf-datasets"
    links = changes_eval.read_fix_links(folder / "fix_links.tsv")
    history = RepositoryHistory.read("corpus", GitRepository(clone))
    documents = [
        d for name in ("issues.jsonl", "pulls.jsonl") for d in read_corpus(folder / name, SOURCE)
    ]
    since = datetime(2023, 1, 1, tzinfo=UTC)
    queries, _ = changes_eval._queries(documents, links, history, since)
    capture = Capture()
    ranks: dict[str, list[int | None]] = {name: [] for name in REPORT_SETTINGS}
    with scratch_tenant(db) as tenant, capture.active():
        Indexer(db, embedder, vectors_per_report=vpr).upsert(tenant, documents)
        searcher = Searcher(db, embedder, SearchParams())
        deps = ChangesDeps(
            db, tenant, {"corpus": history}, include=changes_eval.SCOPE, excerpts=False
        )
        for doc, gold in queries:
            rows = search_report(searcher, capture, tenant, doc, SIMILAR_DEPTH)
            ticket = Ticket(
                source=TicketSource.TEXT,
                title=doc.title,
                body=doc.body,
                created_at=doc.created_at,
                repository="corpus",
            )
            for name in REPORT_SETTINGS:
                fused = refuse(rows, params_for(name, DEFAULT[2]), SIMILAR_DEPTH)
                related = [
                    task_from_hit(search_module._hit(d.best, d, embedder.space)) for d in fused
                ]
                refined = changes_step(RefineDocument(ticket=ticket, related=related), deps)
                ranked = [f.path for f in refined.suggested_files]
                ranks[name].append(changes_eval._rank(ranked, gold))
    return ranks, len(queries)


def ingest_rates(db: Database, embedder: OnnxMiniLM, data: Path, repeats: int) -> dict:
    """``benchmarks/retrieval.py ingest``'s method: the first 600 hf-datasets issues through the
    one upsert path, wall time; the settings alternate so load on the machine hits both."""
    reports = list(read_corpus(data / "hf-datasets" / "issues.jsonl", "bench"))[:600]
    rates: dict[str, list[float]] = {name: [] for name in VECTOR_SETTINGS}
    for _ in range(repeats):
        for name, vpr in VECTOR_SETTINGS.items():
            with scratch_tenant(db) as tenant:
                started = time.perf_counter()
                stats = Indexer(db, embedder, vectors_per_report=vpr).upsert(tenant, reports)
                rates[name].append(stats.documents / (time.perf_counter() - started))
    return rates


def long_reports(data: Path, queries: list[Query]) -> tuple[set[str], int]:
    """Queries whose report or target has a body over 128 tokens, and the number of SeaMonkey
    reports with more than one chunk (the only ones the vector setting changes)."""
    from tokenizers import Tokenizer

    from resolveflow.adapters.embedder.onnx_minilm import MODEL_DIR, TOKENIZER_FILE
    from resolveflow.retrieval.chunking import chunk_document, normalize_text

    tokenizer = Tokenizer.from_file(str(MODEL_DIR / TOKENIZER_FILE))
    tokenizer.no_truncation()
    docs = {d.external_id: d for d in read_corpus(seamonkey_corpus(data), SOURCE)}

    def tokens(doc_id: str) -> int:
        return len(tokenizer.encode(docs[doc_id].body or "", add_special_tokens=False).ids)

    long = {q.id for q in queries if max(tokens(q.id), tokens(q.extra["target"])) > LONG_TOKENS}
    multi = sum(
        1 for d in docs.values() if len(chunk_document(normalize_text(d.title), d.body)) > 1
    )
    return long, multi


def measure(args: argparse.Namespace) -> Measured:
    url = embedded_database_url(args.home or Path(tempfile.mkdtemp(prefix="rf-bench-general-")))
    migrate(url)
    db = Database(url, max_size=4, statement_timeout_ms=600_000).open()
    embedder = OnnxMiniLM()
    embedder.embed_documents(["load the model before timing"])
    out, data = Measured(), args.data
    try:
        with timed(out, "runbooks"):
            out.runbooks = measure_runbooks(db, embedder, data)
        for name, vpr in VECTOR_SETTINGS.items():
            with timed(out, f"seamonkey {name}"):
                out.duplicates[name] = measure_duplicates(db, embedder, data, vpr)
        with timed(out, "ingest"):
            out.ingest = ingest_rates(db, embedder, data, repeats=2)
        if not args.no_changes:
            clone = args.clone or Path(tempfile.mkdtemp(prefix="rf-hf-")) / "datasets"
            if not clone.exists():
                bundle = data / "hf-datasets" / "datasets-2023.bundle"
                subprocess.run(["git", "clone", "--quiet", str(bundle), str(clone)], check=True)
            for name, vpr in VECTOR_SETTINGS.items():
                with timed(out, f"changes {name}"):
                    out.changes[name], out.changes_queries = measure_changes(
                        db, embedder, data, clone, vpr
                    )
        out.long_queries, out.multi_chunk_reports = long_reports(data, out.duplicates[DEFAULT[0]])
        out.corpus = {d.external_id: d for d in read_corpus(seamonkey_corpus(data), SOURCE)}
        vectors = embedder.embed_documents([d.title for d in out.corpus.values()])
        out.title_vectors = dict(zip(out.corpus, vectors, strict=True))
    finally:
        db.close()
    return out


@contextmanager
def timed(out: Measured, what: str):  # type: ignore[no-untyped-def]
    log(f"{what} ...")
    started = time.perf_counter()
    yield
    out.seconds[what] = time.perf_counter() - started
    log(f"{what}: {out.seconds[what]:.0f} s")


# --- the table ----------------------------------------------------------------------------------


def figures(m: Measured, vec: str, report: str, doc: str) -> dict[str, float]:
    params = params_for(report, doc)
    dup = m.duplicates[vec]
    ranks = [
        first_rank([d.best["external_id"] for d in refuse(q.rows, params, 10)], q.right, 10)
        for q in dup
    ]
    long = [r for q, r in zip(dup, ranks, strict=True) if q.id in m.long_queries]
    plain = [runbook_rank(q, params, bonus=False) for q in m.runbooks]
    asked = [runbook_rank(q, params, bonus=True) for q in m.runbooks]
    out = {
        "sm_mrr5": mrr_at(ranks, 5),
        "sm_r5": recall_at(ranks, 5),
        "long_mrr5": mrr_at(long, 5),
        "long_r5": recall_at(long, 5),
        "rb_plain_mrr5": mrr_at(plain, 5),
        "rb_mrr5": mrr_at(asked, 5),
        "rb_r5": recall_at(asked, 5),
    }
    if vec in m.changes:
        ch = m.changes[vec][report]
        out["ch_hit5"], out["ch_mrr10"] = recall_at(ch, 5), mrr_at(ch, 10)
    return out


COLUMNS = [
    ("sm_mrr5", "SM MRR@5"),
    ("sm_r5", "SM R@5"),
    ("long_mrr5", "long MRR@5"),
    ("long_r5", "long R@5"),
    ("rb_plain_mrr5", "RB MRR@5 search"),
    ("rb_mrr5", "RB MRR@5 ask"),
    ("rb_r5", "RB R@5"),
    ("ch_hit5", "CH Hit@5"),
    ("ch_mrr10", "CH MRR@10"),
]


def table(m: Measured) -> list[tuple[str, str, str]]:
    settings = [(v, r, d) for v in VECTOR_SETTINGS for r in REPORT_SETTINGS for d in DOC_SETTINGS]
    rows = {s: figures(m, *s) for s in settings}
    margin = {s: margins(rows[s], TARGETS) for s in settings}
    order = pick_by_worst_case(margin)
    print(
        "| # | vectors | reports | docs | "
        + " | ".join(t for _, t in COLUMNS)
        + " | worst margin |"
    )
    print("|" + "---|" * (len(COLUMNS) + 5))
    for s in settings:
        cells = [f"{rows[s][c]:.3f}" if c in rows[s] else "n/a" for c, _ in COLUMNS]
        worst = min(TARGETS, key=lambda t: rows[s].get(t, 9) - TARGETS[t])
        mark = " (default)" if s == DEFAULT else ""
        print(
            f"| {order.index(s) + 1} | {s[0]}{mark} | {s[1]} | {s[2]} | "
            + " | ".join(cells)
            + f" | {margin[s][0]:+.3f} ({worst}) |"
        )
    print(
        f"\nqueries: SeaMonkey {len(m.duplicates[DEFAULT[0]])} (long: {len(m.long_queries)}),"
        f" runbooks {len(m.runbooks)} answerable, changes {m.changes_queries};"
        f" SeaMonkey reports with more than one chunk: {m.multi_chunk_reports}"
    )
    print(
        "hf-datasets labels: TF-IDF only (no vectors, no search), independent of every setting"
        " here: P 0.861 / R 0.811 / F1 0.835 (targets P >= 0.80, F1 >= 0.75)"
    )
    print("\npick by worst case (leximin over the margins to target):")
    for rank, s in enumerate(order[:5], start=1):
        print(f"  {rank}. {s}: margins {', '.join(f'{x:+.3f}' for x in margin[s])}")
    print(f"  today's default {DEFAULT} is #{order.index(DEFAULT) + 1} of {len(order)}")
    print("timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in m.seconds.items()))
    return order


def vectors_finding(m: Measured) -> None:
    """One vector per report against every chunk embedded: all SeaMonkey queries, the long ones,
    those whose target has more than one chunk (the only reports the setting changes), hf-datasets
    changes, and ingestion speed."""
    from resolveflow.retrieval.chunking import chunk_document, normalize_text

    def chunks(doc_id: str) -> int:
        doc = m.corpus[doc_id]
        return len(chunk_document(normalize_text(doc.title), doc.body))

    multi = [q.extra["target"] for q in m.duplicates[DEFAULT[0]] if chunks(q.extra["target"]) > 1]
    print(f"\nvectors per report; queries whose target has > 1 chunk: {len(multi)}")
    for vec, report in [(v, r) for r in list(REPORT_SETTINGS)[:2] for v in VECTOR_SETTINGS]:
        params = params_for(report, DEFAULT[2])
        ranks = {
            (q.id, q.extra["target"]): first_rank(
                [d.best["external_id"] for d in refuse(q.rows, params, 10)], q.right, 10
            )
            for q in m.duplicates[vec]
        }
        sub = [r for (_, target), r in ranks.items() if target in multi]
        ch = m.changes.get(vec, {}).get(report)
        changes = f"changes {recall_at(ch, 5):.3f} / {mrr_at(ch, 10):.3f}" if ch else ""
        print(
            f"  {vec}, {report}: multi-chunk target MRR@5 {mrr_at(sub, 5):.3f}"
            f" R@5 {recall_at(sub, 5):.3f} {changes}"
        )
    for name, rates in m.ingest.items():
        print(f"  ingest {name}: {', '.join(f'{r:.1f}' for r in rates)} reports/s (>= 100)")


# --- a learning-to-rank re-ranker over the top 30 (duplicates; not part of the product) --------

IDENTIFIER = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # dotted: prefs, hosts, file.js, nsIFoo.bar
    r"|[a-z]+[A-Z]\w*|[A-Z]+[a-z0-9]+[A-Z]\w*"  # camelCase, CamelCase, LSOpenURLs
    r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+"  # NS_ERROR_FAILURE
    r"|\w*(?:Error|Exception)\b"
    r"|0x[0-9a-fA-F]{4,}"
    r"|(?:/[\w.-]+){2,}"  # paths
)
WORD = re.compile(r"[a-z0-9]{3,}")


def identifiers(text: str) -> set[str]:
    return {match.lower() for match in IDENTIFIER.findall(text)}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def rerank(m: Measured, depth: int = 30) -> None:
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    corpus = m.corpus
    idents = {i: identifiers(f"{d.title}\n{d.body}") for i, d in corpus.items()}
    df: dict[str, int] = {}
    for found in idents.values():
        for x in found:
            df[x] = df.get(x, 0) + 1
    idf = {x: math.log(len(corpus) / n) for x, n in df.items()}
    words = {i: set(WORD.findall(d.title.lower())) for i, d in corpus.items()}
    queries = m.duplicates[DEFAULT[0]]
    positives: dict[str, set[str]] = {}
    for q in queries:
        positives.setdefault(q.id, set()).update(q.right)
    default = SearchParams().fusion
    features, labels, ids = [], [], []
    for q in queries:
        docs = refuse(q.rows, default, depth)
        top_lexical = max((d.lexical for d in docs), default=0.0) or 1.0
        qdoc = corpus[q.id]
        rows = []
        for n, d in enumerate(docs, start=1):
            cid = d.best["external_id"]
            shared = idents[q.id] & idents[cid]
            gap = abs((qdoc.created_at - corpus[cid].created_at).total_seconds()) / 86_400
            rows.append([
                d.fused, d.cosine, d.lexical / top_lexical, 1.0 / n,
                float(np.dot(m.title_vectors[q.id], m.title_vectors[cid])),
                jaccard(words[q.id], words[cid]),
                math.log1p(sum(idf[x] for x in shared)),
                math.log1p(gap),
            ])  # fmt: skip
        features.append(np.array(rows))
        labels.append(np.array([d.best["external_id"] in positives[q.id] for d in docs]))
        ids.append([d.best["external_id"] for d in docs])
    before, after = [], []
    for held, q in enumerate(queries):
        train = [i for i, other in enumerate(queries) if other.id != q.id]
        x = np.vstack([features[i] for i in train])
        y = np.concatenate([labels[i] for i in train])
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
        model.fit(scaler.transform(x), y)
        scores = model.decision_function(scaler.transform(features[held]))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))  # ties: fused order
        before.append(first_rank(ids[held], q.right, depth))
        after.append(first_rank([ids[held][i] for i in order], q.right, depth))
    moved = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    print(f"\nre-ranker (logistic regression, C=1, leave-one-query-out, {len(queries)} queries):")
    print(f"  in the top {depth} at all: {recall_at(before, depth):.3f}")
    print(
        f"  without: MRR@5 {mrr_at(before, 5):.3f}  R@1 {recall_at(before, 1):.3f}"
        f"  R@5 {recall_at(before, 5):.3f}  R@10 {recall_at(before, 10):.3f}"
    )
    print(
        f"  with:    MRR@5 {mrr_at(after, 5):.3f}  R@1 {recall_at(after, 1):.3f}"
        f"  R@5 {recall_at(after, 5):.3f}  R@10 {recall_at(after, 10):.3f}"
    )
    print(f"  queries whose rank moved (before -> after): {moved}")
    scaler = StandardScaler().fit(np.vstack(features))
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
    model.fit(scaler.transform(np.vstack(features)), np.concatenate(labels))
    names = ["fused", "cosine", "bm25", "1/rank", "title cos", "title jaccard", "idents", "gap"]
    print(
        "  coefficients (all queries, standardised): "
        + ", ".join(f"{n} {c:+.2f}" for n, c in zip(names, model.coef_[0], strict=True))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None, help="embedded Postgres folder")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--clone", type=Path, default=None, help="a clone of the 2023 bundle")
    parser.add_argument("--cache", type=Path, default=None, help="measurements (pickle)")
    parser.add_argument("--no-changes", action="store_true", help="skip change localization")
    parser.add_argument("--rerank", action="store_true", help="also the duplicate re-ranker")
    args = parser.parse_args()
    if args.cache and args.cache.exists():
        measured = pickle.loads(args.cache.read_bytes())
    else:
        if not (args.data / "seamonkey").exists():
            raise SystemExit(f"needs {args.data} (shared/data beside the checkout)")
        measured = measure(args)
        if args.cache:
            args.cache.write_bytes(pickle.dumps(measured))
    table(measured)
    vectors_finding(measured)
    if args.rerank:
        rerank(measured)


if __name__ == "__main__":
    main()
