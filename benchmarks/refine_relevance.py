"""Calibrating refine's relevance thresholds (refine/domain/rules.py) on dev data only, through
the product's own index and search (opt-in; not part of the test suite).

Each dev set is indexed into a scratch tenant; each query is searched as the related step does
(``Searcher.search`` 50 deep, as of the query's creation, itself excluded) and its top 10 become
related tasks (``task_from_hit``: ``score`` = the fused score, ``cosine`` = the best chunk's).

- **seamonkey**: the duplicate pairs; the later report is the query, its duplicate is relevant
  and every other candidate is not (near-duplicates count against precision: a lower bound).
- **hf-datasets**: the issues created in 2023 whose merged fixing pull request (``fix_links.tsv``,
  squash commits ``(#PR)`` in the clone) changed a file under ``src/`` that the fix of an earlier
  issue also changed. A candidate is relevant when its own fix (its fix links' or "fixes #N"
  commits; a pull request's squash commit) changed one of the query's fixed ``src/`` files; a
  candidate whose fix is not in the clone or changed nothing under ``src/`` (a pin in setup.py, a
  fix in the removed ``datasets/`` folder) is unknown: left out of precision (``--unknown-low``
  counts it as not relevant instead). Paths are compared exactly (a renamed file does not match).

Printed per set: for a grid of thresholds on cosine and on the fused score, the candidates at or
above, the precision (relevant share) and the reach (share of the relevant top-10 candidates at
or above); the combined rules (either, both) that keep precision >= 0.6 on both sets; and the
levels of the kept rule (``_level``) and of ``judge`` (with its step-up on shared files), with
per-split figures (random halves of the queries).

    git clone ../shared/data/hf-datasets/datasets-2023.bundle /tmp/hf
    .venv/bin/python benchmarks/refine_relevance.py --data ../shared/data --clone /tmp/hf \
        [--cache /tmp/relevance.json]    # reuse the searched candidates on a second run

About 2-3 minutes on a 2-core machine (MiniLM int8; ingesting ~6,400 hf documents is most of it).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.git import GitRepository
from resolveflow.bootstrap.app import migrate, search_params
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.config import Settings
from resolveflow.evals.duplicates import query_and_target, read_pairs
from resolveflow.refine.changes import RepositoryHistory, task_from_hit
from resolveflow.refine.domain import rules
from resolveflow.refine.domain.document import RelatedTask, Relevance, Ticket, TicketSource
from resolveflow.refine.evaluation import read_fix_links
from resolveflow.refine.steps import JUDGED, RELATED_K
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import read_corpus
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url

SOURCE = "bench"
SINCE = datetime(2023, 1, 1, tzinfo=UTC)
GRID = [round(0.50 + 0.05 * i, 2) for i in range(9)]  # 0.50 .. 0.90
MIN_PRECISION = 0.6

Row = dict[str, Any]  # one top-10 candidate: set, query, rank, task, relevant (bool | None)
Query = tuple[SourceDocument, Callable[[SourceDocument], bool | None]]


# --- collecting the candidates through the product's search ----------------------------------


def _ticket(doc: SourceDocument) -> Ticket:
    return Ticket(source=TicketSource.TEXT, title=doc.title, body=doc.body,
                  created_at=doc.created_at)  # fmt: skip


def _search(
    db: Database, settings: Settings, name: str, docs: list[SourceDocument], queries: list[Query]
) -> list[Row]:
    embedder = build_embedder(settings)
    by_id = {d.external_id: d for d in docs}
    rows: list[Row] = []
    with scratch_tenant(db) as tenant_id:
        start = time.perf_counter()
        Indexer(db, embedder).upsert(tenant_id, docs)
        print(f"{name}: indexed {len(docs)} documents in {time.perf_counter() - start:.0f} s")
        searcher = Searcher(db, embedder, search_params(settings))
        for doc, relevant in queries:
            hits = searcher.search(tenant_id, f"{doc.title}\n\n{doc.body}", k=RELATED_K,
                                   as_of=doc.created_at, exclude=(SOURCE, doc.external_id))  # fmt: skip
            for rank, hit in enumerate(hits[:JUDGED], start=1):
                rows.append({"set": name, "query": doc.external_id, "rank": rank,
                             "ticket": _ticket(doc).model_dump(mode="json"),
                             "task": task_from_hit(hit).model_dump(mode="json"),
                             "relevant": relevant(by_id[hit.external_id])})  # fmt: skip
    return rows


def seamonkey(folder: Path) -> tuple[list[SourceDocument], list[Query]]:
    docs = {d.external_id: d for d in read_corpus(folder / "corpus.jsonl", SOURCE)}
    queries: list[Query] = []
    for a, b in read_pairs(folder / "duplicates.tsv"):
        placed = query_and_target(docs[a], docs[b])
        if placed is not None:
            queries.append((placed[0], _is(placed[1].external_id)))
    return list(docs.values()), queries


def _is(target: str) -> Callable[[SourceDocument], bool | None]:
    return lambda d: d.external_id == target


def _shares(fixed: dict[str, set[str]], gold: set[str]) -> Callable[[SourceDocument], bool | None]:
    return lambda d: bool(fixed[d.external_id] & gold) if d.external_id in fixed else None


def _fixed_src_files(
    docs: Sequence[SourceDocument], links: dict[str, list[str]], history: RepositoryHistory
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per document whose fix in the clone changed files under src/, those files: (every fix: fix
    links and "fixes #N" commits, a pull request's squash; the fix links only, as the query's own
    fix, like ``eval changes``)."""
    linked: dict[str, list[str]] = {}
    every: dict[str, list[str]] = {}
    for doc in docs:
        number = int(doc.external_id)
        if doc.kind == "pull":
            shas = [history.by_pull[number].sha] if number in history.by_pull else []
            every[doc.external_id] = shas
            continue
        pulls = [int(p) for p in links.get(doc.external_id, []) if p.isdigit()]
        linked[doc.external_id] = [history.by_pull[p].sha for p in pulls if p in history.by_pull]
        messages = [c.sha for c in history.by_issue.get(number, [])]
        every[doc.external_id] = linked[doc.external_id] + messages
    stats = history.stats([sha for shas in every.values() for sha in shas])

    def files(by_doc: dict[str, list[str]]) -> dict[str, set[str]]:
        found = {
            key: {f.path for sha in shas for f in stats.get(sha, []) if f.path.startswith("src/")}
            for key, shas in by_doc.items()
        }
        return {key: paths for key, paths in found.items() if paths}

    return files(every), files(linked)


