"""Quiet by default (issue 31, part 3) in a real browser and over the API: the inbox says, in one
line with a link, which kind went to the digest by itself; the proposals kept out of the inbox
are on /digest per day, place and kind; one opened from there is approved like any other.

With ``RESOLVEFLOW_UPDATE_SCREENSHOTS=1`` docs/images/digest.png is written again.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_browser_inbox import TIMEOUT_MS, Site, _sign_in, browser  # noqa: F401 - a fixture
from test_decision_examples import _approve, _reject, _run_proposal

from conftest import World, make_world
from fixtures_web import REPO, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.domain.vocabulary import REFINE_PROPOSAL_NOTE, RunStatus
from resolveflow.gate import proposals
from resolveflow.gate.domain.actions import build_action
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.store.database import Database
from resolveflow.triage.store import runs as run_store
from resolveflow.web.server import ServerThread

pytest_plugins = ["fixtures_web"]

UPDATE_SCREENSHOTS = os.environ.get("RESOLVEFLOW_UPDATE_SCREENSHOTS") == "1"  # read on import
IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
POLICY = f'[repositories."{REPO}".suggestions]\nrefine_summary = "digest"\n'
MOVED = (
    "Review request suggestions on acme/widgets go to the digest: 3 of 12 approved over the last"
    " 12 decisions (floor 50 %)."
)


@pytest.fixture
def site(
    queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path
) -> Iterator[tuple[Site, World]]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    settings = web_settings(queue_ready, oauth_github.url, policy_file=str(policy))
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with ServerThread(app, sandbox="test forge") as server:
            yield Site(app, server.url, oauth_github, shots), world


def _history(db: Database, world: World, quiet: Any) -> list[str]:
    """Twelve requests for review, three approved (the later ones went to the digest as the
    rejections came in), then one more; and refine's summary, which the policy file sends
    there. The ids of the two waiting in the digest."""
    issues = itertools.count(100)

    def review() -> Any:
        made = _run_proposal(
            db, world, "human_review", "fallback", [], quiet=quiet, issue=next(issues)
        )
        with db.tenant(world.tenant.id) as conn:
            run_store.set_status(
                conn, world.tenant.id, made.run_id, RunStatus.AWAITING_APPROVAL, {}
            )
        return made

    for n in range(12):
        made = review()
        _approve(db, world, made) if n < 3 else _reject(db, world, made, "no")
    waiting = review()
    refine = proposals.create_prepared_proposal(
        db,
        world.requester(db),
        build_action(REPO, 7, "Related: #3.", []),
        REFINE_PROPOSAL_NOTE,
        quiet,
    )
    return [str(waiting.id), str(refine.id)]


def test_the_inbox_line_the_digest_page_and_an_approval_from_it(
    browser: Any,  # noqa: F811 - the fixture imported above
    site: tuple[Site, World],
) -> None:
    web, world = site
    waiting, refine = _history(web.app.db, world, web.app.quiet())
    answer = httpx.get(
        f"{web.url}/api/v1/digest",
        headers={"Authorization": f"Bearer {world.approver_token}"},
        timeout=30,
    ).json()
    assert [m["text"] for m in answer["moved"]] == [MOVED]
    listed = {i["proposal_id"]: i for d in answer["days"] for g in d["groups"] for i in g["items"]}
    assert {listed[waiting]["why"], listed[refine]["why"]} == {"acceptance", "policy"}
    assert {i["state"] for i in listed.values()} == {"waiting", "rejected"}
    bad = httpx.get(
        f"{web.url}/api/v1/digest?day=13/01/2025",
        headers={"Authorization": f"Bearer {world.approver_token}"},
        timeout=30,
    )
    assert bad.status_code in (400, 422) and "YYYY-MM-DD" in bad.text

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(web, page, "alex")
    page.goto(f"{web.url}/inbox")
    line = page.locator(".quiet-notice")
    assert line.count() == 1 and line.inner_text().startswith(MOVED)
    inbox = page.inner_text("#inbox-body")
    for kept_out in (waiting, refine):
        assert page.locator(f"[data-proposal='{kept_out}']").count() == 0, inbox

    page.click(".quiet-notice a")
    page.wait_for_url("**/digest")
    groups = page.locator("h3.digest-group").all_inner_texts()
    assert any("a request for a person's review" in g for g in groups), groups
    assert any("a refine summary" in g for g in groups), groups
    row = page.locator(f"tr.digest-row[data-proposal='{waiting}']")
    assert "acceptance 3 of 12" in row.inner_text() and "waiting" in row.inner_text()
    assert "the policy file" in page.inner_text(f"tr.digest-row[data-proposal='{refine}']")
    assert "review_request" not in page.inner_text("main")
    web.shot(page, "digest")
    if UPDATE_SCREENSHOTS:
        IMAGES.mkdir(exist_ok=True)
        shutil.copy(sorted(web.shots.glob("*-digest.png"))[-1], IMAGES / "digest.png")

    # refine's summary, opened from the digest, is approved by its digest like any proposal (the
    # triage run's would resume its graph, which this history has none of)
    page.locator(f"tr.digest-row[data-proposal='{refine}'] a").click()
    page.wait_for_url(f"**/proposals/{refine}")
    page.click("#approve")
    page.wait_for_selector("#notice")
    page.goto(f"{web.url}/digest")
    state = page.locator(f"tr.digest-row[data-proposal='{refine}'] td[data-state]")
    assert state.get_attribute("data-state") not in (None, "waiting", "rejected")
    context.close()


def test_the_digest_day_is_typed_and_shown_as_yyyy_mm_dd_in_any_locale(
    browser: Any,  # noqa: F811 - the fixture imported above
    site: tuple[Site, World],
) -> None:
    web, _ = site
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(web, page, "alex")
    page.goto(f"{web.url}/digest")
    day = page.locator("input[name=day]")
    assert day.get_attribute("type") == "text" and day.get_attribute("placeholder") == "YYYY-MM-DD"
    day.fill("01/13/2025")  # the browser's own check refuses a US date before it is sent
    assert not day.evaluate("input => input.checkValidity()")
    day.fill("2025-01-13")
    page.click("form.filters button")
    page.wait_for_url("**/digest?day=2025-01-13")
    assert page.locator("input[name=day]").input_value() == "2025-01-13"
    assert "2025-01-13 (UTC)" in page.inner_text("main")
    web.shot(page, "digest-day")
    page.goto(f"{web.url}/digest?day=01/13/2025")  # typed in the address: refused in one line
    said = page.inner_text("main")
    assert "day must be YYYY-MM-DD, not '01/13/2025'" in said, said
    context.close()
