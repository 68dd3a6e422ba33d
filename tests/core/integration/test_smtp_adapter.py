"""The SMTP adapter against the sandbox SMTP server on loopback: the message arrives exactly as
built, and each fault gives the error the gate needs (refused, try again, unknown)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from typing import Any

import pytest

from resolveflow.adapters.smtp.client import AioSmtpMailer
from resolveflow.adapters.smtp.message import build_message
from resolveflow.adapters.smtp.protocol import OutgoingMessage, Security, SmtpEndpoint
from resolveflow.errors import (
    DigestMismatch,
    ProviderOutcomeUnknown,
    ProviderRejected,
    ProviderUnavailable,
)
from resolveflow.gate.domain.actions.email_send import parse_email_send
from resolveflow.mail.kind import message_fields
from resolveflow.sandbox.smtp.server import DropAfterData, FakeSmtpServer, Hang, Refuse

pytestmark = pytest.mark.timeout(10)

EXECUTION = "0b3c7a52-4f7e-4d8a-9a57-1c2d3e4f5a6b"
PDF = b"%PDF-1.4 not really a pdf \x00\x01\x02" * 40
CSV = b"name,amount\r\nwidget,3\r\n"


@pytest.fixture
def server() -> Iterator[FakeSmtpServer]:
    with FakeSmtpServer() as fake:
        yield fake


def endpoint(server: FakeSmtpServer, **changes: Any) -> SmtpEndpoint:
    settings: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": server.port,
        "security": Security.PLAIN,
        "timeout_seconds": 0.5,
        "deadline_seconds": 1.0,
        "retries": 2,
        "retry_delay_seconds": 0.0,
        "helo_name": "resolveflow.test",
    }
    settings.update(changes)
    return SmtpEndpoint(**settings)


class Sleeps:
    """Records the delays the adapter asked for instead of waiting them out."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def attachment(name: str, media_type: str, content: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(content).hexdigest()
    return {"name": name, "media_type": media_type, "size": len(content), "sha256": digest}


def outgoing() -> OutgoingMessage:
    action = parse_email_send(
        {
            "mailbox": "support@acme.example",
            "to": ["alice@customer.example", "bob@customer.example"],
            "cc": ["ops@acme.example"],
            "bcc": ["audit@acme.example"],
            "subject": "Re: Refund for order — café",
            "text": "Hello Alice,\n\n.A line that starts with a dot.\n\nAcme Support\n",
            "html": "<p>Hello Alice</p>\n",
            "in_reply_to": "<req-1@customer.example>",
            "references": ["<req-0@customer.example>", "<req-1@customer.example>"],
            "attachments": [
                attachment("policy.pdf", "application/pdf", PDF),
                attachment("items.csv", "text/csv", CSV),
            ],
        }
    )
    content = {hashlib.sha256(b).hexdigest(): b for b in (PDF, CSV)}
    return build_message(message_fields(action, EXECUTION), content)


def send(
    server: FakeSmtpServer,
    sleep: Sleeps | None = None,
    message: OutgoingMessage | None = None,
    **changes: Any,
) -> Any:
    mailer = AioSmtpMailer(endpoint(server, **changes), sleep=sleep or Sleeps())
    try:
        return mailer.send_message(message or outgoing())
    finally:
        assert server.wait_idle(), "the client left a connection open"


def test_message_arrives_exactly_as_built(server: FakeSmtpServer) -> None:
    message = outgoing()
    receipt = send(server, message=message)
    assert receipt.code == 250
    assert receipt.message_id == f"<resolveflow.{EXECUTION}@acme.example>"
    [got] = server.messages
    assert got.mail_from == "support@acme.example"
    assert sorted(got.rcpt_tos) == sorted(
        ["alice@customer.example", "bob@customer.example", "ops@acme.example", "audit@acme.example"]
    )
    assert got.raw.rstrip(b"\r\n") == message.raw.rstrip(b"\r\n")  # dot-stuffing undone
    parsed = message_from_bytes(got.raw, policy=SMTP_POLICY)
    assert isinstance(parsed, EmailMessage)
    assert parsed["From"] == "support@acme.example"
    assert parsed["To"] == "alice@customer.example, bob@customer.example"
    assert parsed["Cc"] == "ops@acme.example"
    assert parsed["Subject"] == "Re: Refund for order — café"
    assert parsed["Message-ID"] == receipt.message_id == got.message_id
    assert parsed["In-Reply-To"] == "<req-1@customer.example>"
    assert parsed["References"] == "<req-0@customer.example> <req-1@customer.example>"
    assert "Bcc" not in parsed and b"audit@acme.example" not in got.raw
    body = parsed.get_body(("plain",))
    assert body is not None and body.get_content().replace("\r\n", "\n") == (
        "Hello Alice,\n\n.A line that starts with a dot.\n\nAcme Support\n"
    )
    files = {
        part.get_filename(): part.get_payload(decode=True) for part in parsed.iter_attachments()
    }
    assert {name: hashlib.sha256(data).hexdigest() for name, data in files.items()} == {
        "policy.pdf": hashlib.sha256(PDF).hexdigest(),
        "items.csv": hashlib.sha256(CSV).hexdigest(),
    }
    assert server.sessions_seen == 1


