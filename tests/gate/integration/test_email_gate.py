"""The nine gate tests of the email design, against the real sandbox SMTP server on loopback:
what reaches the server is exactly what was approved, once, whatever goes wrong."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from typing import Any

import psycopg
import pytest

from conftest import World, execution_state, make_world
from fixtures_mail import (
    MAILBOX,
    MailWorld,
    approve,
    email_action,
    executor,
    mailbox_toml,
    make_mail,
    propose,
    reconciler,
    set_grant,
)
from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.domain.records import ExecutionState, Role
from resolveflow.errors import Conflict, NotAuthorized, NotFound, PolicyViolation
from resolveflow.gate import approvals, executions, proposals
from resolveflow.gate.credentials import Configured, due_without_credential
from resolveflow.gate.domain.actions import ActionChanges
from resolveflow.mail.store import credentials as mail_credentials
from resolveflow.sandbox.smtp.imap import FakeImapServer
from resolveflow.sandbox.smtp.server import DropAfterData, FakeSmtpServer, Hang
from resolveflow.store.database import Database


@pytest.fixture
def smtp() -> Iterator[FakeSmtpServer]:
    with FakeSmtpServer() as server:
        yield server


@pytest.fixture
def mail(db: Database, world: World, smtp: FakeSmtpServer) -> MailWorld:
    return make_mail(db, world, mailbox_toml("acme", smtp.port))


def parsed(raw: bytes) -> EmailMessage:
    message = message_from_bytes(raw, policy=SMTP_POLICY)
    assert isinstance(message, EmailMessage)
    return message


def sent_ids(smtp: FakeSmtpServer) -> list[str]:
    return [message.message_id for message in smtp.messages]


def test_the_approved_message_is_sent_exactly_as_approved(
    db: Database, world: World, mail: MailWorld, smtp: FakeSmtpServer
) -> None:
    content = b"%PDF-1.4 refund receipt\n"
    with db.tenant(world.tenant.id) as conn:
        sha = mail_credentials.save_attachment(conn, world.tenant.id, "application/pdf", content)
    attachment = {"name": "receipt.pdf", "media_type": "application/pdf", "size": len(content)}
    action = email_action(
        bcc=["audit@acme.example"],
        html="<p>Hello Alice,</p><p>The refund was issued today.</p>",
        attachments=[{**attachment, "sha256": sha}],
    )
    proposal = propose(db, mail, action)
    executor(db, mail).run_due()  # nothing approved: nothing is sent
    assert smtp.messages == []

    approved = approve(db, mail, proposal)
    executor(db, mail).run_due()
    executor(db, mail).run_due()  # nothing left to do
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.SENT, after.detail
    [received] = smtp.messages
    marker = f"<resolveflow.{approved.execution.id}@acme.example>"
    assert (after.result_ref, received.message_id) == (marker, marker)
    assert received.mail_from == MAILBOX
    assert sorted(received.rcpt_tos) == sorted(
        ["alice@customer.example", "ops@acme.example", "audit@acme.example"]
    )
    message = parsed(received.raw)
    assert (message["From"], message["To"], message["Cc"]) == (
        MAILBOX,
        "alice@customer.example",
        "ops@acme.example",
    )
    assert message["Subject"] == action.subject
    assert message["In-Reply-To"] == "<req-1@customer.example>"
    assert message["References"] == "<req-0@customer.example> <req-1@customer.example>"
    # Bcc only in the envelope: no header, and the address nowhere in the bytes.
    assert message["Bcc"] is None and b"audit@acme.example" not in received.raw
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    assert text.get_content().replace("\r\n", "\n").rstrip("\n") == action.text
    assert html.get_content().rstrip("\r\n") == action.html
    [part] = list(message.iter_attachments())
    assert (part.get_filename(), part.get_content_type()) == ("receipt.pdf", "application/pdf")
    assert part.get_content() == content
    assert smtp.wait_idle()


def test_an_unauthorized_user_cannot_approve_or_send(
    db: Database, world: World, mail: MailWorld, smtp: FakeSmtpServer
) -> None:
    proposal = propose(db, mail, email_action())
    # The approver role alone is not enough: the grant for the mailbox is needed.
    set_grant(db, mail.policy, "acme", "alex", granted=False)
    with pytest.raises(NotAuthorized, match="no grant for that mailbox"):
        approve(db, mail, proposal)
    checks = approvals.checks_for(
        db, world.approver(db), proposal.id, 3600, mailboxes=mail.configured
    )
    assert [c.name for c in checks if not c.ok] == ["mailbox granted"]
    # A proposer holding the grant, without the approver role, cannot approve either.
    ron = admin.add_principal(db, "acme", "ron", [Role.REQUESTER])
    set_grant(db, mail.policy, "acme", "ron", granted=True)
    with pytest.raises(NotAuthorized, match="approver role"):
        approve(db, mail, proposal, authenticate(db, ron.token))
    executor(db, mail).run_due()
    assert smtp.messages == []

    # Approved with the grant, which is taken away before the executor runs: nothing is sent.
    set_grant(db, mail.policy, "acme", "alex", granted=True)
    approved = approve(db, mail, proposal)
    set_grant(db, mail.policy, "acme", "alex", granted=False)
    executor(db, mail).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.FAILED
    assert "no longer holds the grant" in (after.detail or "")
    assert smtp.messages == [] and smtp.sessions_seen == 0


def test_a_mailbox_removed_from_the_policy_after_approval_sends_nothing(
    db: Database, world: World, smtp: FakeSmtpServer
) -> None:
    text = mailbox_toml("acme", smtp.port)
    mail = make_mail(db, world, text)
    approved = approve(db, mail, propose(db, mail, email_action()))
    emptied = make_mail(db, world, "[tenants.acme]\n", grant=())
    executor(db, emptied).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.FAILED and "not one of the tenant's mailboxes" in (
        after.detail or ""
    )
    assert smtp.sessions_seen == 0


def test_an_approval_from_another_tenant_is_refused(
    db: Database, world: World, smtp: FakeSmtpServer
) -> None:
    # Both tenants configure the same address and grant it to their approver: only the tenant
    # boundary stands between them.
    text = mailbox_toml("acme", smtp.port) + mailbox_toml("globex", smtp.port)
    mail = make_mail(db, world, text)
    globex = make_world(db, "globex", "globex/app")
    set_grant(db, mail.policy, "globex", "alex", granted=True)
    proposal = propose(db, mail, email_action())
    with pytest.raises(NotFound):
        approve(db, mail, proposal, globex.approver(db))
    executor(db, mail).run_due()
    assert smtp.messages == []
    approved = approve(db, mail, proposal)  # acme's own approver still can
    executor(db, mail).run_due([globex.tenant.id])  # globex's executor finds nothing of acme's
    assert smtp.messages == []
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.PENDING


@pytest.mark.parametrize(
    ("change", "tamper"),
    [
        (ActionChanges(to=("mallory@evil.example",)), ["to"]),
        (ActionChanges(bcc=("mallory@evil.example",)), ["bcc"]),
    ],
    ids=["recipient changed", "bcc added"],
)
def test_a_recipient_changed_or_a_bcc_added_after_approval_is_refused(
    db: Database,
    world: World,
    mail: MailWorld,
    smtp: FakeSmtpServer,
    superuser: psycopg.Connection[Any],
    change: ActionChanges,
    tamper: list[str],
) -> None:
    # Edited through the product: a new version, which the approval does not cover (an edit of
    # mail takes the mailbox's grant, as reading it does).
    first = propose(db, mail, email_action())
    approved = approve(db, mail, first)
    set_grant(db, mail.policy, "acme", "rita", granted=True)
    edited = proposals.edit_proposal(db, world.requester(db), first.id, change)
    assert edited.digest != first.digest and edited.version == 2
    executor(db, mail).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.FAILED and "superseded" in (after.detail or "")
    assert smtp.messages == []

    # Written into the stored proposal behind the product's back: the digest no longer matches.
    second = propose(db, mail, email_action(subject="Re: Refund, second request"))
    approved = approve(db, mail, second)
    superuser.execute(
        "UPDATE proposals SET action = jsonb_set(action, %s, '[\"mallory@evil.example\"]') "
        "WHERE id = %s",
        [tamper, second.id],
    )
    executor(db, mail).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.FAILED and "digest" in (after.detail or "")
    assert smtp.messages == [] and smtp.sessions_seen == 0


def test_a_retry_after_success_does_not_send_twice(
    db: Database, world: World, mail: MailWorld, smtp: FakeSmtpServer
) -> None:
    action = email_action()
    approved = approve(db, mail, propose(db, mail, action))
    gate = executor(db, mail)
    assert gate.execute_one(world.tenant.id, approved.execution.id).state is ExecutionState.SENT
    for _ in range(3):
        again = executor(db, mail).execute_one(world.tenant.id, approved.execution.id)
        assert again.state is ExecutionState.SENT
        executor(db, mail).run_due()
        assert reconciler(db, mail).run() == []
    # The same message proposed and approved again is refused while the first is live.
    with pytest.raises(Conflict):
        approve(db, mail, propose(db, mail, action))
    assert len(smtp.messages) == 1


def test_concurrent_executors_reach_the_server_once(
    db: Database, world: World, mail: MailWorld, smtp: FakeSmtpServer
) -> None:
    for round_number in range(3):
        action = email_action(subject=f"Re: Refund, round {round_number}")
        approved = approve(db, mail, propose(db, mail, action))
        start = threading.Barrier(16)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                gate = executor(db, mail)
                start.wait(timeout=10)
                gate.execute_one(world.tenant.id, approved.execution.id)
            except BaseException as exc:  # reported below, with the round
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert errors == [] and not any(thread.is_alive() for thread in threads)
        after = execution_state(db, world, approved.execution.id)
        assert after.state is ExecutionState.SENT, (round_number, after.detail)
        assert sent_ids(smtp).count(after.result_ref) == 1
    assert len(smtp.messages) == 3


@pytest.mark.parametrize("fault", [Hang(at="DATA"), DropAfterData()], ids=["timeout", "dropped"])
def test_a_timeout_or_a_lost_reply_after_data_is_unknown_and_never_resent(
    db: Database, world: World, mail: MailWorld, smtp: FakeSmtpServer, fault: Any
) -> None:
    approved = approve(db, mail, propose(db, mail, email_action()))
    smtp.inject(fault)
    executor(db, mail).run_due()
    after = execution_state(db, world, approved.execution.id)
    marker = f"<resolveflow.{approved.execution.id}@acme.example>"
    assert after.state is ExecutionState.UNKNOWN, after.detail
    assert marker in (after.detail or "")
    assert f"resolveflow executions resolve {approved.execution.id}" in (after.detail or "")
    assert sent_ids(smtp) == [marker]  # the server kept it
    for _ in range(2):
        executor(db, mail).run_due()
        [settled] = reconciler(db, mail).run()
        assert settled.state is ExecutionState.UNKNOWN
        assert "no Sent folder" in settled.detail and marker in settled.detail
    assert sent_ids(smtp) == [marker]


def test_an_unknown_outcome_is_settled_by_a_person_not_by_retrying(
    db: Database, world: World, mail: MailWorld, smtp: FakeSmtpServer
) -> None:
    sent = approve(db, mail, propose(db, mail, email_action()))
    smtp.inject(DropAfterData())
    executor(db, mail).run_due()
    assert execution_state(db, world, sent.execution.id).state is ExecutionState.UNKNOWN
    done = executions.resolve(
        db, world.approver(db), sent.execution.id, was_sent=True, note="in the Sent folder"
    )
    assert done.state is ExecutionState.SENT
    executor(db, mail).run_due()
    assert reconciler(db, mail).run() == []
    assert len(smtp.messages) == 1


def test_an_unknown_outcome_is_settled_by_the_sent_folder(db: Database, world: World) -> None:
    secret = "imap-and-smtp-secret"
    with (
        FakeSmtpServer(credentials=(MAILBOX, secret)) as smtp,
        FakeImapServer(MAILBOX, secret) as imap,
    ):
        text = mailbox_toml("acme", smtp.port, imap_port=imap.port, username=MAILBOX)
        mail = make_mail(db, world, text)
        with db.tenant(world.tenant.id) as conn:
            mail_credentials.save_mailbox_secret(
                conn, mail.cipher, world.tenant.id, MAILBOX, "password", secret
            )
        found = approve(db, mail, propose(db, mail, email_action()))
        missing = approve(db, mail, propose(db, mail, email_action(subject="Re: other")))
        for _ in range(2):
            smtp.inject(DropAfterData())
        executor(db, mail).run_due()
        assert smtp.logins == [("PLAIN", MAILBOX)] * 2 or len(smtp.logins) == 2
        found_id = f"<resolveflow.{found.execution.id}@acme.example>"
        missing_id = f"<resolveflow.{missing.execution.id}@acme.example>"
        assert sorted(sent_ids(smtp)) == sorted([found_id, missing_id])
        imap.put(found_id)  # one reached the Sent folder; the other did not (yet)
        settled = {s.execution_id: s for s in reconciler(db, mail).run()}
        assert settled[found.execution.id].state is ExecutionState.SENT
        assert settled[missing.execution.id].state is ExecutionState.UNKNOWN
        assert "not in the Sent folder" in settled[missing.execution.id].detail
        assert sorted(imap.searches) == sorted([found_id, missing_id])
        after = execution_state(db, world, found.execution.id)
        assert after.state is ExecutionState.SENT and after.result_ref == found_id
        executor(db, mail).run_due()
        assert sorted(sent_ids(smtp)) == sorted([found_id, missing_id])  # neither sent again


def test_an_email_waits_for_no_github_credential(
    db: Database, world: World, mail: MailWorld
) -> None:
    # The mailbox's own secret sends it: no GitHub service token is needed to claim it.
    approved = approve(db, mail, propose(db, mail, email_action()))
    nothing = Configured(service_token=False, key_configured=False, gitlab_url=False)
    with db.tenant(world.tenant.id) as conn:
        assert approved.execution.id not in due_without_credential(conn, world.tenant.id, nothing)


def test_approval_needs_the_mailbox_configured_for_the_tenant(
    db: Database, world: World, mail: MailWorld, smtp: FakeSmtpServer
) -> None:
    proposal = propose(db, mail, email_action(mailbox="billing@acme.example"))
    with pytest.raises(PolicyViolation, match="not one of the tenant's mailboxes"):
        approve(db, mail, proposal)
    checks = approvals.checks_for(
        db, world.approver(db), proposal.id, 3600, mailboxes=mail.configured
    )
    failing = {c.name for c in checks if not c.ok}
    assert failing == {"mailbox configured", "mailbox granted"}
