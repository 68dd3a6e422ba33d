"""Ask on every dev corpus at once (issue 28): each corpus's figures and the worst case.

    .venv/bin/python benchmarks/ask_generalization.py [--data DIR] [--home DIR] [--json]

Runs the product's own ``eval answers`` (``ask/evaluation.py``: ingestion into a scratch tenant,
then ``ask`` on every question, provider none, the default embedder) on the runbooks and on R's
help pages with the r-help questions, and prints every figure per corpus, the worst case over
the two, and each corpus against its targets (``TARGET_SETS``: runbooks against its own, R's
pages against ``general``). One configuration for both: nothing here is set per corpus. About
three minutes on a 2-core machine, most of it indexing R's 1,440 pages.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.ask.evaluation import TARGET_SETS, AnswerReport, evaluate_answers
from resolveflow.bootstrap.app import migrate
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
# (name, corpus folder, questions file, target set), relative to the data folder.
CORPORA = (
    ("runbooks", "runbooks/corpus", "runbooks/questions-dev.jsonl", "runbooks"),
    ("r-help", "ask-rhelp-dev/corpus", "ask-rhelp-dev/questions.jsonl", "general"),
)
# Higher is better for these; lower for the rest.
HIGHER = {
    "mrr_at_5",
    "recall_at_5",
    "cited_right",
    "first_cited_right",
    "abstention_precision",
    "abstention_recall",
    "tentative_listed_right",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    url = embedded_database_url(args.home or Path(tempfile.mkdtemp(prefix="rf-bench-ask-")))
    migrate(url)
    db = Database(url, max_size=4, statement_timeout_ms=600_000).open()
    embedder = OnnxMiniLM()
    reports: dict[str, AnswerReport] = {}
    checks: dict[str, dict[str, dict[str, object]]] = {}
    try:
        for name, corpus, questions, targets in CORPORA:
            report, _ = evaluate_answers(db, embedder, args.data / corpus, args.data / questions)
            reports[name] = report
            checks[name] = report.checks(TARGET_SETS[targets])
    finally:
        db.close()
    figures = {name: report.as_json() for name, report in reports.items()}
    worst = {
        key: (max if key not in HIGHER else min)(float(f[key]) for f in figures.values())
        for key in next(iter(figures.values()))
        if key in HIGHER or key in {"answerable_abstained"}
    }
    if args.json:
        print(json.dumps({"figures": figures, "worst": worst, "targets": checks}, indent=2))
        return
    _print(figures, worst, checks)


def _print(
    figures: dict[str, dict[str, float | int | bool | None]],
    worst: dict[str, float],
    checks: dict[str, dict[str, dict[str, object]]],
) -> None:
    names = list(figures)
    print(f"{'figure':<26}" + "".join(f"{n:>12}" for n in names) + f"{'worst':>12}")
    for key in figures[names[0]]:
        cells = "".join(f"{figures[n][key]!s:>12}" for n in names)  # None: no passage labels
        print(f"{key:<26}{cells}{worst.get(key, ''):>12}")
    print()
    for name, found in checks.items():
        for key, check in found.items():
            mark = "met" if check["met"] else "NOT met"
            print(f"{name:<10} {key:<24} {check['value']!s:>8}  target {check['target']}  {mark}")


if __name__ == "__main__":
    main()
