"""``resolveflow demo``: the whole approval-to-execution path on a throwaway embedded database.

Nothing outside this machine is touched: GitHub is the bundled fake server on 127.0.0.1, and the
database lives in a temporary directory that is removed afterwards (unless ``--keep``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from resolveflow.adapters.github_fake import FakeGitHubServer
from resolveflow.adapters.githubkit_client import GitHubKitClient
from resolveflow.cli.output import console, emit, exact, table
from resolveflow.config import Settings
from resolveflow.domain.errors import ResolveFlowError
from resolveflow.domain.records import Role
from resolveflow.service import admin, proposals
from resolveflow.service import executions as execution_service
from resolveflow.service.auth import authenticate
from resolveflow.wiring import App, open_app

REPO = "acme/widgets"
ISSUE = 7
ISSUE_TITLE = "load_dataset fails with ConnectionError behind a proxy"
COMMENT = (
    "Thanks for the report! This looks like the proxy settings are not passed to the download "
    "manager. Could you share the output of `datasets-cli env` and the exact proxy variables "
    "you set?"
)


def _step(as_json: bool, title: str, detail: str = "") -> None:
    if not as_json:
        console.print(Text("\n▸ " + title, style="bold cyan"))
        if detail:
            console.print("  " + detail)


def _refused(as_json: bool, what: str, exc: ResolveFlowError) -> str:
    if not as_json:
        console.print(
            Text.assemble(("  refused as it should be", "green"), f" ({what}): {exc.message}")
        )
    return exc.message


def demo(
    keep: bool = typer.Option(False, "--keep", help="Keep the demo database directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON summary."),
) -> None:
    """Walk through propose -> refuse -> approve -> execute once, with nothing external."""
    home = Path(tempfile.mkdtemp(prefix="resolveflow-demo-"))
    try:
        with FakeGitHubServer(default_login="resolveflow-bot") as fake:
            fake.add_repo(REPO, ["bug", "needs-triage", "question"])
            fake.add_issue(REPO, ISSUE, ISSUE_TITLE, "Downloading fails...", user="octocat")
            settings = Settings(home=home, github_api_url=fake.url, github_token=None)
            with (
                open_app(settings) as app,
                GitHubKitClient(fake.url, "demo-service-token", 5.0) as client,
            ):
                app._github = client
                summary = _walkthrough(app, fake, as_json)
    finally:
        if not keep:
            import shutil

            shutil.rmtree(home, ignore_errors=True)
    summary["home"] = str(home) if keep else None
    emit(summary, as_json, lambda: console.print(Text("\ndemo complete", style="bold green")))


def _walkthrough(app: App, fake: FakeGitHubServer, as_json: bool) -> dict[str, Any]:
    db = app.db
    _step(
        as_json,
        "Embedded Postgres and a fake GitHub are up",
        f"GitHub (fake) at {fake.url}: {REPO}#{ISSUE} “{ISSUE_TITLE}”",
    )
    admin.add_tenant(db, "demo")
    rita = authenticate(db, admin.add_principal(db, "demo", "rita", [Role.REQUESTER]).token)
    alex = authenticate(db, admin.add_principal(db, "demo", "alex", [Role.APPROVER]).token)
    admin.add_repository(db, "demo", REPO)
    _step(as_json, "Tenant demo: rita (requester), alex (approver), allowlist " + REPO)

    proposal = proposals.create_proposal(
        db, rita, repository=REPO, issue=ISSUE, comment=COMMENT, labels=["needs-triage"]
    )
    _step(as_json, "rita proposes a comment and a label", f"digest {proposal.digest}")
    if not as_json:
        console.print(exact(COMMENT, "the exact comment under review"))

    refusals = []
    for who, principal, digest in [
        ("rita, a requester, approving", rita, proposal.digest),
        ("alex approving a different digest", alex, "0" * 64),
    ]:
        try:
            proposals.approve(db, principal, proposal.id, digest, 3600)
        except ResolveFlowError as exc:
            refusals.append({"attempt": who, "reason": _refused(as_json, who, exc)})

    approved = proposals.approve(
        db, alex, proposal.id, proposal.digest, app.settings.approval_ttl_seconds
    )
    _step(
        as_json,
        "alex approves exactly that digest",
        f"execution {approved.execution.id} is pending",
    )

    executor = app.executor()
    executor.run_due()
    executor.run_due()  # a second pass finds nothing: the action runs once
    view = execution_service.show_execution(db, alex, approved.execution.id)
    _step(
        as_json,
        f"the executor ran twice; the execution is {view['state']}",
        f"GitHub received {fake.writes_received} write(s): one comment, one label",
    )
    posted = fake.comments(REPO, ISSUE)
    if not as_json:
        console.print(exact(posted[-1]["body"], "as posted on GitHub (marker included)"))
        table(
            "audit trail",
            ["at", "actor", "event"],
            [(e["at"][11:23], e["actor"], e["event"]) for e in view["timeline"]],
        )
    return {
        "proposal_id": str(proposal.id),
        "digest": proposal.digest,
        "execution_id": view["id"],
        "state": view["state"],
        "refusals": refusals,
        "github_writes": fake.writes_received,
        "comments_on_issue": len(posted),
        "labels_on_issue": fake.issue_labels(REPO, ISSUE),
    }
