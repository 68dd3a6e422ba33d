"""Issue 11, finding 9, in a real browser (Playwright driving Debian's Chromium): a proposal hiding
every kind of content the rendering does not show. The warnings stand above the Approve button,
the exact text is open beside the rendering, and the page asks nothing of any other origin (the
tracking image in the text is never requested).

The screenshot in docs/screenshots/proposal-hidden-content.png was taken by this test (it goes
to the test's output folder, ``tmp_path/screenshots``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_approver_view import EVERY_KIND
from test_browser_inbox import TIMEOUT_MS, Site, _sign_in, browser  # noqa: F401 - a fixture

from conftest import World, make_world
from fixtures_web import REPO, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.disclosure import Hidden
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.web.server import ServerThread

pytest_plugins = ["fixtures_web"]


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


def test_every_kind_of_hidden_content_is_flagged_above_approve_and_nothing_is_fetched(
    browser: Any,  # noqa: F811 - the fixture imported above
    site: tuple[Site, World],
) -> None:
    web, world = site
    proposal = proposal_service.create_proposal(
        web.app.db,
        world.requester(web.app.db),
        repository=REPO,
        issue=1,
        comment=EVERY_KIND,
        labels=["question"],
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(web, page, "alex")
    elsewhere: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(web.url) else elsewhere.append(r.url))

    page.goto(f"{web.url}/proposals/{proposal.id}")
    page.wait_for_selector("#disclosures")
    kinds = page.locator("#disclosures .disclosure").evaluate_all(
        "items => items.map(item => item.dataset.kind)"
    )
    assert kinds == [kind.value for kind in Hidden]
    warnings, approve = page.locator("#disclosures").bounding_box(), page.locator("#approve")
    assert approve.is_enabled() and warnings["y"] < approve.bounding_box()["y"]
    assert page.locator("#comment-source").is_visible()  # open, beside the rendering
    assert page.locator("#comment-source .hidden-char").all_inner_texts() == [
        "⟨U+202E⟩",
        "⟨U+200B⟩",
    ]
    assert page.locator("#rendered-comment details[open]").count() == 1
    assert page.locator("img").count() == 0
    assert "tracker.example/pixel.gif" in page.inner_text("#rendered-comment .blocked-image")
    web.shot(page, "proposal-hidden-content")
    assert elsewhere == []
    context.close()
