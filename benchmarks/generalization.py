"""Retrieval settings across every dev set at once (issue 16), picked by the worst case.

    .venv/bin/python benchmarks/generalization.py [--home DIR] [--data DIR] [--clone DIR]
                                                 [--cache FILE] [--no-changes] [--rerank]

Dev data only (``shared/data`` beside the checkout), the default embedder (ONNX MiniLM int8).
Each set is indexed into a scratch tenant through ``Indexer``, once per vector setting (one vector
per report, the default, or every chunk). Each query is searched once by ``Searcher.search`` while
the rows it fuses are recorded; every fusion setting is then applied to those rows in Python
(``fusion.py`` is pure): what a search with that setting returns (checked: re-fusing with the
default reproduces every live ranking).

- SeaMonkey duplicates (``evals/duplicates.py``): MRR@5, R@5, also on long reports (the query's
  or target's body > 128 tokens).
- Runbooks (answerable questions of ``questions-dev.jsonl``): MRR@5 of the first right page by
  plain search and by ``ask``'s ranking (title bonus; the 0.95 target is on it), R@5.
- Changes (``refine/evaluation.py``): refine's Hit@5 and MRR@10 on the hf-datasets issues of 2023,
  ``changes_step`` re-run on each setting's hits. Labels use no vectors or search: unaffected.
- Ingestion reports/s per vector setting (``benchmarks/retrieval.py ingest``'s method), and with
  ``--rerank`` a logistic-regression re-ranker over the duplicates' top 30, leave-one-query-out.

``--home`` keeps the embedded Postgres there (default: a temporary folder); ``--cache FILE``
keeps the measurements (pickle): a second run with it only re-fuses and prints, in seconds.
About 9 minutes on a busy 2-core machine (load 3-4), two thirds of it the changes replay.
"""

from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.onnx_minilm import MODEL_DIR, TOKENIZER_FILE, OnnxMiniLM
from resolveflow.adapters.git import GitRepository
from resolveflow.ask import answering as ask_module
from resolveflow.ask.evaluation import read_questions
from resolveflow.ask.store import answers as answers_store
from resolveflow.bootstrap.app import migrate
from resolveflow.evals.duplicates import query_and_target, read_pairs
from resolveflow.refine import evaluation as changes_eval
from resolveflow.refine.changes import (
    SIMILAR_DEPTH,
    ChangesDeps,
    RepositoryHistory,
    changes_step,
    task_from_hit,
)
from resolveflow.refine.domain.document import RefineDocument, Ticket, TicketSource
from resolveflow.retrieval import search as search_module
from resolveflow.retrieval.chunking import MAX_CHUNKS, chunk_document, normalize_text
from resolveflow.retrieval.fusion import FusionParams, fuse, group_by_document
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import read_corpus, read_docs_dir
from resolveflow.store.database import Database
from resolveflow.store.documents import Candidate
from resolveflow.store.embedded import embedded_database_url

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SOURCE = "eval"
LONG_TOKENS = 128
# Dev targets: duplicates, runbook answers (on ask's ranking), change localization.
TARGETS = {"sm_mrr5": 0.72, "sm_r5": 0.89, "rb_mrr5": 0.95, "ch_hit5": 0.78, "ch_mrr10": 0.56}
REPORT_SETTINGS: dict[str, tuple[str, float, float]] = {
    "weighted 0.9/0.1": ("weighted", 0.9, 0.1),
    "weighted 0.8/0.2": ("weighted", 0.8, 0.2),  # the default before this comparison
    "weighted 0.7/0.3": ("weighted", 0.7, 0.3),
    "weighted 0.6/0.4": ("weighted", 0.6, 0.4),
    "RRF 1:1": ("rrf", 1.0, 1.0),
    "RRF 3:1": ("rrf", 3.0, 1.0),
}
DOC_SETTINGS = {"0.3/0.7": (0.3, 0.7), "0.2/0.8": (0.2, 0.8), "0.5/0.5": (0.5, 0.5)}
VECTOR_SETTINGS = {"1 vector/report": 1, "every chunk": MAX_CHUNKS}
Rows = list[Candidate]  # candidate rows of hybrid_candidates, as search.py fuses them
_IN_USE = FusionParams()
DEFAULT = (  # the product's defaults, as the rows above name them
    "1 vector/report",
    f"weighted {_IN_USE.vector_weight:g}/{_IN_USE.lexical_weight:g}",
    f"{_IN_USE.document_vector_weight:g}/{_IN_USE.document_lexical_weight:g}",
)


