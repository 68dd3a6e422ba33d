"""``resolveflow demo``: the whole product on this machine, with no keys and no services.

It starts an embedded Postgres in a temporary folder and a **sandbox forge**: ResolveFlow's fake
GitHub on 127.0.0.1 (clearly labelled, never GitHub), seeded with a few sample issues written for
the demo. It indexes them, receives a signed webhook for a new issue whose CI failed, lets the
worker triage it, and serves the inbox. Sign in on the sandbox as ``maintainer``, approve, and the
worker posts the comment to the sandbox; the run page follows it until it is sent.

``--once`` does the approval itself through the JSON API, waits for the post, prints a summary and
exits (CI and the tests use it). Without it, the demo serves until Ctrl-C or SIGTERM. However it
ends, the embedded Postgres is stopped before its temporary folder is removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from rich.text import Text

from resolveflow.adapters.github.protocol import RepoName
from resolveflow.cli.output import console, emit, err_console, exact, fields
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
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.service import admin
from resolveflow.store.embedded import stop_embedded_database
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.web.server import ServerThread
from resolveflow.wiring import App, open_app
from resolveflow.worker import WorkerThread, prepare_queue

REPO = "sandbox/widgets"
LABELS = ["bug", "ci-failure", "needs-triage", "question", "documentation"]
SERVICE_TOKEN = "sandbox-service-token"  # noqa: S105 - the sandbox forge's own, not a secret
NEW_ISSUE = 6
WAIT_SECONDS = 90.0

# Sample issues written for the demo (closed ones carry how they were resolved).
SAMPLES: list[dict[str, Any]] = [
    {
        "title": "Widget parser crashes on empty YAML files",
        "body": "Loading an empty `widgets.yaml` raises `TypeError: 'NoneType' object is not "
        "iterable` in `parse_widgets`.\n\nFixed by treating an empty document as no widgets.",
        "labels": ["bug"],
        "state": "closed",
    },
    {
        "title": "CI fails on Python 3.12: distutils import",
        "body": "The `tests (3.12)` job fails with `ModuleNotFoundError: No module named "
        "'distutils'`.\n\nResolved by moving the version check to `packaging`.",
        "labels": ["ci-failure"],
        "state": "closed",
    },
    {
        "title": "Docs: the install page still mentions the old CLI name",
        "body": "`widgetctl` was renamed to `widgets` in 2.0, but the install page uses the old "
        "name.",
        "labels": ["documentation"],
        "state": "open",
    },
    {
        "title": "How do I load widgets from a URL?",
        "body": "Is there a way to point the loader at an HTTP URL instead of a local file?",
        "labels": ["question"],
        "state": "closed",
    },
    {
        "title": "Flaky test: test_render_timeout on macOS runners",
        "body": "`test_render_timeout` fails about one run in ten on macOS with a 2 s timeout.\n\n"
        "Resolved by raising the timeout on CI runners only.",
        "labels": ["ci-failure", "bug"],
        "state": "closed",
    },
]


def _say(as_json: bool, title: str, detail: str = "") -> None:
    """Progress goes to stderr in both modes (stdout stays one JSON document with --json)."""
    err_console.print(Text("▸ " + title, style="bold cyan"))
    if detail:
        err_console.print("  " + detail, soft_wrap=True)


def seed_forge(fake: FakeGitHubWithOAuth) -> int:
    """The sample issues, and a failed CI run that the new issue will link to; returns its run."""
    fake.add_repo(REPO, LABELS)
    for number, sample in enumerate(SAMPLES, start=1):
        fake.add_issue(
            REPO,
            number,
            sample["title"],
            sample["body"],
            labels=sample["labels"],
            state=sample["state"],
            user="octocat",
        )
    sha = hashlib.sha1(b"sandbox main", usedforsecurity=False).hexdigest()
    fake.add_check_run(REPO, sha, "tests (3.12)", conclusion="failure", title="2 tests failed")
    run: int = fake.add_workflow_run(REPO, "CI", head_sha=sha, conclusion="failure")
    fake.register_token(SERVICE_TOKEN, "resolveflow-sandbox-bot")
    fake.add_oauth_user("maintainer")
    return run


def _settings(home: Path, fake: FakeGitHubWithOAuth, secret: str) -> Settings:
    return Settings(
        database=DatabaseSettings(home=home),
        github=GitHubSettings(
            api_url=fake.url,
            web_url=fake.url,
            token=SERVICE_TOKEN,
            oauth_client_id=fake.client_id,
            oauth_client_secret=fake.client_secret,
        ),
        web=WebSettings(
            token_encryption_key=TokenCipher.generate_key(),
            users={"maintainer": "demo:approver"},
        ),
        webhooks=WebhookSettings(secret=secret),
        executor=ExecutorSettings(reconcile_interval_seconds=30),
    )


def _deliver_issue(url: str, secret: str, number: int) -> None:
    """What GitHub sends when an issue is opened, signed with the webhook secret."""
    body = json.dumps(
        {
            "action": "opened",
            # updated_at tells this event from a replay of it (docs/web.md, webhooks)
            "issue": {
                "number": number,
                "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            "repository": {"full_name": REPO},
            "sender": {"login": "octocat"},
        }
    ).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    response = httpx.post(
        f"{url}/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": secrets.token_hex(16),
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
        },
        timeout=10,
    )
    response.raise_for_status()


def _poll(what: str, check: Any) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.25)
    raise ResolveFlowError(f"the demo gave up waiting for {what}")


def _triaged(api: httpx.Client) -> dict[str, Any] | None:
    """The demo's run, once the worker has taken it past evidence and classification."""
    runs: list[dict[str, Any]] = api.get("/api/v1/runs").json()
    return next((run for run in runs if run["status"] != "running"), None)


