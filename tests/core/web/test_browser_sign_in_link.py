"""Issue 29 in a real browser (Playwright driving Debian's Chromium): ``resolveflow serve`` with
NO GitHub OAuth app, on the sample repository of the sandbox forge. The sign-in page says how to
get a link; ``resolveflow sign-in-link`` prints one; the browser signs in with it, reads every
run, approves the failing-CI proposal (posted as the service account, as the page said it would
be) and reads every page it reaches. On each page: no machine word (an enum's value, or any
``snake_case`` word outside code and pre elements) and no HTML entity shown as text. The link does
not work a second time.

With ``RESOLVEFLOW_UPDATE_SCREENSHOTS=1`` docs/images/sign-in-link.png is written again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from test_browser_inbox import TIMEOUT_MS, browser  # noqa: F401

from fixtures_cli import Cli
from fixtures_web import settings_from_variables
from resolveflow.accounts import admin
from resolveflow.accounts.sign_in_links import LinkEvent
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.bootstrap.app import open_app
from resolveflow.cli.demo_steps import deliver_issue, triaged
from resolveflow.domain.records import Role
from resolveflow.retrieval.github_crawl import GitHubCrawler
from resolveflow.sandbox import samples
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.forge.server import Hold
from resolveflow.web.words import TABLES

pytest_plugins = ["fixtures_web"]

IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
UPDATE_SCREENSHOTS = os.environ.get("RESOLVEFLOW_UPDATE_SCREENSHOTS") == "1"  # read at import
SECRET = "sign-in-link-webhook-secret"
TENANT = "demo"
# Every machine word an enum has (values with "_" or "."), and any snake_case word at all.
ENUM_WORDS = sorted(
    {
        member.value
        for enum in [*TABLES, LinkEvent]
        for member in enum  # type: ignore[attr-defined]
        if "_" in member.value or "." in member.value
    },
    key=len,
    reverse=True,
)
SNAKE = re.compile(r"\b[a-z]+_[a-z_]+\b")
ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|amp|lt|gt|quot|apos);", re.I)
# The page's text as a person reads it, without code and pre elements (a digest, a command) and
# without the editor of a comment's Markdown (a textarea holds the source, as the pre does).
_TEXT = """() => {
  const copy = document.body.cloneNode(true);
  copy.querySelectorAll("code, pre, script, style, textarea").forEach(node => node.remove());
  return copy.textContent.replace(/\\s+/g, " ");
}"""


@dataclass
class Served:
    url: str
    env: dict[str, str]
    fake: FakeGitHubWithOAuth
    api: httpx.Client
    shots: Path
    count: int = 0

    def shot(self, page: Any, name: str) -> Path:
        self.count += 1
        path = self.shots / f"{self.count:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _prepare(values: dict[str, Any]) -> str:
    """The tenant, its repository and its one person (no token of their own), the repository
    indexed for the investigation; the person's API token, for the test's own polling."""
    with open_app(settings_from_variables(values), auto_migrate=False) as app:
        admin.add_tenant(app.db, TENANT)
        admin.add_repository(app.db, TENANT, samples.REPO)
        person = admin.add_principal(app.db, TENANT, samples.SANDBOX_USER, [Role.APPROVER])
        tenant_id = admin.find_tenant(app.db, TENANT).id
        GitHubCrawler(app.indexer(), app.github).crawl(tenant_id, RepoName.parse(samples.REPO))
        return person.token


def _wait_healthy(server: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 90
    while True:
        assert server.poll() is None, f"serve exited: {log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, "serve did not start"
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)


@pytest.fixture
def served(queue_ready: str, tmp_path: Path) -> Iterator[Served]:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with FakeGitHubWithOAuth(default_login=samples.SERVICE_LOGIN) as fake:
        samples.seed(fake)
        port = _free_port()
        # No RESOLVEFLOW_GITHUB_OAUTH_*: no GitHub sign-in. The link's address comes from
        # RESOLVEFLOW_WEB_PORT (and the default host), as `serve` listens there.
        values: dict[str, Any] = {
            "database_url": queue_ready,
            "github_api_url": fake.url,
            "github_web_url": fake.url,
            "github_token": samples.SERVICE_TOKEN,
            "github_timeout_seconds": 5.0,
            "github_webhook_secret": SECRET,
            "embedder": "fake",
            "web_port": port,
        }
        token = _prepare(values)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
        env.update({f"RESOLVEFLOW_{name.upper()}": str(value) for name, value in values.items()})
        log = tmp_path / "serve.log"
        with log.open("w") as out:
            server = subprocess.Popen(
                [sys.executable, "-m", "resolveflow", "serve", "--with-worker"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(server, url, log)
            auth = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=url, headers=auth, timeout=30) as api:
                yield Served(url, env, fake, api, shots)
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=30)


def _machine_words(page: Any) -> list[str]:
    """The machine words and the entities shown as text on the page (none, if all is well)."""
    text = page.evaluate(_TEXT)
    found = [word for word in ENUM_WORDS if word in text] + SNAKE.findall(text)
    return found + ENTITY.findall(text)


def _context(page: Any, word: str) -> str:
    text: str = page.evaluate(_TEXT)
    at = text.find(word)
    return text[max(0, at - 80) : at + 80]


def _link(served: Served) -> str:
    issued = Cli(served.env).json("sign-in-link", "--subject", samples.SANDBOX_USER)
    assert issued["subject"] == samples.SANDBOX_USER and issued["tenant"] == TENANT
    assert issued["url"].startswith(f"{served.url}/auth/link?token=rfl_")
    url: str = issued["url"]
    return url


def test_sign_in_with_a_link_approve_and_read_every_page_in_words(
    browser: Any,  # noqa: F811
    served: Served,
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)

    problems: dict[str, list[str]] = {}

    def visit(name: str, on: Any = page) -> None:
        on.wait_for_load_state("load")
        served.shot(on, name)
        found = _machine_words(on)
        if found:
            problems[on.url] = [f"{word}: ...{_context(on, word)}..." for word in found]

    # Not signed in, no GitHub app: the sign-in page says how to get a link.
    page.goto(f"{served.url}/inbox")
    page.wait_for_url("**/login")
    expect(page.locator("#no-oauth")).to_be_visible()
    expect(page.locator("#link-command")).to_have_text("resolveflow sign-in-link --subject LOGIN")
    visit("login")

    link = _link(served)
    page.goto(link)
    expect(page.locator("#link-subject")).to_have_text(samples.SANDBOX_USER)
    expect(page.locator("#link-posting")).to_contain_text("needs sign-in with GitHub")
    visit("sign-in-link")
    if UPDATE_SCREENSHOTS:
        IMAGES.mkdir(exist_ok=True)
        shutil.copy(
            sorted(served.shots.glob("*-sign-in-link.png"))[-1], IMAGES / "sign-in-link.png"
        )
    page.click("#link-sign-in")
    page.wait_for_url("**/inbox")
    assert page.inner_text("#who") == samples.SANDBOX_USER

    numbers = [sample.number for sample in samples.OPEN]
    for number in numbers:
        deliver_issue(served.url, SECRET, samples.REPO, number)
    runs = {run["issue"]: run for run in triaged(served.api, samples.REPO, numbers)}
    page.goto(f"{served.url}/inbox")
    visit("inbox")
    for number in numbers:
        page.goto(runs[number]["run_page"])
        page.wait_for_selector("#timeline")
        visit(f"run-{number}")
    investigated = runs[samples.DUPLICATE.number]
    assert investigated["classification"] == "ai_investigation", investigated
    page.goto(investigated["run_page"])
    # Structured details are tables with plain headings; actors are words.
    assert page.locator("#timeline table.detail-table th").count() > 0
    page.locator("#timeline").screenshot(path=str(served.shots / "investigated-timeline.png"))
    actors = set(page.locator("#timeline td.actor").all_inner_texts())
    assert {"a GitHub webhook", "the triage workflow"} <= actors, actors
    assert not any(":" in actor for actor in actors), actors

    # The failing-CI run: who posts, before approving; then approve while the forge holds the
    # comment, and the page says what is true (approved, being carried out) at once.
    page.goto(runs[samples.FAILING_CI.number]["run_page"])
    expect(page.locator("#who-posts")).to_contain_text(f"@{samples.SERVICE_LOGIN}")
    expect(page.locator("#poster-credential")).to_have_text("(the service account)")
    expect(page.locator("#not-as-you")).to_contain_text("needs sign-in with GitHub")
    held = Hold(threading.Event())
    served.fake.inject(held, method="POST", path="/comments")
    page.click("#approve")
    page.wait_for_selector("#notice")
    expect(page.locator("#run-state")).to_have_text("approved, being carried out")
    visit("run-approved")
    assert held.arrived.wait(TIMEOUT_MS / 1000)
    held.release.set()
    expect(page.locator("#outcome-text")).to_have_text(
        re.compile(rf"Posted as @{samples.SERVICE_LOGIN} at \d{{4}}-\d\d-\d\d \d\d:\d\d UTC"),
        timeout=TIMEOUT_MS,
    )
    expect(page.locator("#run-state")).to_have_text("done", timeout=TIMEOUT_MS)
    visit("run-posted")
    run_url = page.url

    page.click("#execution-link")
    page.wait_for_url(re.compile(r"/executions/[0-9a-f-]+$"))
    page.wait_for_selector("#outcome")
    visit("execution")
    page.click("#proposal-link")
    page.wait_for_url(re.compile(r"/proposals/[0-9a-f-]+$"))
    page.wait_for_selector("#digest")
    visit("proposal")
    for path in ("/executions", "/audit", "/ask", "/mail"):
        page.goto(served.url + path)
        visit(path.strip("/"))
    audit = page.context.request.get(f"{served.url}/audit").text()
    assert "sign-in link issued" in audit and "sign-in link used" in audit

    # On the forge, the comment reads as GitHub shows it: rendered, its marker hidden.
    page.goto(run_url)
    page.click("#outcome-link")
    page.wait_for_selector("#sandbox-forge")
    comment = page.locator(".comment .comment-body").last
    expect(comment.locator("li").first).to_be_visible()
    assert "resolveflow:action" not in page.content()
    served.shot(page, "forge-comment")

    # The link again, in another browser: a page that says so, and nobody signed in.
    other = browser.new_context()
    again = other.new_page()
    again.goto(link)
    expect(again.locator("#link-refused")).to_contain_text("used already")
    assert again.locator("#link-sign-in").count() == 0
    visit("link-used", again)
    other.close()
    context.close()
    assert not problems, json.dumps(problems, indent=1)