def params_for(report: str, doc: str) -> FusionParams:
    method, vw, lw = REPORT_SETTINGS[report]
    return FusionParams(method, vw, lw, 60, *DOC_SETTINGS[doc])  # type: ignore[arg-type]  # str


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
    """Settings best first by their margins taken smallest first (leximin): the worst margin
    decides, the second worst breaks its ties, and so on."""
    return sorted(rows, key=lambda key: [-round(m, 9) for m in rows[key]])


# --- the candidates a search fuses, captured once ---------------------------------------------


class Capture:
    """The rows each ``Searcher.search`` hands to ``group_by_document`` (after its exclusion)."""

    def __init__(self) -> None:
        self.rows: Rows = []

    @contextmanager
    def active(self) -> Iterator[Capture]:
        def recording(rows: Sequence[Candidate]) -> Any:
            self.rows = list(rows)
            return group_by_document(rows)

        # search.py calls the name it imported: swapping it there sees every search's rows.
        setattr(search_module, "group_by_document", recording)  # noqa: B010
        try:
            yield self
        finally:
            setattr(search_module, "group_by_document", group_by_document)  # noqa: B010

    def search(self, searcher: Searcher, tenant: Any, text: str, k: int, **kw: Any) -> Rows:
        """Search, check that re-fusing the captured rows gives the live ranking, return them."""
        live = [h.external_id for h in searcher.search(tenant, text, k=k, **kw)]
        if ids(refuse(self.rows, SearchParams().fusion, k)) != live:
            raise SystemExit(f"{text[:60]!r}: re-fusing the captured rows differs from search")
        return self.rows


def refuse(rows: Rows, params: FusionParams, k: int) -> list[Any]:
    """The top ``k`` documents (fusion candidates) a search with ``params`` returns."""
    return fuse(group_by_document(rows), params)[:k]


def ids(docs: Sequence[Any]) -> list[str]:
    return [d.best.external_id for d in docs]


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


# --- measuring ----------------------------------------------------------------------------------


def as_of_search(capture: Capture, searcher: Searcher, tenant: Any, doc: Any, k: int) -> Rows:
    """A report as the evaluations search it: title and body, as of its creation, not itself."""
    text, exclude = f"{doc.title}\n\n{doc.body}", (SOURCE, doc.external_id)
    return capture.search(searcher, tenant, text, k, as_of=doc.created_at, exclude=exclude)


def measure_duplicates(db: Database, embedder: OnnxMiniLM, data: Path, vpr: int) -> list[Query]:
    documents = {d.external_id: d for d in read_corpus(data / "seamonkey/corpus.jsonl", SOURCE)}
    pairs = read_pairs(data / "seamonkey" / "duplicates.tsv")
    placed = [query_and_target(documents[a], documents[b]) for a, b in pairs]
    capture, queries = Capture(), []
    with scratch_tenant(db) as tenant, capture.active():
        Indexer(db, embedder, vectors_per_report=vpr).upsert(tenant, documents.values())
        searcher = Searcher(db, embedder, SearchParams())
        for query, target in (p for p in placed if p is not None):
            rows = as_of_search(capture, searcher, tenant, query, 10)
            queries.append(Query(query.external_id, {target.external_id}, rows))
            queries[-1].extra["target"] = target.external_id
    return queries


def measure_runbooks(db: Database, embedder: OnnxMiniLM, data: Path) -> list[Query]:
    """Runbooks get a vector per chunk whatever the report setting: measured once. The title
    coverage ask adds is read for every candidate, so any fusion's top ten can be re-ranked."""
    folder = data / "runbooks"
    questions = [q for q in read_questions(folder / "questions-dev.jsonl") if q.answers]
    capture, queries = Capture(), []
    with scratch_tenant(db) as tenant, capture.active():
        Indexer(db, embedder).upsert(tenant, list(read_docs_dir(folder / "corpus", "docs")))
        searcher = Searcher(db, embedder, SearchParams())
        for q in questions:
            text = q.question.strip()
            rows = capture.search(searcher, tenant, text, ask_module.DEPTH)
            with db.tenant(tenant) as conn:
                candidates = list({r.document_id for r in rows})
                cover = answers_store.title_cover(conn, tenant, text, candidates)
            queries.append(Query(q.id, set(q.answers), rows, {"cover": cover}))
    return queries


def runbook_rank(query: Query, params: FusionParams, bonus: bool) -> int | None:
    """The first right page's rank in the top 5: plain search, or ask's ranking (the top ten by
    fused score plus the title bonus, as ``ask/answering.py`` ranks them)."""
    docs, cover = refuse(query.rows, params, ask_module.DEPTH), query.extra["cover"]

    def score(d: Any) -> float:
        return float(d.fused + ask_module.TITLE_BONUS * cover.get(d.document_id, 0.0))

    ranked = sorted(docs, key=lambda d: (-score(d), str(d.document_id))) if bonus else docs
    return first_rank(ids(ranked), query.right, 5)