def _index(app: App, tenant: str) -> int:
    tenant_id = admin.find_tenant(app.db, tenant).id
    crawler = GitHubCrawler(app.indexer(), app.github)
    stats = crawler.crawl(tenant_id, RepoName.parse(REPO))
    return stats.items


def demo(once: bool, port: int, keep: bool, as_json: bool) -> None:
    """The inbox on a sandbox forge: webhook -> triage -> approve in the browser -> posted once."""
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
    emit(summary, as_json, lambda: console.print(Text("demo complete", style="bold green")))


def _demo(home: Path, *, once: bool, port: int, as_json: bool) -> dict[str, Any]:
    with FakeGitHubWithOAuth(default_login="resolveflow-sandbox-bot") as fake:
        ci_run = seed_forge(fake)
        secret = secrets.token_hex(16)
        settings = _settings(home, fake, secret)
        _say(as_json, "Starting the embedded Postgres", str(home))
        with open_app(settings) as app:
            return _run(app, fake, secret, ci_run, once=once, port=port, as_json=as_json)


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
    ci_run: int,
    *,
    once: bool,
    port: int,
    as_json: bool,
) -> dict[str, Any]:
    prepare_queue(app)
    admin.add_tenant(app.db, "demo")
    admin.add_repository(app.db, "demo", REPO)
    maintainer = admin.add_principal(app.db, "demo", "maintainer", [Role.APPROVER])
    _say(as_json, f"Sandbox forge (NOT GitHub) at {fake.url}", f"{len(SAMPLES)} sample issues")
    indexed = _index(app, "demo")
    _say(as_json, f"Indexed {indexed} issues for search")
    sandbox = f"the forge at {fake.url} is ResolveFlow's local fake GitHub, not GitHub"
    with ServerThread(app, port=port, sandbox=sandbox) as server, WorkerThread(app):
        link = f"{fake.url}/{REPO}/actions/runs/{ci_run}"
        fake.add_issue(
            REPO,
            NEW_ISSUE,
            "CI is red on main since this morning",
            f"The CI run {link} fails on `tests (3.12)`; nothing changed on our side.",
            user="octocat",
        )
        _deliver_issue(server.url, secret, NEW_ISSUE)
        _say(as_json, f"Issue #{NEW_ISSUE} opened; its signed webhook was delivered")
        api = httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {maintainer.token}"},
            timeout=30,
        )
        with api:
            run = _poll("the triage run", lambda: _triaged(api))
            view = api.get(f"/api/v1/runs/{run['run_id']}").json()
            if view["status"] != "awaiting_approval" or not view["digest"]:
                raise ResolveFlowError(f"the demo's run ended {view['status']}: {view['detail']}")
            if not as_json:
                fields(
                    [
                        ("classification", view["classification"]),
                        ("rule", view["rule"]),
                        ("digest", view["digest"]),
                    ]
                )
                if view["proposal"] and view["proposal"]["action"]["comment"]:
                    err_console.print(exact(view["proposal"]["action"]["comment"], "proposed"))
            page = f"{server.url}/runs/{run['run_id']}"
            if not once:
                return _serve_until_stopped(server.url, page, as_json)
            return _approve_and_wait(api, fake, view, page, indexed)


def _serve_until_stopped(url: str, page: str, as_json: bool) -> dict[str, Any]:
    console.print(Text(f"\nInbox: {url}/inbox", style="bold green"))
    console.print(
        f"Sign in with GitHub -> on the SANDBOX page, 'Authorize as maintainer' -> {page}"
    )
    console.print("Approve there; the worker posts to the sandbox. Ctrl-C stops the demo.")
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
    return {"url": url, "run_page": page}


def _approve_and_wait(
    api: httpx.Client, fake: FakeGitHubWithOAuth, view: dict[str, Any], page: str, indexed: int
) -> dict[str, Any]:
    run_id = view["run_id"]
    decided = api.post(f"/api/v1/runs/{run_id}/approve", json={"digest": view["digest"]})
    decided.raise_for_status()

    def settled() -> dict[str, Any] | None:
        current = api.get(f"/api/v1/runs/{run_id}").json()
        execution = (current.get("proposal") or {}).get("execution") or {}
        return (
            current if execution.get("state") in ("sent", "partial", "failed", "unknown") else None
        )

    final = _poll("the post", settled)
    execution = final["proposal"]["execution"]
    similar = api.get("/api/v1/search", params={"q": "CI fails tests 3.12", "k": 3}).json()
    return {
        "url": page.split("/runs/", maxsplit=1)[0],
        "run_page": page,
        "run_id": run_id,
        "classification": final["classification"],
        "digest": view["digest"],
        "run_status": final["status"],
        "execution_id": execution["id"],
        "execution_state": execution["state"],
        "comments_on_issue": len(fake.comments(REPO, NEW_ISSUE)),
        "labels_on_issue": fake.issue_labels(REPO, NEW_ISSUE),
        "indexed_issues": indexed,
        "similar": [hit["title"] for hit in similar],
    }
