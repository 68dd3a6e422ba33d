"""The mailbox grant holds on every read of an email proposal, draft, example or execution
(issue 26, finding 5): the pages, the JSON API, the inbox rows and the audit trail. A principal
of the tenant without a grant for the mailbox (an approver, an admin or a requester) sees nothing
of its mail: not the customer's request, not the reply, not the past replies used as examples,
not the recipient's address or the subject. A detail route answers 403 (as the draft route did
already); a list keeps the row, with the mail left out.

The same table, row by row, is read by a principal who holds the grant: there the mail is shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from test_web_mail import HONEST, MAILBOX, mail_policy, setup_mail

from conftest import make_world
from fixtures_web import web_settings
from resolveflow.accounts import admin
from resolveflow.bootstrap.app import App, open_app
from resolveflow.domain.records import Role
from resolveflow.mail import admin as mail_admin
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.web.app import create_app
from resolveflow.worker import run_once

pytest_plugins = ["fixtures_web"]

REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired\nMessage-ID: <req-kim@customer.example>\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)
# Each a piece of the mail no ungranted principal may read, by what it is.
SECRETS = {
    "customer's text": "expired before I could use it",
    "reply text": "ask for a new one",
    "example text": "Forgot password",  # the past reply the draft came from
    "recipient": "kim@customer.example",
    "subject": "password reset link expired",
}
REASON = "Kim (kim@customer.example) asked for a call instead"


@dataclass
class Mail:
    """An email proposal sent (with its draft and execution), one rejected with a reason naming
    the customer, and one waiting for a decision."""

    app: App
    client: TestClient
    tokens: dict[str, str]
    draft: str
    sent: str
    execution: str
    rejected: str
    pending: str


def _draft(client: TestClient, token: str) -> tuple[str, dict[str, str]]:
    auth = {"Authorization": f"Bearer {token}"}
    made = client.post(
        "/api/v1/mail/drafts", json={"mailbox": MAILBOX, "request": REQUEST}, headers=auth
    )
    assert made.status_code == 201, made.text
    draft = made.json()
    edit = {"version": draft["latest"]["version"], "body": HONEST}
    edited = client.post(f"/api/v1/mail/drafts/{draft['id']}/versions", json=edit, headers=auth)
    assert edited.status_code == 201, edited.text
    proposal: dict[str, str] = edited.json()["latest"]["proposal"]
    return draft["id"], proposal


@pytest.fixture
def mail(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Mail]:
    with FakeSmtpServer() as smtp:
        policy = mail_policy(tmp_path, smtp.port)
        settings = web_settings(queue_ready, oauth_github.url, policy_file=policy)
        with open_app(settings, auto_migrate=False) as app:
            world = make_world(app.db)
            tokens = {"rita": world.requester_token, "alex": world.approver_token}
            for subject, role in (("bea", Role.APPROVER), ("adam", Role.ADMIN)):
                tokens[subject] = admin.add_principal(app.db, "acme", subject, [role]).token
            tokens["rick"] = admin.add_principal(app.db, "acme", "rick", [Role.REQUESTER]).token
            setup_mail(app, world)  # grants rita and alex, imports the mailbox's replies
            with TestClient(create_app(app), base_url="https://testserver") as client:
                alex = {"Authorization": f"Bearer {tokens['alex']}"}
                draft, sent = _draft(client, tokens["rita"])
                approved = client.post(
                    f"/api/v1/proposals/{sent['id']}/approve",
                    json={"digest": sent["digest"]},
                    headers=alex,
                )
                assert approved.status_code == 202, approved.text
                run_once(app)
                run_once(app)
                assert len(smtp.messages) == 1
                _, rejected = _draft(client, tokens["rita"])
                refused = client.post(
                    f"/api/v1/proposals/{rejected['id']}/reject",
                    json={"reason": REASON},
                    headers=alex,
                )
                assert refused.status_code == 202, refused.text
                _, pending = _draft(client, tokens["rita"])
                yield Mail(
                    app,
                    client,
                    tokens,
                    draft,
                    sent["id"],
                    approved.json()["execution_id"],
                    rejected["id"],
                    pending["id"],
                )


# route -> (the status an ungranted reader gets, the id its answer must still name or None,
#           what of the mail the granted reader sees there)
ROUTES: dict[str, tuple[int, str | None, tuple[str, ...]]] = {
    "/proposals/{sent}": (403, None, ("reply text", "example text", "recipient", "subject")),
    "/proposals/{sent}/status": (403, None, ()),
    "/api/v1/proposals/{sent}": (403, None, ("reply text", "recipient", "subject")),
    "/api/v1/proposals": (200, "{sent}", ()),
    "/executions/{execution}": (403, None, ()),
    "/api/v1/executions/{execution}": (403, None, ()),
    "/executions": (200, "{execution}", ()),
    "/api/v1/executions": (200, "{execution}", ()),
    "/inbox": (200, "{pending}", ("subject",)),
    "/audit": (200, "{rejected}", ("recipient",)),
    "/api/v1/audit": (200, "{rejected}", ("recipient",)),
    "/mail": (200, None, ("subject",)),
    "/mail/drafts/{draft}": (403, None, tuple(SECRETS)),
    "/api/v1/mail/drafts/{draft}": (403, None, tuple(SECRETS)),
}


def _ids(mail: Mail) -> dict[str, str]:
    return {
        "sent": mail.sent,
        "execution": mail.execution,
        "rejected": mail.rejected,
        "pending": mail.pending,
        "draft": mail.draft,
    }


@pytest.mark.parametrize("reader", ["bea", "adam", "rick"])
def test_a_principal_without_the_grant_reads_nothing_of_the_mail(mail: Mail, reader: str) -> None:
    ids = _ids(mail)
    wrong: list[str] = []
    for route, (status, names, _) in ROUTES.items():
        answer = mail.client.get(
            route.format(**ids), headers={"Authorization": f"Bearer {mail.tokens[reader]}"}
        )
        if answer.status_code != status:
            wrong.append(f"{route}: {answer.status_code}, not {status}")
        if names is not None and names.format(**ids) not in answer.text:
            wrong.append(f"{route}: the row {names} is missing")
        wrong += [f"{route}: shows the {what}" for what, s in SECRETS.items() if s in answer.text]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("reader", ["alex", "rita"])
def test_a_principal_with_the_grant_reads_the_mail(mail: Mail, reader: str) -> None:
    ids = _ids(mail)
    wrong: list[str] = []
    for route, (_, names, shown) in ROUTES.items():
        answer = mail.client.get(
            route.format(**ids), headers={"Authorization": f"Bearer {mail.tokens[reader]}"}
        )
        if answer.status_code != 200:
            wrong.append(f"{route}: {answer.status_code}")
        if names is not None and names.format(**ids) not in answer.text:
            wrong.append(f"{route}: the row {names} is missing")
        wrong += [f"{route}: no {what}" for what in shown if SECRETS[what] not in answer.text]
    assert wrong == [], "\n".join(wrong)


def test_a_grant_taken_away_takes_the_mail_with_it(mail: Mail) -> None:
    alex = {"Authorization": f"Bearer {mail.tokens['alex']}"}
    path = f"/api/v1/proposals/{mail.sent}"
    assert mail.client.get(path, headers=alex).status_code == 200
    configured = tenant_mailboxes(mail.app.policy(), "acme")
    mail_admin.set_mailbox_grant(mail.app.db, "acme", "alex", MAILBOX, configured, granted=False)
    refused = mail.client.get(path, headers=alex)
    assert refused.status_code == 403
    assert "no grant for the mailbox support@acme.example" in refused.json()["message"]
    assert SECRETS["recipient"] not in refused.text


def test_deciding_on_mail_needs_the_grant_too(mail: Mail) -> None:
    """A rejection is a decision on mail the approver would have to read first; settling an
    email's outcome too. Without the grant both are 403 and nothing is recorded."""
    bea = {"Authorization": f"Bearer {mail.tokens['bea']}"}
    alex = {"Authorization": f"Bearer {mail.tokens['alex']}"}
    refused = mail.client.post(
        f"/api/v1/proposals/{mail.pending}/reject", json={"reason": "no"}, headers=bea
    )
    assert refused.status_code == 403, refused.text
    assert "no grant for the mailbox" in refused.json()["message"]
    shown = mail.client.get(f"/api/v1/proposals/{mail.pending}", headers=alex).json()
    assert shown["decision"] is None, shown["decision"]  # bea's attempt decided nothing
    settle = {"was_sent": True}
    path = f"/api/v1/executions/{mail.execution}/resolve"
    assert mail.client.post(path, json=settle, headers=bea).status_code == 403
    # alex may read it: refused for what the execution is (sent), not for the grant.
    assert mail.client.post(path, json=settle, headers=alex).status_code == 409