def measure_changes(
    db: Database, embedder: OnnxMiniLM, data: Path, clone: Path, vpr: int
) -> tuple[dict[str, list[int | None]], int]:
    """Refine's rank of the first right file per 2023 issue, for each report setting (document
    weights cannot matter: hf-datasets holds only issues and pull requests)."""
    folder = data / "hf-datasets"
    links = changes_eval.read_fix_links(folder / "fix_links.tsv")
    history = RepositoryHistory.read("corpus", GitRepository(clone))
    documents = [d for f in ("issues", "pulls") for d in read_corpus(folder / f"{f}.jsonl", SOURCE)]
    since = datetime(2023, 1, 1, tzinfo=UTC)
    queries, _ = changes_eval._queries(documents, links, history, since)
    capture = Capture()
    ranks: dict[str, list[int | None]] = {name: [] for name in REPORT_SETTINGS}
    with scratch_tenant(db) as tenant, capture.active():
        Indexer(db, embedder, vectors_per_report=vpr).upsert(tenant, documents)
        searcher = Searcher(db, embedder, SearchParams())
        deps = ChangesDeps(db, tenant, {"corpus": history}, changes_eval.SCOPE, excerpts=False)
        for doc, gold in queries:
            rows = as_of_search(capture, searcher, tenant, doc, SIMILAR_DEPTH)
            ticket = Ticket(
                source=TicketSource.TEXT,
                title=doc.title,
                body=doc.body,
                created_at=doc.created_at,
                repository="corpus",
            )
            for name in REPORT_SETTINGS:
                fused = refuse(rows, params_for(name, DEFAULT[2]), SIMILAR_DEPTH)
                hits = [search_module._hit(d.best, d, embedder.space) for d in fused]
                related = RefineDocument(ticket=ticket, related=[task_from_hit(h) for h in hits])
                suggested = [f.path for f in changes_step(related, deps).suggested_files]
                ranks[name].append(changes_eval._rank(suggested, gold))
    return ranks, len(queries)


def ingest_rates(
    db: Database, embedder: OnnxMiniLM, data: Path, repeats: int
) -> dict[str, list[float]]:
    """``benchmarks/retrieval.py ingest``'s method: the first 600 hf-datasets issues through the
    one upsert path, wall time; the settings alternate so the machine's load hits both."""
    reports = list(read_corpus(data / "hf-datasets" / "issues.jsonl", "bench"))[:600]
    rates: dict[str, list[float]] = {name: [] for name in VECTOR_SETTINGS}
    for _ in range(repeats):
        for name, vpr in VECTOR_SETTINGS.items():
            with scratch_tenant(db) as tenant:
                started = time.perf_counter()
                stats = Indexer(db, embedder, vectors_per_report=vpr).upsert(tenant, reports)
                rates[name].append(stats.documents / (time.perf_counter() - started))
    return rates


def chunk_count(doc: Any) -> int:
    return len(chunk_document(normalize_text(doc.title), doc.body))


