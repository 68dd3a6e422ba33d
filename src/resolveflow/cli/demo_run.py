"""``resolveflow demo``: the whole product on this machine, with no keys and no services.

It starts an embedded Postgres in a temporary folder and a **sandbox forge**: ResolveFlow's fake
GitHub on 127.0.0.1 (clearly labelled, never GitHub), seeded with the sample repository of
``resolveflow.sandbox.samples``. It indexes the repository, receives a signed webhook for each
open issue, and the worker triages each into a run of its own, one per branch: a failing CI run
(deterministic), a duplicate of a closed issue (investigation by retrieval alone, no model) and a
vague report (human review). It serves the inbox; a few seconds after its URL is printed a new
issue arrives by webhook and becomes a run too. Sign in on the sandbox as ``maintainer``,
approve, and the worker posts the comment to the sandbox; the run page follows it until it is
sent.

``--once`` opens the new issue at once, approves the failing-CI run itself through the JSON API,
waits for the post, prints what was approved, by whom and where it was posted, and exits (CI and
the tests use it). Without it, the demo serves until Ctrl-C or SIGTERM. However it ends, the
embedded Postgres is stopped before its temporary folder is removed.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx
from rich.text import Text

from resolveflow.accounts import admin
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.bootstrap.app import App, open_app
from resolveflow.cli import demo_steps as steps
from resolveflow.cli import plain
from resolveflow.cli.output import console, emit, err_console
from resolveflow.config import (
    DatabaseSettings,
    ExecutorSettings,
    GitHubSettings,
    Settings,
    WebhookSettings,
    WebSettings,
)
from resolveflow.domain.records import Role
from resolveflow.errors import ResolveFlowError
from resolveflow.retrieval.github_crawl import GitHubCrawler
from resolveflow.sandbox import samples
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.store.embedded import stop_embedded_database
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.web.server import ServerThread
from resolveflow.worker import WorkerThread, prepare_queue

REPO = samples.REPO
LATE_SECONDS = 5.0  # after the inbox URL is printed, the new issue arrives (serve mode)
AT_START = "webhook, at start"
LATER = "webhook, after the inbox was up"


def _say(title: str, detail: str = "") -> None:
    """Progress goes to stderr in both modes (stdout stays one JSON document with --json)."""
    err_console.print(Text("▸ " + title, style="bold cyan"))
    if detail:
        err_console.print("  " + detail, soft_wrap=True)


def _settings(home: Path, fake: FakeGitHubWithOAuth, secret: str) -> Settings:
    return Settings(
        database=DatabaseSettings(home=home),
        github=GitHubSettings(
            api_url=fake.url,
            web_url=fake.url,
            token=samples.SERVICE_TOKEN,
            oauth_client_id=fake.client_id,
            oauth_client_secret=fake.client_secret,
        ),
        web=WebSettings(
            token_encryption_key=TokenCipher.generate_key(),
            users={samples.SANDBOX_USER: "demo:approver"},
        ),
        webhooks=WebhookSettings(secret=secret),
        executor=ExecutorSettings(reconcile_interval_seconds=30),
    )


def _index(app: App, tenant: str) -> int:
    tenant_id = admin.find_tenant(app.db, tenant).id
    crawler = GitHubCrawler(app.indexer(), app.github)
    stats = crawler.crawl(tenant_id, RepoName.parse(REPO))
    return stats.items


def demo(once: bool, port: int, keep: bool, as_json: bool) -> None:
    """The inbox on a sandbox forge: webhooks -> triage -> approve in the browser -> posted once."""
    home = Path(tempfile.mkdtemp(prefix="resolveflow-demo-"))
    # SIGTERM stops the demo as Ctrl-C does (KeyboardInterrupt), so that the shutdown below runs:
    # by default it ends the process on the spot and leaves the embedded Postgres running.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        summary = _demo(home, once=once, port=port, as_json=as_json)
    finally:
        try:
            _shut_down(home, keep=keep)
        finally:
            signal.signal(signal.SIGTERM, previous)
    summary["home"] = str(home) if keep else None
    if once:
        emit(summary, as_json, lambda: steps.print_outcome(summary))
    else:
        emit(summary, as_json, lambda: console.print(Text("demo stopped", style="bold green")))


def _demo(home: Path, *, once: bool, port: int, as_json: bool) -> dict[str, Any]:
    with FakeGitHubWithOAuth(default_login=samples.SERVICE_LOGIN) as fake:
        ci = samples.seed(fake)
        secret = secrets.token_hex(16)
        settings = _settings(home, fake, secret)
        _say("Starting the embedded Postgres", str(home))
        with open_app(settings) as app:
            return _run(app, fake, secret, ci, once=once, port=port, as_json=as_json)


def _shut_down(home: Path, *, keep: bool) -> None:
    """Stop the embedded Postgres, then remove its folder: in this order, or the server runs on
    over deleted files. A second Ctrl-C or SIGTERM meanwhile is ignored (it takes a second or
    two), so that neither step is cut short; if the server does not stop, the folder is kept."""
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stop_embedded_database(home)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if not keep:
        shutil.rmtree(home, ignore_errors=True)


def _run(
    app: App,
    fake: FakeGitHubWithOAuth,
    secret: str,
    ci: samples.FailedCi,
    *,
    once: bool,
    port: int,
    as_json: bool,
) -> dict[str, Any]:
    prepare_queue(app)
    admin.add_tenant(app.db, "demo")
    admin.add_repository(app.db, "demo", REPO)
    maintainer = admin.add_principal(app.db, "demo", samples.SANDBOX_USER, [Role.APPROVER])
    _say(f"Sandbox forge (NOT GitHub) at {fake.url}", f"{len(samples.SEEDED)} sample issues")
    indexed = _index(app, "demo")
    _say(f"Indexed {indexed} issues for search")
    sandbox = f"the forge at {fake.url} is ResolveFlow's local fake GitHub, not GitHub"
    with ServerThread(app, port=port, sandbox=sandbox) as server, WorkerThread(app):
        api = httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {maintainer.token}"},
            timeout=30,
        )
        with api:
            opened = [sample.number for sample in samples.OPEN]
            for number in opened:
                steps.deliver_issue(server.url, secret, REPO, number)
            _say(f"Delivered the signed webhooks of issues {', '.join(map(str, opened))}")
            if once:
                _open_late_issue(fake, server.url, secret, ci)
                opened.append(samples.LATE.number)
            runs = steps.triaged(api, REPO, opened)
            for run in runs:
                run["arrived"] = LATER if run["issue"] == samples.LATE.number else AT_START
            if not once:
                return _serve(api, fake, server.url, secret, ci, runs, as_json)
            return _approve(api, fake, runs, indexed, as_json)


def _open_late_issue(
    fake: FakeGitHubWithOAuth, url: str, secret: str, ci: samples.FailedCi
) -> None:
    samples.add(fake, samples.LATE, ci)
    steps.deliver_issue(url, secret, REPO, samples.LATE.number)
    _say(f"Issue #{samples.LATE.number} opened on the forge; its signed webhook was delivered")


def _serve(
    api: httpx.Client,
    fake: FakeGitHubWithOAuth,
    url: str,
    secret: str,
    ci: samples.FailedCi,
    runs: list[dict[str, Any]],
    as_json: bool,
) -> dict[str, Any]:
    """Serve the inbox until Ctrl-C or SIGTERM; a new issue arrives a few seconds in."""
    say = _say if as_json else (lambda line: console.print(Text(line), soft_wrap=True))
    if not as_json:
        steps.print_runs(runs)
        console.print()
    say(f"Inbox: {url}/inbox")
    say("Sign in with GitHub -> on the SANDBOX page, 'Authorize as maintainer'; approve there,")
    say("and the worker posts to the sandbox. Ctrl-C stops the demo.")
    say(f"In {LATE_SECONDS:.0f} s a new issue arrives by webhook: watch the inbox.")
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait(LATE_SECONDS)
        _open_late_issue(fake, url, secret, ci)
        (late,) = steps.triaged(api, REPO, [samples.LATE.number])
        late["arrived"] = LATER
        runs.append(late)
        if not as_json:
            console.print()
        say(f"A new issue arrived by webhook and was triaged: {late['run_page']}")
        if not as_json:
            console.print(steps.describe_run(late), soft_wrap=True)
        threading.Event().wait()
    return {"url": url, "inbox": f"{url}/inbox", "repository": REPO, "runs": runs}


def _approve(
    api: httpx.Client,
    fake: FakeGitHubWithOAuth,
    runs: list[dict[str, Any]],
    indexed: int,
    as_json: bool,
) -> dict[str, Any]:
    """Approve the failing-CI run as the maintainer and wait for the post (``--once``)."""
    chosen = next(run for run in runs if run["issue"] == samples.FAILING_CI.number)
    if chosen["status"] != "awaiting_approval" or not chosen["digest"]:
        ended = plain.words(chosen["status"], "RunStatus")
        raise ResolveFlowError(f"the demo's run of #{chosen['issue']} ended {ended}")
    if not as_json:
        steps.print_runs(runs)
        heading = f"Proposed for {REPO}#{chosen['issue']}, exactly as it will be posted:"
        steps.print_comment(chosen, heading)
    approved = steps.approve_and_wait(api, chosen)
    posted = fake.comments(REPO, chosen["issue"])
    approved.update(
        run_page=chosen["run_page"],
        posted_as=posted[-1]["user"]["login"] if posted else None,
        comments_on_issue=len(posted),
        labels_on_issue=fake.issue_labels(REPO, chosen["issue"]),
    )
    return {
        "url": str(api.base_url).rstrip("/"),
        "repository": REPO,
        "runs": [
            {**steps.run_summary(api, run["run_id"]), "arrived": run["arrived"]} for run in runs
        ],
        "approved": approved,
        "indexed_issues": indexed,
    }
