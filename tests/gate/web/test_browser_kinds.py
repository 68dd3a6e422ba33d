"""Both action kinds in a real browser (Playwright driving Debian's Chromium) against the real
server and worker: the inbox lists a triage run and proposals made directly; a new-issue proposal
is read, edited and approved on its page, and the issue arrives at the fake GitHub once; hostile
text in a title and body stays inert.

Screenshots go to the test's output folder (``tmp_path/screenshots``); the ones in
docs/screenshots/ were taken by this test. With ``RESOLVEFLOW_UPDATE_SCREENSHOTS=1``
docs/images/close-duplicate.png is written again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from test_browser_inbox import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, Site, _sign_in
from test_web_security import XSS_BODY

from conftest import World, make_world
from fixtures_web import REPO, web_settings
from resolveflow.bootstrap.app import App, open_app
from resolveflow.domain.records import Proposal
from resolveflow.gate import proposals as proposal_service
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.web.server import ServerThread
from resolveflow.worker import WorkerThread

pytest_plugins = ["fixtures_web"]

UPDATE_SCREENSHOTS = os.environ.get("RESOLVEFLOW_UPDATE_SCREENSHOTS") == "1"  # read on import
DOCS_IMAGES = Path(__file__).parents[3] / "docs" / "images"

TITLE = "Document the widget size limits"
BODY = """Users keep hitting the **size limit** without knowing it exists (#1).

The docs should say:

- the largest widget is `4096` units;
- what happens above it (the widget is refused, not truncated).

See [the configuration page](https://example.com/docs/config) for where this belongs."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class KindsSite(Site):
    def __init__(
        self, app: App, url: str, fake: FakeGitHubWithOAuth, shots: Path, world: World
    ) -> None:
        super().__init__(app, url, fake, shots)
        self.world = world

    def new_issue(self, title: str = TITLE, body: str = BODY) -> Proposal:
        return proposal_service.create_issue_proposal(
            self.app.db,
            self.world.requester(self.app.db),
            repository=REPO,
            title=title,
            body=body,
            labels=["bug", "needs-triage"],
            assignees=["alex"],
        )

    def comment(self) -> Proposal:
        return proposal_service.create_proposal(
            self.app.db,
            self.world.requester(self.app.db),
            repository=REPO,
            issue=1,
            comment="Could you attach the full log?",
            labels=["question"],
        )


@pytest.fixture
def site(
    queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path
) -> Iterator[KindsSite]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    sha = "ef" * 20
    oauth_github.add_check_run(REPO, sha, "tests (3.12)", conclusion="failure")
    ci = oauth_github.add_workflow_run(REPO, "CI", head_sha=sha, conclusion="failure")
    oauth_github.add_issue(
        REPO, 2, "CI is red on main", f"See {oauth_github.url}/{REPO}/actions/runs/{ci}"
    )
    oauth_github.add_issue(REPO, 3, "Widget crashes at start", "Same crash as #1.", user="octocat")
    settings = web_settings(queue_ready, oauth_github.url)
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with ServerThread(app, sandbox="test forge") as server, WorkerThread(app):
            yield KindsSite(app, server.url, oauth_github, shots, world)


def _inbox_lists(site: KindsSite, page: Any, *selectors: str) -> None:
    """The inbox, once the worker has started the webhook's run."""
    for _ in range(60):
        page.goto(f"{site.url}/inbox")
        if all(page.locator(selector).count() for selector in selectors):
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"the inbox never listed {selectors}")


def test_the_inbox_lists_both_kinds_and_a_new_issue_is_approved_and_created_once(
    browser: Any, site: KindsSite
) -> None:
    issue, comment = site.new_issue(), site.comment()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    site.deliver(2)
    rows = [f'tr[data-proposal="{issue.id}"]', f'tr[data-proposal="{comment.id}"]']
    _inbox_lists(site, page, "tr.run-row", *rows)
    assert page.locator(f"{rows[0]} [data-kind='github.issue_create']").count() == 1
    assert TITLE in page.inner_text(rows[0])
    assert page.locator(f"{rows[1]} [data-kind='github.issue']").count() == 1
    assert page.locator("tr.run-row [data-kind='github.issue']").count() == 1
    site.shot(page, "inbox-both-kinds")

    page.click(f"{rows[0]} a")
    page.wait_for_selector("#digest")
    assert page.inner_text("#issue-title") == TITLE
    assert page.inner_text("#assignees") == "alex"
    assert page.locator("#rendered-body strong").inner_text() == "size limit"
    assert page.locator("#gates .gate.fail").count() == 0
    assert page.inner_text("#digest") == issue.digest
    site.shot(page, "new-issue-proposal")

    page.click("#approve")
    page.wait_for_selector("#notice")
    expect(page.locator("#execution-state")).to_have_text("posted", timeout=TIMEOUT_MS)
    link = page.locator("#outcome-link")
    created = [i for i in site.fake.issues(REPO) if i["title"] == TITLE]
    assert len(created) == 1 and link.get_attribute("href") == created[0]["html_url"]
    assert created[0]["body"].startswith(BODY + "\n\n<!-- resolveflow:action=")
    assert [label["name"] for label in created[0]["labels"]] == ["bug", "needs-triage"]
    site.shot(page, "new-issue-created")

    page.click("#execution-link")
    page.wait_for_url(re.compile(r"/executions/[0-9a-f-]{36}$"))
    page.wait_for_selector("h1:has-text('Execution')")
    assert page.get_attribute("#kind", "data-kind") == "github.issue_create"
    assert page.locator("#outcome-link").get_attribute("href") == created[0]["html_url"]
    site.shot(page, "execution-new-issue")
    page.goto(f"{site.url}/executions")
    assert page.locator(f'a[href="{created[0]["html_url"]}"]').count() == 1
    site.shot(page, "executions-kinds")
    context.close()


def test_editing_a_new_issue_makes_a_new_version_to_approve(browser: Any, site: KindsSite) -> None:
    issue = site.new_issue()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    page.goto(f"{site.url}/proposals/{issue.id}")
    page.click("#decide details summary")
    page.fill("#edit-title", TITLE + " and the error message")
    page.fill("#edit-assignees", "alex, rita")
    site.shot(page, "new-issue-edit")
    page.click("#save-edit")
    page.wait_for_selector("#notice")
    assert page.inner_text("#version") == "2"
    assert page.inner_text("#issue-title").endswith("and the error message")
    assert page.inner_text("#assignees") == "alex rita"
    assert page.inner_text("#digest") != issue.digest
    page.click("text=v1")
    page.wait_for_selector("#superseded")
    assert page.locator("#approve").count() == 0
    site.shot(page, "new-issue-superseded")
    context.close()


def test_a_hostile_title_and_body_stay_inert(browser: Any, site: KindsSite) -> None:
    hostile = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
    issue = site.new_issue(title=hostile, body=XSS_BODY)
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    _sign_in(site, page, "alex")
    _inbox_lists(site, page, f'tr[data-proposal="{issue.id}"]')
    assert "<script>" in page.inner_text(f'tr[data-proposal="{issue.id}"] .issue-title')
    page.click(f'tr[data-proposal="{issue.id}"] a')
    page.wait_for_selector("#digest")
    # The exact source, shown as text: open at once, since the body hides content (issue 11).
    expect(page.locator("#body-source")).to_be_visible()
    site.shot(page, "new-issue-hostile")
    assert page.inner_text("#issue-title") == hostile
    assert "<script>window.__xss=3</script>" in page.inner_text("#body-source")
    assert page.evaluate("window.__xss") is None and dialogs == []
    context.close()


def test_a_close_as_duplicate_is_read_approved_and_then_waits_out_its_grace_period(
    browser: Any, site: KindsSite
) -> None:
    proposal = proposal_service.create_close_duplicate_proposal(
        site.app.db,
        site.world.requester(site.app.db),
        site.app.github,
        repository=REPO,
        issue=3,
        original=1,
        grace_hours=72,
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    page.goto(f"{site.url}/proposals/{proposal.id}")
    assert page.inner_text("#duplicate") == f"{REPO}#3"
    assert page.inner_text("#original") == f"{REPO}#1"
    assert page.inner_text("#grace") == "3 days after the notice is posted"
    assert "closed as a duplicate of #1" in page.inner_text("#then")
    assert "in 3 days unless someone objects" in page.inner_text("#rendered-comment")
    site.shot(page, "close-duplicate-proposal")
    if UPDATE_SCREENSHOTS:
        page.screenshot(path=str(DOCS_IMAGES / "close-duplicate.png"), full_page=True)

    page.click("#approve")
    page.wait_for_selector("#notice")
    # The worker posts the notice once; the close waits in the queue, nothing is closed yet.
    for _ in range(60):
        page.goto(f"{site.url}/proposals/{proposal.id}")
        if page.inner_text("#execution-state") == "waiting out the grace period":
            break
        page.wait_for_timeout(500)
    text = page.inner_text("body")
    assert "will close after" in text and "unless someone objects" in text
    assert page.inner_text("#execution-state") == "waiting out the grace period"
    assert page.locator("#following").count() == 0  # no polling for three days
    [issue] = [i for i in site.fake.issues(REPO) if i["number"] == 3]
    assert issue["state"] == "open"
    [notice] = site.fake.comments(REPO, 3)
    assert "will be closed as a duplicate of #1 in 3 days" in notice["body"]
    site.shot(page, "close-duplicate-waiting")
    context.close()