def long_reports(corpus: dict[str, Any], queries: list[Query]) -> set[str]:
    """Queries whose report or target has a body over 128 tokens (MiniLM's tokenizer)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(MODEL_DIR / TOKENIZER_FILE))
    tokenizer.no_truncation()

    def tokens(doc_id: str) -> int:
        return len(tokenizer.encode(corpus[doc_id].body or "", add_special_tokens=False).ids)

    return {q.id for q in queries if max(tokens(q.id), tokens(q.extra["target"])) > LONG_TOKENS}


@contextmanager
def timed(out: Measured, what: str) -> Iterator[None]:
    print(f"[{time.strftime('%H:%M:%S')}] {what} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    yield
    out.seconds[what] = time.perf_counter() - started


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
        out.corpus = {
            d.external_id: d for d in read_corpus(data / "seamonkey/corpus.jsonl", SOURCE)
        }
        out.long_queries = long_reports(out.corpus, out.duplicates[DEFAULT[0]])
        out.multi_chunk_reports = sum(1 for d in out.corpus.values() if chunk_count(d) > 1)
        vectors = embedder.embed_documents([d.title for d in out.corpus.values()])
        out.title_vectors = dict(zip(out.corpus, vectors, strict=True))
    finally:
        db.close()
    return out


# --- the table ----------------------------------------------------------------------------------

COLUMNS = {
    "sm_mrr5": "SM MRR@5",
    "sm_r5": "SM R@5",
    "long_mrr5": "long MRR@5",
    "long_r5": "long R@5",
    "rb_plain_mrr5": "RB MRR@5 search",
    "rb_mrr5": "RB MRR@5 ask",
    "rb_r5": "RB R@5",
    "ch_hit5": "CH Hit@5",
    "ch_mrr10": "CH MRR@10",
}


def duplicate_ranks(queries: list[Query], params: FusionParams) -> list[int | None]:
    return [first_rank(ids(refuse(q.rows, params, 10)), q.right, 10) for q in queries]


def figures(m: Measured, vec: str, report: str, doc: str) -> dict[str, float]:
    params, dup = params_for(report, doc), m.duplicates[vec]
    ranks = duplicate_ranks(dup, params)
    long = [r for q, r in zip(dup, ranks, strict=True) if q.id in m.long_queries]
    plain = [runbook_rank(q, params, bonus=False) for q in m.runbooks]
    asked = [runbook_rank(q, params, bonus=True) for q in m.runbooks]
    out = {"sm_mrr5": mrr_at(ranks, 5), "sm_r5": recall_at(ranks, 5)}
    out |= {"long_mrr5": mrr_at(long, 5), "long_r5": recall_at(long, 5)}
    out |= {"rb_plain_mrr5": mrr_at(plain, 5), "rb_mrr5": mrr_at(asked, 5)}
    out["rb_r5"] = recall_at(asked, 5)
    if vec in m.changes:
        ch = m.changes[vec][report]
        out |= {"ch_hit5": recall_at(ch, 5), "ch_mrr10": mrr_at(ch, 10)}
    return out


def table(m: Measured) -> None:
    settings = [(v, r, d) for v in VECTOR_SETTINGS for r in REPORT_SETTINGS for d in DOC_SETTINGS]
    rows = {s: figures(m, *s) for s in settings}
    margin = {s: margins(rows[s], TARGETS) for s in settings}
    order = pick_by_worst_case(margin)
    print(f"| # | vectors | reports | docs | {' | '.join(COLUMNS.values())} | worst margin |")
    print("|" + "---|" * (len(COLUMNS) + 5))
    for s in settings:
        cells = " | ".join(f"{rows[s][c]:.3f}" if c in rows[s] else "n/a" for c in COLUMNS)
        worst = min((t for t in TARGETS if t in rows[s]), key=lambda t: rows[s][t] - TARGETS[t])
        mark = " (default)" if s == DEFAULT else ""
        print(f"| {order.index(s) + 1} | {s[0]}{mark} | {s[1]} | {s[2]} | {cells} |", end="")
        print(f" {margin[s][0]:+.3f} ({worst}) |")
    print(
        f"\nqueries: SeaMonkey {len(m.duplicates[DEFAULT[0]])} (long: {len(m.long_queries)}),"
        f" runbooks {len(m.runbooks)} answerable, changes {m.changes_queries}; SeaMonkey"
        f" reports with more than one chunk: {m.multi_chunk_reports} of {len(m.corpus)}"
    )
    print("hf-datasets labels: TF-IDF only (no vectors, no search), the same for every setting")
    print("\npick by worst case (leximin over the margins to target):")
    for rank, s in enumerate(order[:5], start=1):
        print(f"  {rank}. {s}: margins {', '.join(f'{x:+.3f}' for x in margin[s])}")
    print(f"  today's default {DEFAULT} is #{order.index(DEFAULT) + 1} of {len(order)}")
    print("timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in m.seconds.items()))


def vectors_finding(m: Measured) -> None:
    """One vector per report against every chunk: on the queries whose target has more than one
    chunk (the only reports the setting changes), on hf-datasets changes, and ingestion speed."""
    targets = {q.extra["target"] for q in m.duplicates[DEFAULT[0]]}
    multi = {t for t in targets if chunk_count(m.corpus[t]) > 1}
    print("\nvectors per report (queries whose target has > 1 chunk):")
    for report in list(REPORT_SETTINGS)[:2]:
        for vec in VECTOR_SETTINGS:
            dup = m.duplicates[vec]
            ranks = duplicate_ranks(dup, params_for(report, DEFAULT[2]))
            sub = [r for q, r in zip(dup, ranks, strict=True) if q.extra["target"] in multi]
            print(f"  {vec}, {report}: n {len(sub)}, MRR@5 {mrr_at(sub, 5):.3f}", end="")
            print(f" R@5 {recall_at(sub, 5):.3f}")
    for name, rates in m.ingest.items():
        print(f"  ingest {name}: {', '.join(f'{r:.1f}' for r in rates)} reports/s (>= 100)")


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
        from rerank_duplicates import rerank  # beside this file (sys.path[0] when run)

        rerank(measured)


if __name__ == "__main__":
    main()
