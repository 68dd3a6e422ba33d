"""``email.send``: send one exact message from a mailbox over SMTP.

A registered kind (``ActionKind.EMAIL_SEND``); its executor is ``mail/kind.py``.

The canonical form, and so the digest, covers every field: From, To, Cc, Bcc, the subject, the
text, the HTML part, In-Reply-To, References and each attachment's name, media type, size and
SHA-256. The tenant is not in it: as for every kind, a proposal belongs to one tenant and the
approval and the execution are bound to (tenant, digest) by the database. What the canonical form
normalises, and so what is the same action: the order of addresses in To/Cc/Bcc (sorted), an
address repeated in one list, the domain's case, the order of attachments (sorted by name), text
in another Unicode normal form or with CRLF line endings. What it keeps: the local part's case,
the order of References (it is the thread's chain, oldest first).

The marker is the Message-ID the executor sends with (``message_id``); the approved fields cannot
set one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions.email_fields import (
    EmailAttachment,
    address_list,
    execution_message_id,
    mail_address,
    message_id_value,
    refuse_repeats,
)
from resolveflow.gate.domain.actions.text import normalize_text

MAX_SUBJECT_CHARS = 255
MAX_BODY_CHARS = 1_000_000
MAX_RECIPIENTS = 100
MAX_REFERENCES = 100
MAX_ATTACHMENTS = 20


class EmailSendAction(BaseModel):
    """One message: From (``mailbox``), recipients, subject, body, threading and attachments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["email.send"] = "email.send"
    mailbox: str
    to: tuple[str, ...]
    cc: tuple[str, ...] = ()
    bcc: tuple[str, ...] = ()
    subject: str
    text: str
    html: str | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    attachments: tuple[EmailAttachment, ...] = ()

    @field_validator("mailbox")
    @classmethod
    def _mailbox(cls, value: str) -> str:
        return mail_address(value)

    @field_validator("to", "cc", "bcc")
    @classmethod
    def _addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return address_list(value)

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str) -> str:
        value = normalize_text(value).strip()
        if not value:
            raise ValueError("a message needs a subject")
        if "\n" in value or len(value) > MAX_SUBJECT_CHARS:
            raise ValueError(f"a subject is one line of at most {MAX_SUBJECT_CHARS} characters")
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        value = normalize_text(value)
        if not value.strip():
            raise ValueError("a message needs a text body")
        return _bounded(value, "text")

    @field_validator("html")
    @classmethod
    def _html(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = normalize_text(value)
        # An empty HTML part would show the recipient a blank message in most clients.
        if not value.strip():
            raise ValueError("an HTML part may be left out, not empty")
        return _bounded(value, "html")

    @field_validator("in_reply_to")
    @classmethod
    def _in_reply_to(cls, value: str | None) -> str | None:
        return None if value is None else message_id_value(value)

    @field_validator("references")
    @classmethod
    def _references(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        ids = tuple(message_id_value(item) for item in value)
        if len(set(ids)) != len(ids):
            raise ValueError("each Message-ID once in References")
        if len(ids) > MAX_REFERENCES:
            raise ValueError(f"at most {MAX_REFERENCES} References")
        return ids

    @field_validator("attachments")
    @classmethod
    def _attachments(cls, value: tuple[EmailAttachment, ...]) -> tuple[EmailAttachment, ...]:
        names = [item.name.casefold() for item in value]
        if len(set(names)) != len(names):
            raise ValueError("two attachments may not share a name")
        if len(value) > MAX_ATTACHMENTS:
            raise ValueError(f"at most {MAX_ATTACHMENTS} attachments")
        return tuple(sorted(value, key=lambda item: item.name))

    @model_validator(mode="after")
    def _recipients(self) -> EmailSendAction:
        if not self.to:
            raise ValueError("a message needs at least one To address")
        refuse_repeats({"to": self.to, "cc": self.cc, "bcc": self.bcc})
        if len(self.envelope_recipients) > MAX_RECIPIENTS:
            raise ValueError(f"at most {MAX_RECIPIENTS} recipients in To, Cc and Bcc together")
        return self

    @property
    def envelope_recipients(self) -> tuple[str, ...]:
        """Everyone the server is asked to deliver to (RCPT TO), Bcc included."""
        return (*self.to, *self.cc, *self.bcc)

    @property
    def repository(self) -> str:
        """Where it writes, spelled so that it never equals a repository's name."""
        return f"email:{self.mailbox}"

    @property
    def labels(self) -> tuple[str, ...]:
        """A message has no labels; the shared label checks then have nothing to check."""
        return ()

    @property
    def summary(self) -> str:
        count = len(self.envelope_recipients)
        return f"Email from {self.mailbox} to {count} recipient{'s' if count != 1 else ''}"

    def message_id(self, execution_id: str) -> str:
        return message_id(execution_id, self.mailbox)

    def canonical(self) -> dict[str, Any]:
        return {
            "attachments": [
                {"media_type": a.media_type, "name": a.name, "sha256": a.sha256, "size": a.size}
                for a in self.attachments
            ],
            "bcc": list(self.bcc),
            "cc": list(self.cc),
            "html": self.html,
            "in_reply_to": self.in_reply_to,
            "kind": self.kind,
            "mailbox": self.mailbox,
            "references": list(self.references),
            "subject": self.subject,
            "text": self.text,
            "to": list(self.to),
        }

    def digest(self) -> str:
        """SHA-256 of the canonical JSON, serialised exactly as ``actions.canonical_json``."""
        text = json.dumps(
            self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_email_send(data: Any) -> EmailSendAction:
    """Untrusted data as an ``EmailSendAction``, or one readable ``InvalidInput``."""
    try:
        return EmailSendAction.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        message = str(first.get("msg", "")).removeprefix("Value error, ")
        prefix = f"{where}: " if where else ""
        raise InvalidInput(f"invalid email.send action: {prefix}{message}") from exc


def message_id(execution_id: str, mailbox: str) -> str:
    """``<resolveflow.EXECUTION_ID@mailbox-domain>``: the marker reconciliation searches for."""
    return execution_message_id(execution_id, mailbox)


def _bounded(value: str, what: str) -> str:
    if len(value) > MAX_BODY_CHARS:
        raise ValueError(f"{what} is longer than {MAX_BODY_CHARS} characters")
    return value
