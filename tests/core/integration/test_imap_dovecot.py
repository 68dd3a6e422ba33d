"""The Sent-folder search against a real IMAP server: Debian's dovecot, started per test on
127.0.0.1 (tests/fixtures_dovecot.py). First ``sent_folder_has`` alone, then reconciliation of an
unknown send through the gate, with dovecot holding the mailbox's Sent folder."""

from __future__ import annotations

import imaplib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from conftest import World, execution_state
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
)
from resolveflow.adapters.smtp.imap import sent_folder_has
from resolveflow.domain.records import ExecutionState
from resolveflow.errors import ConfigurationError, ProviderUnavailable
from resolveflow.mail import admin as mail_admin
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.sandbox.smtp.server import DropAfterData, FakeSmtpServer, Hang
from resolveflow.store.database import Database

if TYPE_CHECKING:  # imported for pytest by pytest_plugins (so its asserts are rewritten)
    from fixtures_dovecot import Dovecot

pytest_plugins = ["fixtures_dovecot"]

MARKER = "<resolveflow.0b0c3f52-6f2e-4c7e-9a51-1d2a3b4c5d6e@acme.example>"


def folders(dovecot: Dovecot) -> list[bytes]:
    client = imaplib.IMAP4(dovecot.host, dovecot.port, timeout=5.0)
    try:
        client.login(dovecot.user, dovecot.password)
        status, listed = client.list()
        assert status == "OK"
        return sorted(line for line in listed if isinstance(line, bytes))
    finally:
        client.logout()


def test_the_sent_folder_holds_the_message_id_and_no_other(dovecot: Dovecot) -> None:
    other = MARKER.replace("0b0c3f52", "ffffffff")
    inbox_only = MARKER.replace("0b0c3f52", "11111111")
    dovecot.deliver(MARKER)
    dovecot.deliver(inbox_only, folder="INBOX")  # in the mailbox, but not in Sent
    assert sent_folder_has(dovecot.endpoint(), MARKER) is True
    assert sent_folder_has(dovecot.endpoint(), other) is False
    assert sent_folder_has(dovecot.endpoint(), inbox_only) is False


def test_a_wrong_password_is_unavailable_in_one_line_without_the_secret(
    dovecot: Dovecot,
) -> None:
    wrong = "not-the-dovecot-password-4711"
    with pytest.raises(ProviderUnavailable) as raised:
        sent_folder_has(dovecot.endpoint(secret=wrong), MARKER)
    message = raised.value.message
    assert message.startswith("imap:") and "authentication failed" in message.lower()
    assert "\n" not in message and wrong not in message and dovecot.password not in message
    assert wrong not in repr(dovecot.endpoint(secret=wrong))


def test_a_missing_folder_is_unavailable(dovecot: Dovecot) -> None:
    with pytest.raises(ProviderUnavailable, match="no folder 'Sent Items'"):
        sent_folder_has(dovecot.endpoint(folder="Sent Items"), MARKER)


def test_quotes_and_backslashes_are_searched_literally(dovecot: Dovecot) -> None:
    odd = '<quo"te\\back(slash) OR ALL@acme.example>'
    dovecot.deliver(odd)
    dovecot.deliver(MARKER)
    assert sent_folder_has(dovecot.endpoint(), odd) is True
    # Each would match every message if it escaped its quoted string.
    for attempt in ['<x@y>" OR ALL "', '<x@y>\\" OR ALL "', '<x@y>" ALL', "<x@y>\\"]:
        assert sent_folder_has(dovecot.endpoint(), attempt) is False, attempt


@pytest.mark.parametrize(
    ("message_id", "folder"),
    [
        ("<x@acme.example>\r\nA1 CREATE Injected\r\nA2 NOOP", "Sent"),
        ("<x@acme.example>\nA1 CREATE Injected", "Sent"),
        (MARKER, "Sent\r\nA1 CREATE Injected\r\nA2 NOOP"),
        ("<x@acme.example>\x00", "Sent"),
        ("<caf\u00e9@acme.example>", "Sent"),
    ],
    ids=["crlf in id", "lf in id", "crlf in folder", "nul", "not ascii"],
)
def test_a_line_break_cannot_add_an_imap_command(
    dovecot: Dovecot, message_id: str, folder: str
) -> None:
    before = folders(dovecot)
    with pytest.raises(ConfigurationError, match="cannot be searched"):
        sent_folder_has(dovecot.endpoint(folder=folder), message_id)
    assert folders(dovecot) == before  # no folder created behind the search's back