def hf_datasets(folder: Path, clone: Path) -> tuple[list[SourceDocument], list[Query]]:
    names = ("issues.jsonl", "pulls.jsonl")
    docs = [d for name in names for d in read_corpus(folder / name, SOURCE)]
    history = RepositoryHistory.read("corpus", GitRepository(clone))
    fixed, own = _fixed_src_files(docs, read_fix_links(folder / "fix_links.tsv"), history)
    issues = sorted(
        ((d.created_at, d) for d in docs if d.kind == "issue" and d.created_at is not None),
        key=lambda pair: (pair[0], pair[1].external_id),
    )
    queries: list[Query] = []
    for created, doc in issues:
        gold = own.get(doc.external_id, set())
        if created < SINCE or not gold:
            continue
        earlier = (fixed.get(d.external_id, set()) for c, d in issues if c < created)
        if any(gold & files for files in earlier):
            queries.append((doc, _shares(fixed, gold)))
    return docs, queries


def collect(data: Path, clone: Path) -> list[Row]:
    settings = Settings()
    url = embedded_database_url(Path(tempfile.mkdtemp(prefix="rf-bench-relevance-")))
    migrate(url)
    db = Database(url, max_size=4, statement_timeout_ms=600_000).open()
    try:
        rows = _search(db, settings, "seamonkey", *seamonkey(data / "seamonkey"))
        rows += _search(db, settings, "hf-datasets", *hf_datasets(data / "hf-datasets", clone))
    finally:
        db.close()
    return rows


# --- the report --------------------------------------------------------------------------------

Rule = Callable[[float, float], bool]  # (cosine, fused) -> selected


def _known(rows: Sequence[Row], unknown_low: bool) -> list[tuple[float, float, bool]]:
    return [
        (r["task"]["cosine"], r["task"]["score"], bool(r["relevant"]))
        for r in rows
        if r["relevant"] is not None or unknown_low
    ]


def measure(cands: Sequence[tuple[float, float, bool]], rule: Rule) -> tuple[int, float, float]:
    """(candidates selected, precision, reach) of a rule."""
    chosen = [rel for c, f, rel in cands if rule(c, f)]
    relevant = sum(rel for _, _, rel in cands)
    precision = sum(chosen) / len(chosen) if chosen else float("nan")
    return len(chosen), precision, sum(chosen) / relevant if relevant else float("nan")


def _rules() -> dict[str, Callable[[float, float], Rule]]:
    return {
        "cosine": lambda tc, tf: lambda c, f: c >= tc,
        "fused": lambda tc, tf: lambda c, f: f >= tf,
        "either": lambda tc, tf: lambda c, f: c >= tc or f >= tf,
        "both": lambda tc, tf: lambda c, f: c >= tc and f >= tf,
    }


def print_grids(sets: dict[str, list[tuple[float, float, bool]]]) -> None:
    for name, cands in sets.items():
        relevant = sum(rel for _, _, rel in cands)
        print(f"\n## {name}: {len(cands)} candidates, {relevant} relevant")
        print("| threshold | cosine: n | precision | reach | fused: n | precision | reach |")
        print("|---|---|---|---|---|---|---|")
        for t in GRID:
            nc, pc, rc = measure(cands, _rules()["cosine"](t, 9.0))
            nf, pf, rf = measure(cands, _rules()["fused"](9.0, t))
            print(f"| {t:.2f} | {nc} | {pc:.2f} | {rc:.2f} | {nf} | {pf:.2f} | {rf:.2f} |")


