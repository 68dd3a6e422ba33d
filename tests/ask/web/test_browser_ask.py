"""Ask in a real browser (Playwright driving Debian's Chromium) against the real server: sign in,
open Ask from the navigation, ask an alert's question, read the answer and follow citation [1]
to its passage, which is marked and scrolled into view.

An answer from an HTML page (tests/data/html-answer) reads as the page does: its table is a
table, its links are their words, its signature has a single ``*``.

With ``RESOLVEFLOW_UPDATE_SCREENSHOTS=1`` docs/images/ask.png, ask-tentative.png and
ask-html-answer.png are written again.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from test_browser_inbox import TIMEOUT_MS, Site, _sign_in, browser  # noqa: F401

from conftest import make_world
from fixtures_web import web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.web.server import ServerThread

pytest_plugins = ["fixtures_web"]

MINI = Path(__file__).parents[2] / "data" / "runbooks-mini" / "corpus"
HTML_PAGES = Path(__file__).parents[2] / "data" / "html-answer"
IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
# Read at import: the test fixtures scrub RESOLVEFLOW_* from the environment.
UPDATE_SCREENSHOTS = os.environ.get("RESOLVEFLOW_UPDATE_SCREENSHOTS") == "1"
ALERT = (
    "One or more targets are unreachable. 0.93% of the node-exporter/kubelet targets in "
    "kube-system namespace are down."
)


def _site(
    queue_ready: str, github: FakeGitHubWithOAuth, tmp_path: Path, docs: Path
) -> Iterator[Site]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    # The default embedder: answerability is calibrated on the tenant's own index.
    settings = web_settings(queue_ready, github.url, embedder="local")
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        app.indexer().upsert(world.tenant.id, read_docs_dir(docs, "docs"))
        with ServerThread(app, sandbox="sandbox forge") as server:
            yield Site(app, server.url, github, shots)


@pytest.fixture
def site(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Site]:
    yield from _site(queue_ready, oauth_github, tmp_path, MINI)


@pytest.fixture
def html_site(
    queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path
) -> Iterator[Site]:
    yield from _site(queue_ready, oauth_github, tmp_path, HTML_PAGES)


def test_ask_and_follow_a_citation_to_its_passage(browser: Any, site: Site) -> None:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    page.get_by_role("link", name="Ask", exact=True).click()
    page.wait_for_url("**/ask")
    page.get_by_label("Your question").fill(ALERT)
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#answer h2")).to_have_text("Answer")
    expect(page.locator("#citations li")).to_have_count(2)
    expect(page.locator("#cite-1 .source-link")).to_have_text("TargetDown § Diagnosis")
    site.shot(page, "ask")
    if UPDATE_SCREENSHOTS:
        IMAGES.mkdir(exist_ok=True)
        shutil.copy(site.shots / f"{site.count:02d}-ask.png", IMAGES / "ask.png")

    page.locator("#answer-text a.cite", has_text="[1]").first.click()
    page.wait_for_url("**/passages/*")
    expect(page.locator("h1")).to_have_text("TargetDown")
    cited = page.locator("li.chunk.cited")
    expect(cited).to_have_count(1)
    expect(cited).to_contain_text("up == 0 query")
    expect(cited.locator("code", has_text="up == 0")).to_have_count(1)  # code reads as code
    expect(cited).to_be_in_viewport()
    assert page.url.endswith("#" + (cited.get_attribute("id") or "?"))
    site.shot(page, "passage")
    context.close()


def test_a_question_no_page_answers_for_sure_shows_the_candidates_and_why(
    browser: Any,  # noqa: F811
    site: Site,
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    page.goto(f"{site.url}/ask")
    page.get_by_label("Your question").fill(
        "Prometheus cannot scrape some endpoints since this morning, what should I look at?"
    )
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#answer h2")).to_have_text("Not sure: these may help")
    expect(page.locator("#citations")).to_have_count(0)
    first = page.locator("#related li").first
    expect(first).to_contain_text("TargetDown")
    expect(first.locator(".why-line")).to_contain_text("shares the words")
    site.shot(page, "ask-tentative")
    if UPDATE_SCREENSHOTS:
        IMAGES.mkdir(exist_ok=True)
        shutil.copy(
            site.shots / f"{site.count:02d}-ask-tentative.png", IMAGES / "ask-tentative.png"
        )
    context.close()


def test_an_answer_from_an_html_page_shows_its_table_link_words_and_signature(
    browser: Any,  # noqa: F811
    html_site: Site,
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(html_site, page, "alex")
    page.goto(f"{html_site.url}/ask")
    page.get_by_label("Your question").fill(
        "How do I read ledger rows as dictionaries, and which date format codes does it take?"
    )
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#answer h2")).to_have_text("Answer")
    answer = page.locator("#answer-text")
    table = answer.locator("table")
    expect(table).to_have_count(1)
    expect(table.locator("th")).to_have_text(["Code", "Meaning"])
    expect(table.locator("tbody tr").nth(2).locator("td")).to_have_text(
        ["%d", "Day of the month | 01 to 31."]
    )
    text = answer.inner_text()
    assert "the date formats page has them all" in text and "formats.html" not in text
    web_link = answer.get_by_role("link", name="RFC 4180")
    expect(web_link).to_have_attribute("href", "https://www.rfc-editor.org/rfc/rfc4180")
    assert "rfc-editor.org" not in text  # the address is the link's, not shown as text
    signature = answer.locator("code", has_text="RowReader")
    expect(signature).to_have_text(
        "class ledger.RowReader(f, fieldnames=None, dialect='plain', *args, **kwds)"
    )
    assert "***" not in text and "¹" in text and "[1](" not in text
    html_site.shot(page, "ask-html-answer")
    if UPDATE_SCREENSHOTS:
        IMAGES.mkdir(exist_ok=True)
        shutil.copy(
            html_site.shots / f"{html_site.count:02d}-ask-html-answer.png",
            IMAGES / "ask-html-answer.png",
        )

    page.locator("#answer-text a.cite", has_text="[1]").first.click()
    page.wait_for_url("**/passages/*")
    cited = page.locator("li.chunk.cited")
    expect(cited.locator("table.doc-table th")).to_have_text(["Code", "Meaning"])
    expect(cited.locator("table.doc-table td").first).to_have_text("%Y")
    passage_text = page.locator("#chunks").inner_text()
    assert "formats.html" not in passage_text and "***" not in passage_text
    assert "*args, **kwds" in passage_text
    html_site.shot(page, "html-passage")
    context.close()
