"""In a real browser (Playwright driving Debian's Chromium) against the real server and worker:
sign in through the fake OAuth, see the run a signed webhook started, approve it, watch the comment
arrive at the fake GitHub; see an unknown execution and settle it; XSS stays inert.

Screenshots go to the test's output folder (``tmp_path/screenshots``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from conftest import make_world
from fixtures_web import REPO, WEBHOOK_SECRET, issue_payload, web_settings
from resolveflow.bootstrap.app import App, open_app
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.forge.server import Delay
from resolveflow.web.server import ServerThread
from resolveflow.worker import WorkerThread

pytest_plugins = ["fixtures_web"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Site:
    def __init__(self, app: App, url: str, fake: FakeGitHubWithOAuth, shots: Path) -> None:
        self.app, self.url, self.fake, self.shots = app, url, fake, shots
        self.count = 0

    def shot(self, page: Any, name: str) -> None:
        self.count += 1
        page.screenshot(path=str(self.shots / f"{self.count:02d}-{name}.png"), full_page=True)

    def deliver(self, number: int) -> None:
        body = json.dumps(issue_payload(number)).encode()
        signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        response = httpx.post(
            f"{self.url}/webhooks/github",
            content=body,
            headers={
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": signature,
            },
            timeout=10,
        )
        assert response.status_code == 202, response.text


@pytest.fixture
def site(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Site]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    sha = "cd" * 20
    oauth_github.add_check_run(REPO, sha, "tests (3.12)", conclusion="failure")
    ci = oauth_github.add_workflow_run(REPO, "CI", head_sha=sha, conclusion="failure")
    for number in (2, 3):
        oauth_github.add_issue(
            REPO,
            number,
            f"CI is red ({number})",
            f"See {oauth_github.url}/{REPO}/actions/runs/{ci}",
        )
    settings = web_settings(queue_ready, oauth_github.url, worker_reconcile_cron="* * * * *")
    with open_app(settings, auto_migrate=False) as app:
        make_world(app.db)
        with ServerThread(app, sandbox="test forge") as server, WorkerThread(app):
            yield Site(app, server.url, oauth_github, shots)


def _sign_in(site: Site, page: Any, login: str) -> None:
    page.goto(f"{site.url}/inbox")
    page.wait_for_url("**/login")
    site.shot(page, "sign-in")
    page.click("#signin")
    page.wait_for_selector(f"#signin-{login}")
    site.shot(page, "sandbox-authorize")
    page.click(f"#signin-{login}")
    page.wait_for_url("**/inbox")
    assert page.inner_text("#who") == login


def _open_run(site: Site, page: Any, target: str) -> None:
    for _ in range(60):  # the worker starts the run a moment after the webhook
        page.goto(f"{site.url}/inbox")
        link = page.get_by_role("link", name=target)
        if link.count():
            break
        page.wait_for_timeout(500)
    site.shot(page, "inbox")
    page.get_by_role("link", name=target).click()
    page.wait_for_selector("#digest")


def test_sign_in_see_the_webhook_run_approve_and_the_comment_arrives(
    browser: Any, site: Site
) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    cookie = next(c for c in context.cookies() if c["name"] == "rf_session")
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Lax"
    site.deliver(2)
    _open_run(site, page, f"{REPO}#2")
    assert page.get_attribute("#classification", "data-classification") == "deterministic"
    rendered = page.inner_text("#rendered-comment")
    assert "failing CI check" in rendered
    assert page.locator("#gates .gate.fail").count() == 0
    site.shot(page, "run-before-approval")
    page.click("#approve")
    page.wait_for_selector("#notice")
    expect(page.locator("#execution-state")).to_have_text("posted", timeout=TIMEOUT_MS)
    site.shot(page, "run-after-approval")
    comments = site.fake.comments(REPO, 2)
    assert len(comments) == 1
    assert comments[0]["body"].startswith(rendered.splitlines()[0][:20])
    assert "resolveflow:action=" in comments[0]["body"]
    assert site.fake.issue_labels(REPO, 2) == ["ci-failure"]
    # Once posted, the page leads with where: "Posted" and the link above the fold, the
    # comment's heading says it is the posted one (live, and on a fresh load).
    expect(page.locator("#comment-heading")).to_have_text("The comment, as posted")
    page.reload()
    page.wait_for_selector("#outcome-link")
    assert page.inner_text("#outcome-text").startswith("Posted")
    assert page.get_attribute("#outcome-link", "href") == comments[0]["html_url"]
    link = page.locator("#outcome-link").bounding_box()
    assert link is not None and link["y"] + link["height"] < page.viewport_size["height"], link
    assert page.inner_text("#comment-heading") == "The comment, as posted"
    page.screenshot(path=str(site.shots / "run-posted-top.png"))  # the viewport, not the page
    context.close()


def test_an_unknown_execution_is_shown_and_a_person_settles_it(browser: Any, site: Site) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    site.deliver(3)
    _open_run(site, page, f"{REPO}#3")
    # The request leaves and the connection drops: nobody knows whether it was posted.
    site.fake.inject(Delay(0.2, apply_write=False), method="POST", path="/comments")
    page.click("#approve")
    expect(page.locator("#execution-state")).to_have_attribute(
        "data-state", "unknown", timeout=TIMEOUT_MS
    )
    site.shot(page, "run-unknown")
    page.goto(f"{site.url}/executions?state=unknown")
    site.shot(page, "executions-unknown")
    page.get_by_role("link", name="settle").click()
    page.wait_for_selector("#resolve-form")
    site.shot(page, "resolve-form")
    writes = site.fake.writes_received
    page.click("#not-sent")
    page.wait_for_selector("#notice")
    assert page.get_attribute("#execution-state", "data-state") == "not_sent"
    site.shot(page, "resolved")
    assert site.fake.comments(REPO, 3) == [] and site.fake.writes_received == writes
    context.close()


def test_untrusted_issue_text_stays_inert_in_the_browser(browser: Any, site: Site) -> None:
    from test_web_security import XSS_BODY, XSS_COMMENT, XSS_TITLE

    site.fake.add_issue(REPO, 9, XSS_TITLE, XSS_BODY)
    site.fake.add_comment_directly(REPO, 9, XSS_COMMENT)
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    _sign_in(site, page, "alex")
    site.deliver(9)
    _open_run(site, page, f"{REPO}#9")
    page.click("details summary") if page.locator(
        ".issue-comment details summary"
    ).count() else None
    page.wait_for_timeout(500)
    site.shot(page, "xss-run-page")
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    assert "<script>" in page.inner_text("#issue-title")  # shown as text
    context.close()