def test_only_the_whole_message_id_matches(dovecot: Dovecot) -> None:
    # SEARCH HEADER matches a substring (RFC 3501 6.4.4): the hits are read back and compared.
    dovecot.deliver(f"<x{MARKER}>")  # holds the marker inside a longer Message-ID
    assert sent_folder_has(dovecot.endpoint(), MARKER) is False


# --- through the gate -------------------------------------------------------------------


def gate_mail(db: Database, world: World, dovecot: Dovecot, smtp: FakeSmtpServer) -> MailWorld:
    text = mailbox_toml("acme", smtp.port, imap_port=dovecot.port, username=dovecot.user)
    mail = make_mail(db, world, text)
    configured = tenant_mailboxes(mail.policy, "acme")
    mail_admin.set_mailbox_secret(
        db, mail.cipher, "acme", MAILBOX, configured, "password", dovecot.password
    )
    return mail


@pytest.mark.parametrize(
    "fault", [DropAfterData, lambda: Hang(at="DATA")], ids=["dropped", "timeout"]
)
def test_an_unknown_send_is_settled_by_dovecots_sent_folder_and_never_resent(
    db: Database, world: World, dovecot: Dovecot, fault: Callable[[], Any]
) -> None:
    assert dovecot.user == MAILBOX  # the mailbox logs in to IMAP as itself
    with FakeSmtpServer(credentials=(MAILBOX, dovecot.password)) as smtp:
        mail = gate_mail(db, world, dovecot, smtp)
        found = approve(db, mail, propose(db, mail, email_action()))
        missing = approve(db, mail, propose(db, mail, email_action(subject="Re: other")))
        smtp.inject(fault())  # a fault serves one session: one each
        smtp.inject(fault())
        executor(db, mail).run_due()
        found_id = f"<resolveflow.{found.execution.id}@acme.example>"
        missing_id = f"<resolveflow.{missing.execution.id}@acme.example>"
        for execution in (found.execution.id, missing.execution.id):
            assert execution_state(db, world, execution).state is ExecutionState.UNKNOWN
        dovecot.deliver(found_id)  # the client's copy of one reached Sent; the other did not

        settled = {s.execution_id: s for s in reconciler(db, mail).run()}
        assert settled[found.execution.id].state is ExecutionState.SENT
        assert settled[missing.execution.id].state is ExecutionState.UNKNOWN
        assert "not in the Sent folder" in settled[missing.execution.id].detail
        after = execution_state(db, world, found.execution.id)
        assert (after.state, after.result_ref) == (ExecutionState.SENT, found_id)
        for _ in range(2):
            executor(db, mail).run_due()
            reconciler(db, mail).run()
        assert execution_state(db, world, missing.execution.id).state is ExecutionState.UNKNOWN
        assert smtp.wait_idle()
        # The server saw each message once: nothing was sent again.
        assert sorted(m.message_id for m in smtp.messages) == sorted([found_id, missing_id])


def test_an_unreadable_sent_folder_leaves_the_send_unknown_without_the_secret(
    db: Database, world: World, dovecot: Dovecot
) -> None:
    with FakeSmtpServer(credentials=(MAILBOX, dovecot.password)) as smtp:
        mail = gate_mail(db, world, dovecot, smtp)
        sent = approve(db, mail, propose(db, mail, email_action()))
        smtp.inject(DropAfterData())
        executor(db, mail).run_due()
        marker = f"<resolveflow.{sent.execution.id}@acme.example>"
        dovecot.deliver(marker)
        wrong = "rotated-but-not-in-dovecot-yet"
        configured = tenant_mailboxes(mail.policy, "acme")
        mail_admin.set_mailbox_secret(
            db, mail.cipher, "acme", MAILBOX, configured, "password", wrong
        )
        [settled] = reconciler(db, mail).run()
        assert settled.state is ExecutionState.UNKNOWN
        assert "cannot search the Sent folder" in settled.detail and marker in settled.detail
        assert wrong not in settled.detail and dovecot.password not in settled.detail
        executor(db, mail).run_due()
        assert smtp.wait_idle()
        assert [m.message_id for m in smtp.messages] == [marker]