def test_attachment_bytes_must_be_the_approved_ones() -> None:
    action = parse_email_send(
        {
            "mailbox": "support@acme.example",
            "to": ["alice@customer.example"],
            "subject": "s",
            "text": "t",
            "attachments": [attachment("policy.pdf", "application/pdf", PDF)],
        }
    )
    with pytest.raises(DigestMismatch, match=r"policy\.pdf"):
        build_message(
            message_fields(action, EXECUTION), {hashlib.sha256(PDF).hexdigest(): PDF + b"x"}
        )


@pytest.mark.parametrize("at", ["MAIL", "RCPT"])
def test_550_before_data_is_refused_and_nothing_arrives(server: FakeSmtpServer, at: str) -> None:
    server.inject(Refuse(550, at))  # type: ignore[arg-type]
    with pytest.raises(ProviderRejected, match="550") as refused:
        send(server)
    assert refused.value.status == 550
    assert server.messages == [] and server.sessions_seen == 1


@pytest.mark.parametrize(("code", "at"), [(421, "MAIL"), (451, "RCPT")])
def test_try_later_before_data_is_retried_until_the_fault_clears(
    server: FakeSmtpServer, code: int, at: str
) -> None:
    server.inject(Refuse(code, at, times=2))  # type: ignore[arg-type]
    sleeps = Sleeps()
    receipt = send(server, sleeps, retry_delay_seconds=7.0)
    assert receipt.code == 250
    assert len(server.messages) == 1
    assert sleeps.asked == [7.0, 7.0]
    assert server.sessions_seen == 3  # a new connection for each try


def test_try_later_is_refused_after_the_bound(server: FakeSmtpServer) -> None:
    server.inject(Refuse(421, "MAIL", times=10))
    sleeps = Sleeps()
    with pytest.raises(ProviderRejected, match="after 3 tries; nothing was sent") as refused:
        send(server, sleeps)
    assert refused.value.status == 421
    assert server.messages == [] and server.sessions_seen == 3 and len(sleeps.asked) == 2


def test_drop_after_data_is_unknown_and_the_server_kept_it(server: FakeSmtpServer) -> None:
    server.inject(DropAfterData())
    with pytest.raises(ProviderOutcomeUnknown, match="may have been accepted"):
        send(server)
    assert [m.message_id for m in server.messages] == [f"<resolveflow.{EXECUTION}@acme.example>"]
    assert server.sessions_seen == 1  # never resent


def test_no_reply_after_data_is_unknown(server: FakeSmtpServer) -> None:
    server.inject(Hang("DATA"))
    with pytest.raises(ProviderOutcomeUnknown, match="no answer in time"):
        send(server, timeout_seconds=0.3)
    assert len(server.messages) == 1 and server.sessions_seen == 1


def test_no_reply_before_data_is_a_timeout_that_sent_nothing(server: FakeSmtpServer) -> None:
    server.inject(Hang("MAIL"))
    with pytest.raises(ProviderUnavailable, match="no answer in time before the message was sent"):
        send(server, timeout_seconds=0.3)
    assert server.messages == [] and server.sessions_seen == 1


def test_the_whole_connection_has_a_deadline(server: FakeSmtpServer) -> None:
    # Each reply within the per-command timeout would never end a hang this long by itself.
    server.inject(Hang("DATA"))
    with pytest.raises(ProviderOutcomeUnknown):
        send(server, timeout_seconds=5.0, deadline_seconds=0.3)


def test_nothing_listening_is_unavailable(server: FakeSmtpServer) -> None:
    port = server.port
    server.stop()
    mailer = AioSmtpMailer(endpoint(server, port=port), sleep=Sleeps())
    with pytest.raises(ProviderUnavailable, match="nothing was sent"):
        mailer.send_message(outgoing())
