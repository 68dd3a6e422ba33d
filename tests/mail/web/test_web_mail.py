"""Mail over HTTP against the real app, database, worker job and sandbox SMTP server: the drafts
API (create, read, edit), its one-line errors, the grant and tenant boundaries, and an approval
through the API that the worker sends once. The /mail pages answer and escape what they show."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from fastapi.testclient import TestClient

from conftest import World, make_world
from fixtures_mail import received
from fixtures_web import web_settings
from resolveflow.accounts import admin
from resolveflow.bootstrap.app import App, open_app
from resolveflow.domain.records import Role
from resolveflow.mail import admin as mail_admin
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.mail.importer import MailImporter
from resolveflow.mail.loader import MailSource
from resolveflow.retrieval.ingest import Indexer
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.web.app import create_app
from resolveflow.worker import run_once

pytest_plugins = ["fixtures_web"]

MAIL = Path(__file__).parents[2] / "data" / "mail"
MAILBOX = "support@acme.example"
REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired\nMessage-ID: <req-kim@customer.example>\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)
HONEST = "Hello Kim,\n\nReset links are valid for one hour: ask for a new one.\n\nAcme Support\n"


@dataclass
class MailSite:
    app: App
    world: World
    client: TestClient
    smtp: FakeSmtpServer
    evil_token: str

    def as_(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


def setup_mail(app: App, world: World, *, grant: tuple[str, ...] = ("rita", "alex")) -> None:
    configured = tenant_mailboxes(app.policy(), "acme")
    for subject in grant:
        mail_admin.set_mailbox_grant(app.db, "acme", subject, MAILBOX, configured, granted=True)
    source = MailSource(MAIL / "support-eml")
    MailImporter(app.db, Indexer(app.db, app.embedder())).run(
        world.tenant.id, MAILBOX, source, source.skipped
    )
    received(app.db, world.tenant.id, REQUEST)  # Kim's request reached the mailbox


def mail_policy(tmp_path: Path, port: int) -> Path:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        f'[tenants.acme.mailboxes."{MAILBOX}"]\nsmtp_host = "127.0.0.1"\n'
        f'smtp_port = {port}\nsecurity = "plain"\n'
        'signature = "Best regards,\\nAcme Support"\n'
        'allowed_domains = ["partner.example"]\n'
    )
    return policy


@pytest.fixture
def site(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[MailSite]:
    with FakeSmtpServer() as smtp:
        policy = mail_policy(tmp_path, smtp.port)
        settings = web_settings(queue_ready, oauth_github.url, policy_file=policy)
        with open_app(settings, auto_migrate=False) as app:
            world = make_world(app.db)
            admin.add_tenant(app.db, "evil")
            evil = admin.add_principal(app.db, "evil", "eve", [Role.APPROVER]).token
            setup_mail(app, world)
            with TestClient(create_app(app), base_url="https://testserver") as client:
                yield MailSite(app, world, client, smtp, evil)


def post_draft(site: MailSite, token: str, **body: Any) -> Any:
    payload = {"mailbox": MAILBOX, "request": REQUEST, **body}
    return site.client.post("/api/v1/mail/drafts", json=payload, headers=site.as_(token))


def test_draft_edit_approve_through_the_api_and_the_worker_sends_once(site: MailSite) -> None:
    rita, alex = site.world.requester_token, site.world.approver_token
    made = post_draft(site, rita)
    assert made.status_code == 201, made.text
    draft = made.json()
    first = draft["latest"]
    assert first["to"] == ["kim@customer.example"]
    assert first["examples"][0]["reply_message_id"] == "<rep-pw@acme.example>"
    assert (
        site.client.get(f"/api/v1/mail/drafts/{draft['id']}", headers=site.as_(rita)).json()[
            "versions"
        ]
        == draft["versions"]
    )
    edit = {"version": first["version"], "body": HONEST}
    edited = site.client.post(
        f"/api/v1/mail/drafts/{draft['id']}/versions", json=edit, headers=site.as_(rita)
    )
    assert edited.status_code == 201, edited.text
    latest = edited.json()["latest"]
    assert latest["findings"] == [] and latest["author"] == "reviewer"
    proposal = latest["proposal"]
    stale = site.client.post(
        f"/api/v1/mail/drafts/{draft['id']}/versions", json=edit, headers=site.as_(rita)
    )
    assert stale.status_code == 400 and "was written after" in stale.json()["message"]

    approve = {"digest": proposal["digest"]}
    url = f"/api/v1/proposals/{proposal['id']}/approve"
    assert site.client.post(url, json=approve, headers=site.as_(rita)).status_code == 403
    decided = site.client.post(url, json=approve, headers=site.as_(alex))
    assert decided.status_code == 202, decided.text
    run_once(site.app)
    run_once(site.app)
    [sent] = site.smtp.messages
    assert sent.rcpt_tos == ("kim@customer.example",)
    assert b"Reset links are valid for one hour" in sent.raw
    execution = site.client.get(
        f"/api/v1/executions/{decided.json()['execution_id']}", headers=site.as_(alex)
    ).json()
    assert execution["state"] == "sent"


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ({"request": "not a message at all"}, 400, "Message-ID"),
        (
            {"request": REQUEST.replace("kim@customer.example", MAILBOX)},
            400,
            "sent by the mailbox itself",
        ),
        ({"mailbox": "sales@acme.example"}, 400, "not one of this tenant's mailboxes"),
        ({"facts": "no colon here"}, 400, "name: value"),
        ({"request": "x" * 2_000_001}, 422, ""),
        ({"unknown": 1}, 422, ""),
    ],
)
def test_bad_drafts_get_one_clear_error(
    site: MailSite, body: dict[str, Any], status: int, said: str
) -> None:
    answer = post_draft(site, site.world.requester_token, **body)
    assert answer.status_code == status, answer.text
    assert "Traceback" not in answer.text
    if said:
        assert said in answer.json()["message"]


def test_grants_and_tenants_bound_every_draft(site: MailSite) -> None:
    draft = post_draft(site, site.world.requester_token).json()
    mail_admin.set_mailbox_grant(site.app.db, "acme", "rita", MAILBOX, [MAILBOX], granted=False)
    refused = post_draft(site, site.world.requester_token)
    assert refused.status_code == 403 and "no grant" in refused.json()["message"]
    hidden = site.client.get(
        f"/api/v1/mail/drafts/{draft['id']}", headers=site.as_(site.world.requester_token)
    )
    assert hidden.status_code == 403
    other = site.client.get(f"/api/v1/mail/drafts/{draft['id']}", headers=site.as_(site.evil_token))
    assert other.status_code == 404
    assert (
        site.client.post(
            "/api/v1/mail/drafts", json={"mailbox": MAILBOX, "request": REQUEST}
        ).status_code
        == 401
    )


def test_the_mail_pages_answer_and_show_text_as_text(site: MailSite) -> None:
    hostile = REQUEST.replace("How do I", "<script>window.__x=1</script> How do I")
    draft = post_draft(site, site.world.requester_token, request=hostile).json()
    headers = site.as_(site.world.requester_token)
    listing = site.client.get("/mail", headers=headers)
    assert listing.status_code == 200 and draft["id"] in listing.text
    page = site.client.get(f"/mail/drafts/{draft['id']}", headers=headers)
    assert page.status_code == 200
    assert "<script>window.__x=1</script>" not in page.text
    assert "&lt;script&gt;window.__x=1&lt;/script&gt;" in page.text
    proposal = draft["latest"]["proposal"]
    shown = site.client.get(f"/proposals/{proposal['id']}", headers=headers)
    assert shown.status_code == 200
    assert '<dd id="mail-to">kim@customer.example</dd>' in shown.text
    assert (
        "Every drafting check passed" in shown.text and "Re: Cannot reset my password" in shown.text
    )
    assert f"/mail/drafts/{draft['id']}" in shown.text
    inbox = site.client.get("/inbox", headers=site.as_(site.world.approver_token))
    assert f'data-proposal="{proposal["id"]}"' in inbox.text
    missing = site.client.get("/mail/drafts/00000000-0000-0000-0000-000000000000", headers=headers)
    assert missing.status_code == 404 and "Traceback" not in missing.text


def never_received(sender: str, message_id: str) -> str:
    """Kim's request as an agent or a paste could give it: from ``sender``, under a Message-ID
    the mailbox may or may not have received from someone else."""
    return REQUEST.replace("Kim Park <kim@customer.example>", sender).replace(
        "<req-kim@customer.example>", message_id
    )


@pytest.mark.parametrize(
    "request_text",
    [
        never_received("Eve <eve@evil.example>", "<req-eve@evil.example>"),
        never_received("Eve <eve@evil.example>", "<req-kim@customer.example>"),  # a real id
    ],
    ids=["never received", "a received Message-ID under another From"],
)
def test_a_reply_to_an_address_the_mailbox_never_received_from_is_flagged_and_refused(
    site: MailSite, request_text: str
) -> None:
    """Before: a proposal to eve, shown as a reply to a received message, with no finding."""
    rita = site.as_(site.world.requester_token)
    draft = post_draft(site, site.world.requester_token, request=request_text).json()
    latest = draft["latest"]
    assert latest["proposal"] is None, latest
    [finding] = [f["message"] for f in latest["findings"] if f["check"] == "recipients"]
    assert finding.startswith("To eve@evil.example is new: the mailbox never received")
    assert draft["request"]["received"] is False
    assert latest["new_recipients"] == ["eve@evil.example"]
    page = site.client.get(f"/mail/drafts/{draft['id']}", headers=rita).text
    assert '<div class="notice warning" id="new-recipients">' in page
    assert '<code class="new-recipient">eve@evil.example</code>' in page
    assert "this mailbox never received it" in page
    assert site.client.get("/api/v1/proposals", headers=rita).json() == []


def test_a_new_address_in_an_allowed_domain_is_proposed_and_flagged_for_the_approver(
    site: MailSite,
) -> None:
    """partner.example is an allowed domain of the mailbox: the reply to a request it never
    received is proposed, and the draft page and the proposal page say the recipient is new."""
    made = post_draft(
        site,
        site.world.requester_token,
        request=never_received("Bo <bo@partner.example>", "<req-bo@partner.example>"),
    ).json()
    proposal = made["latest"]["proposal"]
    assert proposal is not None and made["latest"]["new_recipients"] == ["bo@partner.example"]
    alex = site.as_(site.world.approver_token)
    page = site.client.get(f"/mail/drafts/{made['id']}", headers=alex).text
    assert '<code class="new-recipient">bo@partner.example</code>' in page
    shown = site.client.get(f"/proposals/{proposal['id']}", headers=alex).text
    assert 'id="mail-new-recipients"' in shown and 'id="mail-not-received"' in shown
    assert '<code class="new-recipient">bo@partner.example</code>' in shown
    received_draft = post_draft(site, site.world.requester_token).json()  # Kim's, received
    assert received_draft["request"]["received"] is True
    assert received_draft["latest"]["new_recipients"] == []
    kim = site.client.get(f"/proposals/{received_draft['latest']['proposal']['id']}", headers=alex)
    assert "mail-new-recipients" not in kim.text and "mail-not-received" not in kim.text


UNSTORABLE = {"NUL": "a\x00b", "lone surrogate": "a\ud800b"}


@pytest.mark.parametrize("field", ["subject", "body", "to", "cc", "bcc"])
@pytest.mark.parametrize("kind", sorted(UNSTORABLE))
def test_text_the_database_cannot_hold_is_a_clear_400_in_every_edited_field(
    site: MailSite, field: str, kind: str
) -> None:
    """NUL (Postgres refuses it) or a lone surrogate (not encodable as UTF-8) in any edited field:
    one line naming the field, never a 500, and no new version written."""
    rita = site.world.requester_token
    draft = post_draft(site, rita).json()
    text = UNSTORABLE[kind]
    value: Any = [f"kim{text}@customer.example"] if field in ("to", "cc", "bcc") else text
    edit = {"version": draft["latest"]["version"], field: value}
    answer = site.client.post(  # json.dumps escapes the surrogate as JSON text may (\\ud800)
        f"/api/v1/mail/drafts/{draft['id']}/versions",
        content=json.dumps(edit),
        headers={**site.as_(rita), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    message = answer.json()["message"]
    assert field in message and ("NUL" in message or "surrogate" in message), message
    after = site.client.get(f"/api/v1/mail/drafts/{draft['id']}", headers=site.as_(rita)).json()
    assert len(after["versions"]) == len(draft["versions"])


@pytest.mark.parametrize("kind", sorted(UNSTORABLE))
def test_the_service_refuses_unstorable_text_for_the_cli_and_the_form_too(
    site: MailSite, kind: str
) -> None:
    """``mail edit`` and the /mail form call the same ``MailDrafts.edit``: it says which field,
    whatever the edge (a command-line argument may carry a lone surrogate: undecodable bytes)."""
    from resolveflow.bootstrap.mail_drafts import mail_drafts
    from resolveflow.errors import InvalidInput
    from resolveflow.mail.drafts import Edit

    draft = post_draft(site, site.world.requester_token).json()
    rita = site.world.requester(site.app.db)
    service = mail_drafts(site.app, rita)
    text = UNSTORABLE[kind]
    for change in (Edit(subject=text), Edit(body=text), Edit(bcc=(f"x{text}@acme.example",))):
        with pytest.raises(InvalidInput, match=r"NUL|surrogate"):
            service.edit(rita, UUID(draft["id"]), draft["latest"]["version"], change)
    if kind == "NUL":  # a form's percent-decoding turns a surrogate's bytes into U+FFFD
        form = site.client.post(
            f"/mail/drafts/{draft['id']}/edit",
            data={"version": str(draft["latest"]["version"]), "subject": f"Re{text}"},
            headers=site.as_(site.world.requester_token),
        )
        assert form.status_code == 400, form.text[:300]
