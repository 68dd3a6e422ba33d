"""Refine's Markdown as a proposal through the gate.

``refine REF --propose`` on a sandbox-forge issue makes one ``github.issue`` proposal whose comment
is the Markdown and sends nothing; approval and execution post it once. A text ticket, a document
without Markdown or with one over the comment limit, and a principal without the requester role
are refused with one line. A signed ``issues opened`` delivery for a repository with
``refine.on_new_issues`` gets exactly one refine proposal, however often it is redelivered and its
job runs; with the setting off, none; a refine that fails is logged and leaves triage alone.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

import resolveflow.cli as cli
from conftest import World, make_world
from fixtures_github import SERVICE_TOKEN
from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.bootstrap.app import App, open_app
from resolveflow.cli.terminal_text import for_terminal
from resolveflow.config import load_settings
from resolveflow.domain.records import Role
from resolveflow.errors import InvalidInput, NotAuthorized
from resolveflow.gate.domain.actions import MAX_COMMENT_CHARS, normalize_text
from resolveflow.refine.domain.document import STEP_ORDER, RefineDocument, Ticket, TicketSource
from resolveflow.refine.propose import REFINE_NOTE, propose_enrichment
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store import queue
from resolveflow.store.database import Database
from resolveflow.store.queue import setup_queue
from resolveflow.triage import runs as run_service
from resolveflow.triage import webhooks
from resolveflow.worker import run_once

REPO = "acme/widgets"
SECRET = "It's a Secret to Everybody"
TICKET = (
    "Export to CSV fails since widgets 2.3.1 with\n"
    "ValueError: could not convert string to float: 'n/a'\n"
    '  File "widgets/export/csv.py", line 88, in write_row\n'
)


def _documents() -> list[SourceDocument]:
    issue = dict(source="github:acme/widgets", kind="issue", state="closed", repository=REPO)
    at = datetime(2024, 3, 2, 10, tzinfo=UTC)
    return [
        SourceDocument(external_id="41", title="CSV export crashes on 'n/a' values",
                       body="ValueError: could not convert string to float: 'n/a' in "
                       "widgets/export/csv.py write_row when a cell holds n/a.",
                       labels=("bug",), created_at=at, **issue),
        SourceDocument(external_id="9", title="Dark mode colours on the settings page",
                       body="The toggle is unreadable in dark mode.", created_at=at, **issue),
        # Pages: one about this very error, one about something else.
        SourceDocument(source="docs", external_id="guide/csv.md", kind="doc",
                       title="CSV export errors", created_at=at,
                       body="ValueError: could not convert string to float in "
                       "widgets/export/csv.py: clean the 'n/a' cells first."),
        SourceDocument(source="docs", external_id="npm/install.md", kind="doc",
                       title="Installing the widgets with npm", created_at=at,
                       body="Run npm install widgets to add the package."),
    ]  # fmt: skip


def _policy(tmp_path: Path, on_new_issues: bool) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(
        f'[repositories."{REPO}".refine]\non_new_issues = {str(on_new_issues).lower()}\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture
def world(db: Database) -> World:
    made = make_world(db)
    Indexer(db, HashingEmbedder()).upsert(made.tenant.id, _documents())
    return made


@pytest.fixture
def forge(fake_github: FakeGitHubServer) -> FakeGitHubServer:
    fake_github.add_issue(REPO, 50, "CSV export fails since 2.3.1", TICKET,
                          created_at="2024-03-20T10:00:00Z")  # fmt: skip
    return fake_github


@pytest.fixture
def env(
    monkeypatch: pytest.MonkeyPatch, database_url: str, forge: FakeGitHubServer, tmp_path: Path
) -> pytest.MonkeyPatch:
    for name, value in {
        "DATABASE_URL": database_url,
        "GITHUB_API_URL": forge.url,
        "GITHUB_TOKEN": SERVICE_TOKEN,
        "GITHUB_TIMEOUT_SECONDS": "2",
        "GITHUB_WEBHOOK_SECRET": SECRET,
        "EMBEDDER": "fake",
        "HOME": str(tmp_path / "home"),
        "POLICY_FILE": str(_policy(tmp_path, on_new_issues=True)),
    }.items():
        monkeypatch.setenv(f"RESOLVEFLOW_{name}", value)
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)
    return monkeypatch


def _cli(
    capsys: pytest.CaptureFixture[str], env: pytest.MonkeyPatch, token: str, *args: str
) -> tuple[int, str, list[str]]:
    env.setenv("RESOLVEFLOW_TOKEN", token)
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line.strip()]


def _proposals(db: Database, tenant: str = "acme") -> list[dict[str, Any]]:
    tenant_id = admin.find_tenant(db, tenant).id
    with db.tenant(tenant_id) as conn:  # row-level security: one tenant's rows
        return conn.execute(
            "SELECT action, note, created_by FROM proposals ORDER BY created_at"
        ).fetchall()


# --- the command --------------------------------------------------------------------------------


def test_propose_waits_for_approval_then_the_gate_posts_the_markdown_once(
    world: World,
    db: Database,
    forge: FakeGitHubServer,
    env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, markdown, err = _cli(capsys, env, world.requester_token, "refine", f"{REPO}#50")
    assert code == 0, err
    assert _proposals(db) == []  # without --propose, nothing is proposed
    code, out, err = _cli(
        capsys, env, world.requester_token, "refine", f"{REPO}#50", "--propose", "--json"
    )
    assert code == 0, err
    view = json.loads(out)
    assert view["kind"] == "github.issue" and view["decision"] is None
    assert view["action"]["target"] == {"repository": REPO, "issue": 50}
    assert view["action"]["labels"] == []
    # The terminal was shown the comment as GitHub shows it; the proposal holds the Markdown.
    assert for_terminal(view["action"]["comment"]) == normalize_text(markdown)
    assert "write&#95;row" in view["action"]["comment"] and "write&#95;row" not in markdown
    comment = view["action"]["comment"]
    assert "CSV export crashes" in comment
    tasks = comment[comment.index("### Related tasks") : comment.index("### Related pages")]
    pages = comment[comment.index("### Related pages") :].split("\n### ", 1)[0]
    assert "CSV export crashes" in tasks and "guide/csv.md" not in tasks  # a page is no task
    assert "**high**" in pages and "`guide/csv.md`" in pages and "npm" not in comment
    [stored] = _proposals(db)
    assert stored["note"] == REFINE_NOTE
    assert forge.writes_received == 0  # it waits in the inbox: nothing sent

    code, out, err = _cli(capsys, env, world.requester_token, "refine", f"{REPO}#50", "--propose")
    assert code == 0, err
    second = out.split()[1]  # the same comment proposed again: a new proposal, the same digest
    assert second != view["id"]
    assert out == (  # the proposal printer, byte for byte (shared with `issues prepare`)
        f"proposal      {second}\n"
        f"digest        {view['digest']}\n"
        f"target        {view['summary']}\n"
        "state         waiting for approval\n"
        f"approve with  resolveflow approve {second} --digest {view['digest']}\n"
    )
    assert len(_proposals(db)) == 2 and forge.writes_received == 0

    code, _, err = _cli(capsys, env, world.approver_token, "approve", view["id"],
                        "--digest", view["digest"])  # fmt: skip
    assert code == 0, err
    for _ in range(2):  # a second round finds nothing more to send
        code, _, err = _cli(capsys, env, world.approver_token, "execute", "--once")
        assert code == 0, err
    [posted] = forge.comments(REPO, 50)
    assert posted["body"].startswith(view["action"]["comment"])
    assert forge.writes_received == 1


def test_a_text_ticket_is_refused_with_one_line(
    world: World,
    db: Database,
    env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env.setattr("sys.stdin", io.StringIO(TICKET))
    code, _, err = _cli(capsys, env, world.requester_token, "refine", "-", "--propose")
    assert code == 2 and len(err) == 1, err
    assert "a refine comment can be proposed only on a GitHub issue; this ticket is text" in err[0]
    assert _proposals(db) == []


def _finished(markdown: str | None, source: TicketSource = TicketSource.GITHUB) -> RefineDocument:
    ticket = Ticket(source=source, ref=f"{REPO}#50", repository=REPO, number=50, title="t")
    if source is not TicketSource.GITHUB:
        ticket = Ticket(source=source, title="t")
    return RefineDocument(ticket=ticket, done=list(STEP_ORDER), markdown=markdown)


def test_what_cannot_be_proposed_is_refused_with_one_line(world: World, db: Database) -> None:
    rita = world.requester(db)
    with pytest.raises(InvalidInput, match="this ticket is text"):
        propose_enrichment(db, rita, _finished("# x", TicketSource.TEXT))
    with pytest.raises(InvalidInput, match="no Markdown"):
        propose_enrichment(db, rita, _finished(None))
    unfinished = _finished("# x").model_copy(update={"done": list(STEP_ORDER[:-1])})
    with pytest.raises(InvalidInput, match="no Markdown"):
        propose_enrichment(db, rita, unfinished)
    with pytest.raises(InvalidInput) as too_long:
        propose_enrichment(db, rita, _finished("line\n" * (MAX_COMMENT_CHARS // 5 + 10)))
    assert "\n" not in too_long.value.message and "longer than" in too_long.value.message
    approver_only = world.approver(db)
    assert not approver_only.has(Role.REQUESTER)
    with pytest.raises(NotAuthorized):
        propose_enrichment(db, approver_only, _finished("# x"))
    assert _proposals(db) == []
    view = propose_enrichment(db, rita, _finished("# Enrichment\n\nsome text"))
    assert view["action"]["comment"] == "# Enrichment\n\nsome text"


# --- the webhook --------------------------------------------------------------------------------


@pytest.fixture
def app(
    request: pytest.FixtureRequest, env: pytest.MonkeyPatch, database_url: str, world: World
) -> Iterator[App]:
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        setup_queue(conn)
    # Triage has its own tests; only the test that shows the two are independent runs it.
    triage = getattr(request, "param", False)
    env.setenv("RESOLVEFLOW_WEBHOOK_AUTO_TRIAGE", str(triage).lower())
    with open_app(load_settings(), auto_migrate=False) as opened:
        yield opened


def _deliver(app: App, delivery: str, number: int = 50) -> webhooks.Receipt:
    payload = {
        "action": "opened",
        "issue": {"number": number, "title": "t", "body": "b",
                  "updated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
        "repository": {"full_name": REPO},
        "sender": {"login": "octocat"},
    }  # fmt: skip
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    incoming = webhooks.Incoming(body, signature, delivery, "issues")
    return webhooks.accept(app.db, incoming, SECRET.encode(), retention_days=30)


def _refine_jobs(app: App) -> int:
    with app.db.unscoped() as conn:
        return len(queue.jobs_by_task(conn, queue.REFINE_NEW_ISSUE))


def test_a_new_issue_by_webhook_gets_one_refine_proposal(
    app: App, world: World, forge: FakeGitHubServer
) -> None:
    delivery = str(uuid.uuid4())
    assert _deliver(app, delivery).new
    assert not _deliver(app, delivery).new  # a redelivery records and queues nothing
    run_once(app)  # fans out, then refines
    # A retried fan-out queues the job again, and the job may run twice: one proposal still.
    webhooks.fan_out(
        app.db, delivery, auto_triage=False, refine_new=lambda repo: True, retention_days=30
    )
    with app.db.tenant(world.tenant.id) as conn:
        queue.defer(conn, queue.REFINE_NEW_ISSUE, delivery_id=delivery,
                    tenant_id=str(world.tenant.id))  # fmt: skip
    assert _refine_jobs(app) == 2
    run_once(app)
    [proposal] = _proposals(app.db)
    assert proposal["note"] == REFINE_NOTE
    assert proposal["action"]["target"] == {"issue": 50, "repository": REPO}
    assert "CSV export crashes" in proposal["action"]["comment"]
    assert forge.writes_received == 0
    service = webhooks.webhook_principal(app.db, world.tenant.id)
    assert proposal["created_by"] == service.id  # proposed by the tenant's webhook principal


def test_with_on_new_issues_off_no_refine_job_is_queued(
    app: App, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _policy(tmp_path, on_new_issues=False)
    assert _deliver(app, str(uuid.uuid4())).new
    run_once(app)
    assert _refine_jobs(app) == 0 and _proposals(app.db) == []


@pytest.mark.parametrize("app", [True], indirect=True)
def test_a_refine_failure_is_logged_with_the_delivery_and_leaves_triage_alone(
    app: App,
    world: World,
    db: Database,
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin.add_tenant(db, "globex")  # no index: refine stops with "no search index"
    admin.add_repository(db, "globex", REPO)
    gina = admin.add_principal(db, "globex", "gina", [Role.APPROVER]).token
    delivery = str(uuid.uuid4())
    assert _deliver(app, delivery).new
    with caplog.at_level(logging.WARNING):
        report = run_once(app)
    failed = [r.getMessage() for r in caplog.records if "refine" in r.getMessage()]
    assert len(failed) == 1 and delivery in failed[0] and "no search index" in failed[0], failed
    assert "\n" not in failed[0]
    assert report.failed_jobs == []  # a refine failure fails no job, and nothing else
    notes = [p["note"] for p in _proposals(db)]
    assert notes.count(REFINE_NOTE) == 1  # acme's refine, from its own job
    # globex's triage of the same delivery ran as ever, and proposed its label; no enrichment.
    assert [p["note"] for p in _proposals(db, "globex")] == [None]
    for token in (world.approver_token, gina):
        runs = run_service.list_runs(db, authenticate(db, token))
        assert [r["target"] for r in runs] == [f"{REPO}#50"]
