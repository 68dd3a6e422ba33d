"""Every action kind in every page and API answer that shows or lists proposals and executions
(issue 26, finding 8, the web's half; the CLI's is tests/gate/e2e/test_show_every_kind.py): the
inbox, the proposal page and its JSON, and once the worker carried it out the executions list,
the execution page and their JSON, each with the kind's own fields and no error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_web_mail import HONEST, MAILBOX, REQUEST, setup_mail

from conftest import World, make_world
from fixtures_web import REPO, web_settings
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.bootstrap.app import App, open_app
from resolveflow.gate import proposals as proposal_service
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.gitlab.server import FakeGitLabServer
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.store import gitlab_tokens
from resolveflow.web import create_app
from resolveflow.worker import run_once

pytest_plugins = ["fixtures_web"]

TOKEN = "glpat-acme-bot"


@dataclass
class Site:
    app: App
    world: World
    client: TestClient

    def get(self, path: str, token: str) -> Any:
        answer = self.client.get(path, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:500])
        assert "Traceback" not in answer.text
        return answer


@pytest.fixture
def site(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Site]:
    oauth_github.add_issue(REPO, 2, "Widget crashes at start", "Same crash.", user="octocat")
    with FakeSmtpServer() as smtp, FakeGitLabServer() as gitlab:
        gitlab.state.add_user(7, "acme-bot", TOKEN)
        gitlab.state.add_user(12, "alice")
        gitlab.state.add_project(42, "group/ops", ["ops"], members=[7])
        policy = tmp_path / "policy.toml"
        policy.write_text(
            f'[tenants.acme.mailboxes."{MAILBOX}"]\nsmtp_host = "127.0.0.1"\n'
            f'smtp_port = {smtp.port}\nsecurity = "plain"\n'
            'signature = "Best regards,\\nAcme Support"\n\n'
            '[tenants.acme.projects.ops]\nforge = "gitlab"\nproject = "group/ops"\n'
            'labels = ["ops"]\nassignees = { alice = 12 }\n'
        )
        settings = web_settings(
            queue_ready,
            oauth_github.url,
            policy_file=policy,
            gitlab_url=gitlab.url,
            gitlab_timeout_seconds=2.0,
        )
        with open_app(settings, auto_migrate=False) as app:
            world = make_world(app.db)
            cipher = app.token_cipher()
            assert cipher is not None
            with app.db.tenant(world.tenant.id) as conn:
                gitlab_tokens.save_gitlab_token(conn, cipher, world.tenant.id, "acme", TOKEN)
            with TestClient(create_app(app), base_url="https://testserver") as client:
                yield Site(app, world, client)


def propose(site: Site, kind: str) -> dict[str, Any]:
    """A proposal of ``kind`` by the requester, as ``proposals.describe`` shows it."""
    db, rita = site.app.db, site.world.requester(site.app.db)
    if kind == "github.issue":
        made = proposal_service.create_proposal(
            db, rita, repository=REPO, issue=1, comment="Could you share the log?", labels=["bug"]
        )
        return proposal_service.describe(db, rita, made.id)
    if kind == "github.issue_create":
        made = proposal_service.create_issue_proposal(
            db, rita, repository=REPO, title="Document limits", body="They are undocumented.",
            labels=["bug"], assignees=["rita"],
        )  # fmt: skip
        return proposal_service.describe(db, rita, made.id)
    if kind == "gitlab.issue_create":
        targets = IssueTargets(policy=site.app.policy, gitlab=site.app.gitlab())
        return prepare_issue(
            db, rita, targets, alias="ops", title="Disk full on ops-3",
            body="The disk is undocumented.", labels=["ops"], assignees=["alice"],
        )  # fmt: skip
    auth = {"Authorization": f"Bearer {site.world.requester_token}"}
    if kind == "github.issue_close_duplicate":  # proposed through the API
        made = site.client.post(
            "/api/v1/proposals/close-duplicate",
            json={"issue": f"{REPO}#2", "original": 1, "grace_hours": 48},
            headers=auth,
        )
        assert made.status_code == 201, made.text
        answer: dict[str, Any] = made.json()
        return answer
    setup_mail(site.app, site.world)
    draft = site.client.post(
        "/api/v1/mail/drafts", json={"mailbox": MAILBOX, "request": REQUEST}, headers=auth
    ).json()
    edit = {"version": draft["latest"]["version"], "body": HONEST}
    latest = site.client.post(
        f"/api/v1/mail/drafts/{draft['id']}/versions", json=edit, headers=auth
    ).json()["latest"]
    return proposal_service.describe(db, rita, latest["proposal"]["id"])


# What the proposal page and the proposal's JSON show of each kind.
FIELDS = {
    "github.issue": ["acme/widgets#1", "bug", "Could you share the log?"],
    "github.issue_create": ["Document limits", "bug", "rita", "They are undocumented."],
    "gitlab.issue_create": ["group/ops", "Disk full on ops-3", "ops", "alice", "undocumented"],
    "email.send": [MAILBOX, "kim@customer.example", "My password reset link expired",
                   "ask for a new one"],
    "github.issue_close_duplicate": ["acme/widgets#2", "duplicate of #1", "in 2 days",
                                     "unless someone objects"],
}  # fmt: skip
# Once the worker carried it out: sent, but the close waits out its grace period in the queue.
STATE = {"github.issue_close_duplicate": "pending"}


@pytest.mark.parametrize("kind", list(FIELDS))
def test_every_page_and_answer_shows_the_kind(site: Site, kind: str) -> None:
    alex = site.world.approver_token
    view = propose(site, kind)
    assert view["kind"] == kind
    inbox = site.get("/inbox", alex).text
    assert f'data-proposal="{view["id"]}"' in inbox and f'data-kind="{kind}"' in inbox
    page = site.get(f"/proposals/{view['id']}", alex).text
    shown = site.get(f"/api/v1/proposals/{view['id']}", alex).json()
    for field in FIELDS[kind]:
        assert field in page, field
        assert field in json.dumps(shown), field
    if kind == "github.issue_close_duplicate":  # the original and the period, in words
        assert '<code id="original">acme/widgets#1</code>' in page
        assert '<dd id="grace">2 days after the notice is posted</dd>' in page
    [listed] = [p for p in site.get("/api/v1/proposals", alex).json() if p["id"] == view["id"]]
    assert (listed["kind"], listed["target"]) == (kind, view["summary"])

    approved = site.client.post(
        f"/api/v1/proposals/{view['id']}/approve",
        json={"digest": view["digest"]},
        headers={"Authorization": f"Bearer {alex}"},
    )
    assert approved.status_code == 202, approved.text
    run_once(site.app)
    execution = approved.json()["execution_id"]
    done = site.get(f"/api/v1/executions/{execution}", alex).json()
    state = STATE.get(kind, "sent")
    assert (done["kind"], done["target"], done["state"]) == (kind, view["summary"], state)
    assert execution in site.get("/executions", alex).text
    [row] = [e for e in site.get("/api/v1/executions", alex).json() if e["id"] == execution]
    assert (row["kind"], row["state"]) == (kind, state)
    page = site.get(f"/executions/{execution}", alex).text
    assert escape(view["summary"], quote=False) in page and f'data-kind="{kind}"' in page
    if kind == "github.issue_close_duplicate":
        assert "will close after" in page and "unless someone objects" in page


def test_a_bad_close_as_duplicate_request_is_one_line_and_proposes_nothing(site: Site) -> None:
    auth = {"Authorization": f"Bearer {site.world.requester_token}"}
    cases = [
        ({"issue": f"{REPO}#2", "original": 2}, "duplicate of itself"),
        ({"issue": f"{REPO}#2", "original": 1, "grace_hours": 0}, "grace_hours"),
        ({"issue": f"{REPO}#2", "original": 99}, "#99"),
        ({"issue": "not an issue", "original": 1}, "OWNER/REPO#N"),
        ({"issue": f"{REPO}#2", "original": 1, "comment": "Closing soon."}, "#1"),
        # Strict types: lax pydantic read each of these as 1 (or 48 hours) and proposed.
        ({"issue": f"{REPO}#2", "original": True}, "original: Input should be a valid integer"),
        ({"issue": f"{REPO}#2", "original": "1"}, "original: Input should be a valid integer"),
        ({"issue": f"{REPO}#2", "original": 1.0}, "original: Input should be a valid integer"),
        ({"issue": f"{REPO}#2", "original": 1, "grace_hours": True}, "grace_hours: Input should"),
        ({"issue": f"{REPO}#2", "original": 1, "grace_hours": "48"}, "grace_hours: Input should"),
        ({"issue": f"{REPO}#2", "original": 1, "grace_hours": 48.0}, "grace_hours: Input should"),
    ]
    for body, said in cases:
        answer = site.client.post("/api/v1/proposals/close-duplicate", json=body, headers=auth)
        assert 400 <= answer.status_code < 500, (body, answer.status_code, answer.text)
        text = answer.text
        assert "Traceback" not in text and said in text, (body, text)
        assert "\n" not in answer.json()["message"], text
    listed = site.get("/api/v1/proposals", site.world.approver_token).json()
    assert listed == []


def test_a_second_close_as_duplicate_of_one_issue_is_409_naming_the_first(site: Site) -> None:
    auth = {"Authorization": f"Bearer {site.world.requester_token}"}
    body = {"issue": f"{REPO}#2", "original": 1}
    first = site.client.post("/api/v1/proposals/close-duplicate", json=body, headers=auth)
    assert first.status_code == 201, first.text
    again = site.client.post("/api/v1/proposals/close-duplicate", json=body, headers=auth)
    assert again.status_code == 409, again.text
    assert again.json()["message"] == (
        f"{REPO}#2 already has a close-as-duplicate in flight: proposal {first.json()['id']} "
        "(as a duplicate of #1); reject it, or wait until it ends, to propose another"
    )
    listed = site.get("/api/v1/proposals", site.world.approver_token).json()
    assert [p["id"] for p in listed] == [first.json()["id"]]
