"""The docs part in live runs (``triage/parts.py``, Ask wired as in ``bootstrap/``): through the
real graph, Postgres and the fake GitHub over HTTP, against a tenant whose documentation folder
is indexed as ``index docs`` indexes it. A question-like issue gets the page that answers it
quoted and cited in the proposal's comment, and no ask is recorded; a failure report, worded as
a question or not, is not answered from the docs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from conftest import World, make_executor, make_world
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.ask.gaps import gap_report
from resolveflow.bootstrap.triage_docs import ask_docs
from resolveflow.policy_file import DEFAULT_POLICY, PolicyFile, parse_policy
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import DocsFolder
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.checkpoints import checkpoint_saver
from resolveflow.store.database import Database
from resolveflow.triage import runs as run_service
from resolveflow.triage.backtest import run_backtest
from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
from resolveflow.triage.graph.runs import RunController
from resolveflow.triage.investigation_config import InvestigationConfig
from resolveflow.triage.parts import LabelModels, PartsConfig, PartsMaker

REPO = "acme/widgets"
# A small documentation folder, invented here.
PAGES = {
    "guides/export.md": (
        "# Exporting widgets\n\nWidgets can be written to other formats.\n\n"
        '## To Parquet\n\nCall `widgets.export(path, format="parquet")` to write every '
        'widget to one Parquet file; pass `compression="zstd"` for smaller files.\n\n'
        '## To CSV\n\nCall `widgets.export(path, format="csv")`; each widget is one row.\n'
    ),
    "guides/install.md": (
        "# Installing widgets\n\nInstall with `pip install widgets`. Python 3.10 or later "
        "is needed. Extras: `pip install widgets[parquet]` adds the Parquet writer.\n"
    ),
    "guides/cache.md": (
        "# Caching\n\nLoaded widgets are cached in `~/.cache/widgets`. Set `WIDGETS_CACHE` "
        "to move the cache to another folder or disk, and `widgets.cache.clear()` empties it.\n"
    ),
    "guides/config.md": (
        "# Configuration\n\nSettings are read from `widgets.toml` in the working folder: the "
        "default separator, the number of worker threads and the log level.\n"
    ),
}
QUESTION = (
    "How do I export widgets to parquet?",
    "I have a few thousand widgets loaded and want to write them to a parquet file. "
    "I read the readme but could not find how.",
)
FAILURE = (
    "Exporting widgets to parquet crashes",
    "Every time I export my widgets to a parquet file the program crashes with an error. "
    "It started after the last upgrade and happens with every widget I tried.",
)


def _runs(db: Database, fake: FakeGitHubServer, github: Any, tmp: Path, policy: PolicyFile):
    fake.add_repo(REPO, ["bug", "documentation", "question"])
    world = make_world(db, repository=REPO)
    folder = tmp / "docs"
    for path, text in PAGES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    embedder = OnnxMiniLM()
    Indexer(db, embedder).upsert(world.tenant.id, DocsFolder(folder, "docs"))
    searcher = Searcher(db, embedder)
    parts = PartsMaker(LabelModels(db).for_issue, PartsConfig(docs=ask_docs(db, searcher)), db)
    deps = TriageDeps(
        db=db,
        github=github,
        policy=lambda: policy,
        executor=lambda: make_executor(db, github),
        parts=parts,
    )
    pool = db.autocommit_pool()
    controller = RunController(
        db=db,
        graph=build_triage_graph(deps, checkpoint_saver(pool)),
        lease_seconds=60,
        approval_ttl_seconds=3600,
    )
    return world, controller, pool


def _start(
    db: Database, fake: FakeGitHubServer, world: World, controller: RunController, number: int,
    issue: tuple[str, str],
) -> dict[str, Any]:  # fmt: skip
    fake.add_issue(REPO, number, *issue)
    run_id = controller.start(world.requester(db), REPO, number)
    return run_service.describe_run(db, world.approver(db), run_id)


def _docs(view: dict[str, Any]) -> dict[str, Any]:
    [part] = [p for p in view["detail"]["parts"] if p["name"] == "docs"]
    return part


class Live:
    def __init__(self, db: Database, fake: FakeGitHubServer, github: Any, tmp: Path) -> None:
        self.db, self.fake = db, fake
        self.world, self.controller, self.pool = _runs(db, fake, github, tmp, DEFAULT_POLICY)

    def __call__(self, number: int, issue: tuple[str, str]) -> dict[str, Any]:
        return _start(self.db, self.fake, self.world, self.controller, number, issue)


@pytest.fixture
def live(db: Database, fake_github: FakeGitHubServer, github_client: Any, tmp_path: Path):  # type: ignore[no-untyped-def]
    made = Live(db, fake_github, github_client, tmp_path)
    yield made
    made.pool.close()


def test_a_question_gets_the_page_that_answers_it_quoted_and_cited(
    live: Live, db: Database
) -> None:
    view = live(50, QUESTION)
    part = _docs(view)
    assert part["kept"] and part["score"] >= part["floor"] > 0
    assert part["items"][0]["ref"] == "guides/export.md" and part["items"][0]["score"] > 0
    comment = view["proposal"]["action"]["comment"]
    assert "The project's documentation may answer this:" in comment
    assert "- Exporting widgets (`guides/export.md`), “To Parquet”:" in comment
    assert "parquet" in comment.split("“To Parquet”:")[1].lower()
    assert "a few thousand widgets" not in comment  # nothing of the issue is repeated
    assert comment.endswith("Drafted by ResolveFlow and approved by a maintainer.")
    # asked on nobody's behalf: no ask recorded, no gap counted
    tenant = live.world.tenant.id
    with db.tenant(tenant) as conn:
        row = conn.execute("SELECT count(*) AS n FROM ask_records").fetchone()
    assert row is not None and row["n"] == 0
    assert gap_report(db, OnnxMiniLM(), tenant).unanswered == 0


def test_a_failure_report_is_not_answered_from_the_docs(live: Live) -> None:
    view = live(51, FAILURE)
    part = _docs(view)
    assert part["kept"] is False and part["left_out"] == "not a question"
    comment = (view["proposal"] or {}).get("action", {}).get("comment") or ""
    assert "documentation may answer" not in comment and "guides/export.md" not in comment


def test_a_question_nothing_in_the_docs_answers_gets_no_paragraph(live: Live) -> None:
    view = live(52, ("How do I bake sourdough bread at high altitude?", "Asking for a friend."))
    part = _docs(view)
    assert part["kept"] is False and part["left_out"] == "no document answers it"
    comment = (view["proposal"] or {}).get("action", {}).get("comment") or ""
    assert "documentation may answer" not in comment


def test_the_policy_can_turn_the_docs_part_off(
    db: Database, fake_github: FakeGitHubServer, github_client: Any, tmp_path: Path
) -> None:
    policy = parse_policy(
        '[repositories."acme/widgets".suggestions]\ndocs = "off"\n', "policy.toml"
    )
    world, controller, pool = _runs(db, fake_github, github_client, tmp_path, policy)
    try:
        view = _start(db, fake_github, world, controller, 53, QUESTION)
    finally:
        pool.close()
    part = _docs(view)
    assert part["kept"] is False and "off" in part["left_out"]
    comment = (view["proposal"] or {}).get("action", {}).get("comment") or ""
    assert "documentation may answer" not in comment


def _record(number: int, day: int, title: str, body: str) -> str:
    return json.dumps(
        {
            "id": str(number),
            "kind": "issue",
            "title": title,
            "body": body,
            "created_at": f"2024-03-{day:02d}T00:00:00Z",
            "state": "open",
            "labels": [],
            "url": f"https://github.com/{REPO}/issues/{number}",
        }
    )


def test_the_backtest_replays_the_docs_part_through_the_same_code(
    db: Database, tmp_path: Path
) -> None:
    """``backtest --docs``: the folder indexed beside the corpus, a question answered from it
    and counted, with its cited page as the example; a failure report not."""
    folder = tmp_path / "docs"
    for path, text in PAGES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    corpus = tmp_path / "issues.jsonl"
    corpus.write_text(
        "\n".join([_record(60, 1, *QUESTION), _record(61, 2, *FAILURE)]), encoding="utf-8"
    )
    report = run_backtest(
        db,
        OnnxMiniLM(),
        [corpus],
        datetime(2024, 1, 1, tzinfo=UTC),
        config=InvestigationConfig(relevance_floor=0.15),
        docs=folder,
        docs_answerer=partial(ask_docs, db),
    )
    figures = report.as_json(items=True)
    assert figures["parts"]["docs"] == {
        "count": 1,
        "examples": [{"issue": "60", "items": ["guides/export.md"]}],
    }
    items = {item["id"]: item for item in figures["items"]}
    assert "docs" not in items["61"]["parts"]
    # without the answerer's documents, the part is not made at all
    plain = run_backtest(
        db,
        OnnxMiniLM(),
        [corpus],
        datetime(2024, 1, 1, tzinfo=UTC),
        config=InvestigationConfig(relevance_floor=0.15),
    )
    assert plain.as_json()["parts"]["docs"] == {"count": 0}
