"""A reply in a real browser (Playwright driving Debian's Chromium) against the real server, worker
and sandbox SMTP server: rita pastes a request on /mail and gets a draft from the mailbox's past
reply, edits it (an invented date is refused, then an honest text passes), and alex approves the
exact message on its proposal page; the server receives it once.

Screenshots go to the test's output folder (``tmp_path/screenshots``); the ones in
docs/screenshots/ were taken by this test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from test_browser_inbox import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, Site, _sign_in
from test_web_mail import MAILBOX, REQUEST, mail_policy, setup_mail

from conftest import make_world
from fixtures_web import web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.web.server import ServerThread
from resolveflow.worker import WorkerThread

pytest_plugins = ["fixtures_web"]

HONEST = (
    "Hello Kim,\n\nReset links are valid for one hour. Ask for a new one on the sign-in page "
    "and use it right away.\n\nBest regards,\nAcme Support"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class MailBrowserSite(Site):
    smtp: FakeSmtpServer


@pytest.fixture
def site(
    queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path
) -> Iterator[MailBrowserSite]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with FakeSmtpServer() as smtp:
        policy = mail_policy(tmp_path, smtp.port)
        settings = web_settings(queue_ready, oauth_github.url, policy_file=policy)
        with open_app(settings, auto_migrate=False) as app:
            setup_mail(app, make_world(app.db))
            with ServerThread(app, sandbox="test forge") as server, WorkerThread(app):
                made = MailBrowserSite(app, server.url, oauth_github, shots)
                made.smtp = smtp
                yield made


def test_draft_edit_approve_and_send_a_reply_in_the_browser(
    browser: Any, site: MailBrowserSite
) -> None:
    rita = browser.new_context(viewport={"width": 1280, "height": 900})
    page = rita.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "rita")
    page.click("nav >> text=Mail")
    page.wait_for_selector("#draft-form")
    page.select_option("#mailbox", MAILBOX)
    page.fill("#source", REQUEST)
    site.shot(page, "mail-new-draft")
    page.click("#draft")
    page.wait_for_selector("#latest")
    assert page.inner_text("#to") == "kim@customer.example"
    assert page.inner_text("#bcc") == "–"
    assert "Re: Cannot reset my password" in page.inner_text("#examples")
    site.shot(page, "mail-draft")

    if page.locator("#edit[open]").count() == 0:  # a passing draft keeps its edit form closed
        page.click("#edit summary")
    page.fill("#edit-body", HONEST.replace("right away", "before 12 December 2026"))
    page.click("#save-edit")
    page.wait_for_selector("#failed-checks")
    assert page.inner_text("#version") == "2"
    assert "12 December 2026" in page.inner_text("#failed-checks")
    assert page.locator("#proposal-link").count() == 0  # nothing to approve
    site.shot(page, "mail-draft-failed-check")

    page.fill("#edit-body", HONEST)
    page.click("#save-edit")
    page.wait_for_selector("#proposed")
    assert page.inner_text("#version") == "3"
    proposal_url = page.get_attribute("#proposal-link", "href")
    assert proposal_url
    rita.close()

    alex = browser.new_context(viewport={"width": 1280, "height": 900})
    page = alex.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    _sign_in(site, page, "alex")
    row = f'tr[data-proposal="{proposal_url.rsplit("/", 1)[1]}"]'
    page.wait_for_selector(row)
    assert page.locator(f"{row} [data-kind='email.send']").count() == 1
    assert "Re: My password reset link expired" in page.inner_text(row)
    site.shot(page, "inbox-email")
    page.click(f"{row} a")
    page.wait_for_selector("#digest")
    assert page.inner_text("#mail-from") == MAILBOX
    assert page.inner_text("#mail-to") == "kim@customer.example"
    assert page.inner_text("#mail-body").startswith("Hello Kim,")
    assert page.locator("#gates .gate.fail").count() == 0
    assert "draft checks passed" in page.inner_text("#gates")
    site.shot(page, "email-proposal")
    assert page.inner_text("#poster-login") == MAILBOX
    assert site.smtp.messages == []  # nothing leaves before the approval

    page.click("#approve")
    page.wait_for_selector("#notice")
    expect(page.locator("#execution-state")).to_have_text("posted", timeout=TIMEOUT_MS)
    [sent] = site.smtp.messages
    expect(page.locator("#outcome-message-id")).to_have_text(sent.message_id)
    site.shot(page, "email-sent")
    assert sent.rcpt_tos == ("kim@customer.example",)
    assert b"Reset links are valid for one hour" in sent.raw
    alex.close()