def print_rules(sets: dict[str, list[tuple[float, float, bool]]]) -> None:
    """The rules and threshold pairs with precision >= MIN_PRECISION on the most sets, then by
    the worse set's reach."""
    found = []
    for rule, make in _rules().items():
        for tc in GRID if rule != "fused" else [9.0]:
            for tf in GRID if rule != "cosine" else [9.0]:
                figures = [measure(c, make(tc, tf)) for c in sets.values()]
                met = sum(p >= MIN_PRECISION for _, p, _ in figures)
                if met:
                    found.append((met, min(r for _, _, r in figures), rule, tc, tf, figures))
    print(f"\n## rules with precision >= {MIN_PRECISION} on the most sets ({', '.join(sets)})")
    print("| rule | cosine >= | fused >= | " + " | ".join(f"{n}: n, P, reach" for n in sets) + " |")
    print("|---|---|---|" + "---|" * len(sets))
    for *_, rule, tc, tf, figures in sorted(found, key=lambda x: (-x[0], -x[1]))[:20]:
        cells = " | ".join(f"{n}, {p:.2f}, {r:.2f}" for n, p, r in figures)
        print(f"| {rule} | {tc if tc < 9 else '-'} | {tf if tf < 9 else '-'} | {cells} |")


def _levels(rows: Sequence[Row], with_judge: bool) -> list[tuple[Relevance, bool | None]]:
    out = []
    for r in rows:
        task = RelatedTask.model_validate(r["task"])
        if with_judge:
            level = rules.judge(Ticket.model_validate(r["ticket"]), task).relevance
        else:
            level = rules._level(task)  # the thresholds alone, without the step-up
        out.append((level, r["relevant"]))
    return out


def level_table(rows: Sequence[Row], with_judge: bool, unknown_low: bool) -> str:
    levels = [
        (lv, bool(rel)) for lv, rel in _levels(rows, with_judge) if rel is not None or unknown_low
    ]
    relevant = sum(rel for _, rel in levels) or 1
    cells = []
    for level in (Relevance.HIGH, Relevance.MEDIUM, Relevance.LOW):
        band = [rel for lv, rel in levels if lv is level]
        share = sum(band) / len(band) if band else float("nan")
        cells.append(f"{level.value} {len(band)} ({share:.2f}, {sum(band) / relevant:.2f})")
    return " | ".join(cells)


def print_levels(rows: Sequence[Row], unknown_low: bool) -> None:
    print(
        f"\n## levels now (HIGH cosine {rules.HIGH_COSINE} / fused {rules.HIGH_SCORE}, "
        f"MEDIUM {rules.MEDIUM_COSINE} / {rules.MEDIUM_SCORE}): n (precision, share of relevant)"
    )
    print("| set | split | by | high | medium | low |")
    print("|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == name]
        splits: list[tuple[str, list[Row]]] = [("all", mine)]
        queries = sorted(dict.fromkeys(r["query"] for r in mine))
        for seed in range(3):
            half = set(random.Random(seed).sample(queries, len(queries) // 2))
            splits.append((f"seed {seed} half 1", [r for r in mine if r["query"] in half]))
            splits.append((f"seed {seed} half 2", [r for r in mine if r["query"] not in half]))
        for split, part in splits:
            for by, judged in (("thresholds", False), ("judge", True)):
                if split != "all" and judged:
                    continue
                print(f"| {name} | {split} | {by} | {level_table(part, judged, unknown_low)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--clone", type=Path, help="a clone of hf-datasets/datasets-2023.bundle")
    parser.add_argument("--cache", type=Path, help="the searched candidates (read if present)")
    parser.add_argument("--unknown-low", action="store_true",
                        help="count hf candidates nobody fixed as not relevant")  # fmt: skip
    args = parser.parse_args()
    if args.cache and args.cache.exists():
        rows = json.loads(args.cache.read_text())
    else:
        if args.clone is None:
            parser.error("--clone is needed to collect the candidates")
        start = time.perf_counter()
        rows = collect(args.data, args.clone)
        print(f"collected in {time.perf_counter() - start:.0f} s")
        if args.cache:
            args.cache.write_text(json.dumps(rows))
    for name in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == name]
        unknown = sum(r["relevant"] is None for r in mine)
        print(f"{name}: {len({r['query'] for r in mine})} queries, {len(mine)} top-10 candidates, "
              f"{unknown} unknown (no fix)")  # fmt: skip
    sets = {
        name: _known([r for r in rows if r["set"] == name], args.unknown_low)
        for name in dict.fromkeys(r["set"] for r in rows)
    }
    print_grids(sets)
    print_rules(sets)
    print_levels(rows, args.unknown_low)


if __name__ == "__main__":
    main()
