"""Issue 12 in a real browser (Playwright driving Debian's Chromium) against the real server, worker
and sandbox forge: the whole approval, walked as a person would.

It asserts: every link on every page the walk visits leads to an HTML page with a heading (never
JSON, never blank); who will post is said before approval; after it, the outcome with its link,
and following the link shows the sandbox forge's issue page with the posted comment; the run page
updates itself while the worker runs, without a reload; no machine words on the pages.

With ``RESOLVEFLOW_UPDATE_SCREENSHOTS=1`` the screenshots in docs/images/ are written again.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin

import pytest
from playwright.sync_api import expect
from test_browser_inbox import TIMEOUT_MS, Site, _open_run, _sign_in, browser  # noqa: F401

from conftest import make_world
from fixtures_web import REPO, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.forge.server import Hold
from resolveflow.web.server import ServerThread
from resolveflow.worker import WorkerThread

pytest_plugins = ["fixtures_web"]

IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
# Read at import: the test fixtures scrub RESOLVEFLOW_* from the environment.
UPDATE_SCREENSHOTS = os.environ.get("RESOLVEFLOW_UPDATE_SCREENSHOTS") == "1"
MACHINE_WORDS = re.compile(
    r"awaiting_approval|has_failing_ci|is_information_sparse|not_sent|human_review|\{\"", re.I
)


@pytest.fixture
def site(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Site]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    sha = "ab" * 20
    oauth_github.add_check_run(REPO, sha, "tests (3.12)", conclusion="failure")
    ci = oauth_github.add_workflow_run(REPO, "CI", head_sha=sha, conclusion="failure")
    oauth_github.add_issue(
        REPO, 2, "CI is red on main", f"See {oauth_github.url}/{REPO}/actions/runs/{ci}"
    )
    # A held write must be released within the client's timeout: give it room.
    settings = web_settings(queue_ready, oauth_github.url, github_timeout_seconds=5.0)
    with open_app(settings, auto_migrate=False) as app:
        make_world(app.db)
        with ServerThread(app, sandbox="sandbox forge") as server, WorkerThread(app):
            yield Site(app, server.url, oauth_github, shots)


def _keep(site: Site, page: Any, name: str) -> None:
    """A screenshot for the test's folder and, when asked, for docs/images/."""
    site.shot(page, name)
    if UPDATE_SCREENSHOTS:
        IMAGES.mkdir(exist_ok=True)
        shutil.copy(sorted(site.shots.glob(f"*-{name}.png"))[-1], IMAGES / f"{name}.png")


def _links(page: Any) -> set[str]:
    hrefs = page.locator("a[href]").evaluate_all("links => links.map(link => link.href)")
    return {urldefrag(urljoin(page.url, href))[0] for href in hrefs}


def _assert_html_with_heading(context: Any, url: str) -> None:
    response = context.request.get(url, max_redirects=5)
    assert response.status == 200, (url, response.status)
    assert response.headers["content-type"].startswith("text/html"), (url, response.headers)
    heading = re.search(r"<h1[^>]*>(.*?)</h1>", response.text(), re.S)
    assert heading and re.sub(r"<[^>]+>", "", heading.group(1)).strip(), url


