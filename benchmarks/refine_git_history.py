"""Refine on a plain git history (opt-in; not part of the test suite): tickets written by hand
for a repository with no tracker and no index, each with the files its fix changed (or, with no
fix yet, the files that would be touched). Each ticket is refined as of one second before its fix
(only earlier commits are visible; its own fix is not), through the related, relevance and
changes steps, suggestions limited to ``--include`` (``src/**``). Printed per ticket: the rank
of the first right file among the suggestions, the best suggestion, whether a related task in
the first five changed a right file; then Hit@5, MRR@10 and that share over all tickets.

    git clone -q /work/main /tmp/self
    .venv/bin/python benchmarks/refine_git_history.py --clone /tmp/self \
        --tickets benchmarks/refine_tickets/resolveflow.jsonl [--no-history] [--no-file-weights]

``--no-history`` leaves the related tasks empty (what refine had before the history served as
past tasks); ``--no-file-weights`` turns off the votes' weighing by a file's idf over commits.
About 20 s on a 2-core machine (MiniLM int8).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.git import GitRepository
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.bootstrap.app import migrate, search_params
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.config import Settings
from resolveflow.refine import steps
from resolveflow.refine.changes import ChangesDeps, changes_step
from resolveflow.refine.domain.document import RefineDocument, RefineStep, Ticket, TicketSource
from resolveflow.refine.domain.rules import FileRules
from resolveflow.retrieval.search import Searcher
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url

NAME = "self"


def _one(
    ticket: dict[str, Any], deps: ChangesDeps, searcher: Searcher, history: bool
) -> dict[str, Any]:
    when = ticket["created_at"]
    created = datetime.fromisoformat(when) - timedelta(seconds=1) if when else None
    doc = RefineDocument(
        ticket=Ticket(source=TicketSource.TEXT, title=ticket["title"], body=ticket["body"],
                      created_at=created, repository=NAME),
        done=[RefineStep.LOAD],
    )  # fmt: skip
    clone = deps.histories[NAME] if history else None
    doc = (
        steps.related(doc, searcher, deps.tenant_id, history=clone)
        if history
        else doc.model_copy(update={"done": [RefineStep.LOAD, RefineStep.RELATED]})
    )
    doc = steps.relevance(doc, None)
    doc = changes_step(doc, deps)
    gold = set(ticket["files"])
    ranked = [f.path for f in doc.suggested_files]
    rank = next((n for n, p in enumerate(ranked[:10], 1) if p in gold), None)
    touched = {c.task for c in doc.changes if gold & {f.path for f in c.files}}
    related_right = any(t.external_id in touched for t in doc.related[:5])
    return {"id": ticket["id"], "rank": rank, "top": ranked[:1], "related_right": related_right,
            "related": [t.title[:70] for t in doc.related[:3]]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clone", type=Path, required=True)
    parser.add_argument("--tickets", type=Path, required=True)
    parser.add_argument("--include", default="src/**")
    parser.add_argument("--no-history", action="store_true")
    parser.add_argument("--no-file-weights", action="store_true")
    args = parser.parse_args()
    tickets = [json.loads(line) for line in args.tickets.read_text("utf-8").splitlines() if line]
    settings = Settings()
    url = embedded_database_url(Path(tempfile.mkdtemp(prefix="rf-bench-git-")))
    migrate(url)
    db = Database(url, max_size=2).open()
    history = RepositoryHistory.read(NAME, GitRepository(args.clone))
    searcher = Searcher(db, build_embedder(settings), search_params(settings))
    rows = []
    with scratch_tenant(db) as tenant_id:
        deps = ChangesDeps(db, tenant_id, {NAME: history}, files=FileRules(include=(args.include,)),
                           excerpts=False)  # fmt: skip
        if args.no_file_weights:
            deps.file_weights = False
        for ticket in tickets:
            rows.append(_one(ticket, deps, searcher, not args.no_history))
            print(json.dumps(rows[-1]))
    n = len(rows)
    hit5 = sum(1 for r in rows if r["rank"] is not None and r["rank"] <= 5) / n
    mrr = sum(1 / r["rank"] for r in rows if r["rank"]) / n
    right = sum(1 for r in rows if r["related_right"]) / n
    print(json.dumps({"tickets": n, "hit@5": round(hit5, 3), "mrr@10": round(mrr, 3),
                      "related_right@5": round(right, 3)}))  # fmt: skip
    db.close()


if __name__ == "__main__":
    main()
