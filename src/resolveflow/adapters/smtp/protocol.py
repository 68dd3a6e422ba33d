"""What ResolveFlow needs from an SMTP server: send one exact message, once.

The error contract is GitHub's and GitLab's (``adapters.github``, docs/email.md):
``ProviderRejected`` means the server definitely refused the message and nothing was delivered,
``ProviderUnavailable`` that the message never left, ``ProviderOutcomeUnknown`` that it may have
been accepted. ``send_message`` is marked ``@writes``, so the layering check lets only
``resolveflow.gate`` call it; the check finds write methods by name, hence ``send_message``
rather than ``send`` (every socket has one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, Protocol

from resolveflow.adapters.base import writes


class Security(StrEnum):
    STARTTLS = "starttls"  # port 587: plain connect, then STARTTLS before anything else
    TLS = "tls"  # port 465: TLS from the first byte
    PLAIN = "plain"  # loopback only (the sandbox server); never for a real mailbox


@dataclass(frozen=True)
class SmtpEndpoint:
    """Where and how to send, per mailbox. ``timeout_seconds`` bounds each command's reply;
    ``deadline_seconds`` one whole connection (connect to final reply); a 4xx before DATA is tried
    again ``retries`` times, ``retry_delay_seconds`` apart, on a new connection."""

    host: str
    port: int
    security: Security = Security.STARTTLS
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout_seconds: float = 30.0
    deadline_seconds: float = 120.0
    retries: int = 2
    retry_delay_seconds: float = 10.0
    helo_name: str | None = None  # None: the local host's name
    # "xoauth2": ``password`` holds an OAuth2 access token, sent with AUTH XOAUTH2
    auth: Literal["password", "xoauth2"] = "password"
    ca_file: str | None = None  # a CA bundle to trust instead of the system's (a private CA)

    @property
    def worst_case_seconds(self) -> float:
        """The longest one ``send_message`` can take: every try to its deadline, the delays
        between them. The executor's lease must cover it."""
        tries = self.retries + 1
        return tries * self.deadline_seconds + self.retries * self.retry_delay_seconds


@dataclass(frozen=True)
class Attachment:
    """One file as the approver saw it: its bytes must still hash to ``sha256``."""

    name: str
    media_type: str  # "type/subtype"
    size: int
    sha256: str


@dataclass(frozen=True)
class MessageFields:
    """What one message says, as approved: From is the mailbox, ``envelope_to`` every recipient
    (Bcc included), ``message_id`` the marker the sender chose."""

    mailbox: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    envelope_to: tuple[str, ...]
    subject: str
    text: str
    html: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    attachments: tuple[Attachment, ...]
    message_id: str


@dataclass(frozen=True)
class OutgoingMessage:
    """One message exactly as it will leave: the envelope (Bcc included) and the bytes (no Bcc)."""

    envelope_from: str
    envelope_to: tuple[str, ...]
    message_id: str
    raw: bytes


@dataclass(frozen=True)
class SendReceipt:
    """The server's final reply to the DATA content: it took responsibility for the message."""

    code: int
    text: str
    message_id: str


class Mailer(Protocol):
    @writes
    def send_message(self, message: OutgoingMessage) -> SendReceipt:
        """Send ``message`` once; never resent after its content may have reached the server."""
        ...