def test_the_whole_approval_in_the_browser(browser: Any, site: Site) -> None:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    visited: set[str] = set()
    links: set[str] = set()

    def visit() -> None:
        visited.add(page.url)
        links.update(_links(page))
        assert not MACHINE_WORDS.search(page.inner_text("main")), page.url

    _sign_in(site, page, "alex")
    site.deliver(2)
    _open_run(site, page, f"{REPO}#2")
    page.goto(f"{site.url}/inbox")
    row = page.locator("tr.run-row")
    expect(row.locator(".issue-title")).to_have_text("CI is red on main")  # the title
    assert page.inner_text("#inbox-heading") == "Waiting for a decision"
    _keep(site, page, "inbox")
    visit()
    page.select_option("select[name=status]", "completed")
    expect(page.locator("#inbox-heading")).to_have_text("Runs: done")
    expect(page.get_by_role("link", name=f"{REPO}#2")).to_have_count(0)
    page.goto(f"{site.url}/inbox")
    page.get_by_role("link", name=f"{REPO}#2").click()
    page.wait_for_selector("#digest")

    # Before approval: the checks, and who will post.
    expect(page.locator("#who-posts")).to_have_text(
        re.compile(r"Will be posted as\s+@alex\s+\(your own token\)")
    )
    assert page.locator("#gates .gate.fail").count() == 0
    assert page.locator("label[for=reject-reason]").count() == 1
    assert "secondary" in (page.get_attribute("#reject", "class") or "")
    assert page.inner_text("#rule") == "CI is failing"
    assert page.inner_text("tr[data-fact=is_information_sparse] .fact-value") == "no"
    assert "good" in page.get_attribute("tr[data-fact=is_information_sparse] .fact-value", "class")
    _keep(site, page, "run-before-approval")
    visit()
    run_url = page.url

    # Approve while the forge holds the comment: the page must change by itself.
    held = Hold(threading.Event())
    site.fake.inject(held, method="POST", path="/comments")
    page.click("#approve")
    page.wait_for_selector("#notice")
    expect(page.locator("#outcome")).to_be_visible()
    assert page.locator("#gates").count() == 0  # the checks gave way to the outcome
    page.evaluate("window.__notReloaded = true")
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    assert held.arrived.wait(TIMEOUT_MS / 1000)
    expect(page.locator("#execution-state")).to_have_attribute("data-state", "sending")
    held.release.set()
    expect(page.locator("#outcome-text")).to_have_text(
        re.compile(r"Posted as @alex at \d{4}-\d\d-\d\d \d\d:\d\d UTC"), timeout=TIMEOUT_MS
    )
    assert page.evaluate("window.__notReloaded") is True and navigations == []
    expect(page.locator("#run-status[hx-get]")).to_have_count(0)  # final: it stops asking
    assert page.get_attribute("#outcome-text time", "title")  # local time on hover
    comments = site.fake.comments(REPO, 2)
    assert len(comments) == 1
    assert page.get_attribute("#outcome-link", "href") == comments[0]["html_url"]
    _keep(site, page, "run-after-approval")
    visit()

    # Each click waits for its own page: the run page has an #outcome too, so waiting for the
    # selector alone could pass before the navigation, and the next click land on the old page.
    page.click("#execution-link")
    page.wait_for_url(re.compile(r"/executions/[0-9a-f-]+$"))
    page.wait_for_selector("#outcome")
    assert page.get_attribute("#outcome-link", "href") == comments[0]["html_url"]
    visit()
    page.click("#proposal-link")
    page.wait_for_url(re.compile(r"/proposals/[0-9a-f-]+$"))
    page.wait_for_selector("#digest")
    visit()
    for path in ("/executions", "/decisions", "/audit"):
        page.goto(site.url + path)
        visit()
        if path == "/decisions":  # issue 31: the approval just made is counted, in words
            row = page.locator("#acceptance tr.acceptance-row", has_text="a rule's comment")
            expect(row).to_contain_text("CI is failing")
            expect(row).to_contain_text("100 %")
            _keep(site, page, "decisions")

    # The outcome's link: the sandbox forge's own page for the issue, with the comment.
    page.goto(run_url)
    page.click("#outcome-link")
    page.wait_for_selector("#sandbox-forge")
    comment = page.locator(f"#issuecomment-{comments[0]['id']}")
    expect(comment.locator(".author")).to_have_text("alex")
    assert "failing CI check" in comment.locator(".comment-body").inner_text()
    assert "Sandbox forge, not GitHub" in page.inner_text("#sandbox-forge")
    _keep(site, page, "sandbox-issue")
    visited.add(page.url)
    links.update(_links(page))

    outside = {link for link in links if not link.startswith((site.url, site.fake.url))}
    assert outside == set(), outside
    for link in sorted(links - {f"{site.url}/logout"}):
        _assert_html_with_heading(context, link)
    assert len(links) >= 15, links
    context.close()
