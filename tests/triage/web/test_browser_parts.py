"""A triage run's parts in a real browser: the run page shows every part with its score, its
floor and how its kind fared here in its score band (from earlier runs' decisions); the internal
part is marked, the left-out ones listed quietly with why. The requester drops the related issues
on the proposal page (a new version), the approver approves that version, and the decisions
record the related issues rejected and the other parts approved.

With ``RESOLVEFLOW_UPDATE_SCREENSHOTS=1`` docs/images/run-parts.png is written again.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from test_browser_inbox import TIMEOUT_MS, Site, _sign_in, browser  # noqa: F401 - a fixture
from test_triage_parts import CRASH, Runs, _history

from conftest import World, make_executor, make_world
from fixtures_web import REPO, web_settings
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.bootstrap.app import open_app
from resolveflow.domain.vocabulary import SuggestionKind, SuggestionOutcome
from resolveflow.gate import approvals, feedback
from resolveflow.policy_file import DEFAULT_POLICY
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.triage.graph.build import TriageDeps
from resolveflow.triage.investigation_config import InvestigationConfig
from resolveflow.triage.parts import LabelModels, PartsConfig, PartsMaker
from resolveflow.web.server import ServerThread

pytest_plugins = ["fixtures_web"]

UPDATE_SCREENSHOTS = os.environ.get("RESOLVEFLOW_UPDATE_SCREENSHOTS") == "1"  # read on import
IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"


@pytest.fixture
def site(
    queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path
) -> Iterator[tuple[Site, World]]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with open_app(web_settings(queue_ready, oauth_github.url), auto_migrate=False) as app:
        world = make_world(app.db)
        with ServerThread(app, sandbox="test forge") as server:
            yield Site(app, server.url, oauth_github, shots), world


def _runs(web: Site, world: World) -> Runs:
    """Runs through the real graph, with the labelled history indexed and related issues found
    by the shipped model; the web app resumes them from the same checkpoints."""
    db, github = web.app.db, web.app.github
    embedder = OnnxMiniLM()
    Indexer(db, embedder).upsert(world.tenant.id, _history(REPO))
    config = PartsConfig(
        label_floor=0.35,
        retriever=Searcher(db, embedder),
        investigation=InvestigationConfig(relevance_floor=0.15, max_related=2),
        # Not flagged as #13's duplicate (a floor only a certain duplicate reaches): the related issues list it.
        duplicate_floor=1.0,
    )
    deps = TriageDeps(
        db=db,
        github=github,
        policy=lambda: DEFAULT_POLICY,
        executor=lambda: make_executor(db, github),
        parts=PartsMaker(LabelModels(db).for_issue, config, db),
    )
    return Runs(db, world, web.fake, deps)  # type: ignore[arg-type]


def test_a_run_page_shows_every_part_and_one_is_dropped_before_approving(
    browser: Any,  # noqa: F811 - the fixture imported above
    site: tuple[Site, World],
) -> None:
    web, world = site
    runs = _runs(web, world)
    try:
        # two earlier runs decided: their parts make the bands the page shows
        approver = world.approver(web.app.db)
        for number, approve in ((60, True), (61, False)):
            earlier = runs.start(number, *CRASH)["proposal"]
            if approve:
                approvals.approve(web.app.db, approver, UUID(earlier["id"]), earlier["digest"], 60)
            else:
                approvals.reject(web.app.db, approver, UUID(earlier["id"]), "not this time")
        view = runs.start(62, *CRASH)
    finally:
        runs.pool.close()
    run_id, first = view["run_id"], view["proposal"]

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(web, page, "rita")  # the requester drops; the approver approves (four eyes)
    page.goto(f"{web.url}/runs/{run_id}")
    parts = page.locator("#parts")
    for name in ("labels", "related", "missing_facts"):
        row = parts.locator(f"tr.part[data-part='{name}']")
        assert row.count() == 1, parts.inner_text()
        assert "of its kind here" in row.inner_text() or "here: 1 of 2 approved" in row.inner_text()
    related = parts.locator("tr.part[data-part='related']").inner_text()
    assert "(floor 0.15)" in related and "scored 0." in related
    assert "here: 1 of 2 approved (50%)" in related
    assert "decided by a rule" in parts.locator("tr.part[data-part='missing_facts']").inner_text()
    left_out = page.locator("#parts-left-out")
    assert "left out" in left_out.inner_text() and left_out.locator("[data-part='files']").count()
    web.shot(page, "run-parts")
    if UPDATE_SCREENSHOTS:
        IMAGES.mkdir(exist_ok=True)
        shutil.copy(sorted(web.shots.glob("*-run-parts.png"))[-1], IMAGES / "run-parts.png")

    page.goto(f"{web.url}/proposals/{first['id']}")
    page.check("#drop-part-related")
    web.shot(page, "drop-related")
    page.click("#drop-submit")
    page.wait_for_selector("#notice")
    assert page.inner_text("#version") == "2"
    assert "Earlier reports that look related" not in page.inner_text("#proposal")
    context.close()

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(web, page, "alex")
    page.goto(f"{web.url}/runs/{run_id}")
    assert page.inner_text("#digest") != first["digest"]  # the new version's
    page.click("#approve")
    page.wait_for_selector("#notice")
    web.shot(page, "approved-without-related")
    context.close()

    found = {
        e.kind: e.outcome
        for e in feedback.decision_examples(web.app.db, approver)
        if str(e.lineage_id) == first["lineage_id"] and e.kind is not SuggestionKind.LABEL
    }
    assert found[SuggestionKind.RELATED] is SuggestionOutcome.REJECTED
    assert found[SuggestionKind.MISSING_FACTS] is SuggestionOutcome.APPROVED
