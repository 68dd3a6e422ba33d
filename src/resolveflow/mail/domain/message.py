"""Mail as the product holds it: one parsed message, and one past exchange used as an example.

Messages are untrusted data: their text is shown and searched, never obeyed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Direction(StrEnum):
    SENT = "sent"  # From is the mailbox: the team's reply
    RECEIVED = "received"  # a request to the mailbox


@dataclass(frozen=True)
class MailMessage:
    """One message, parsed. Addresses are bare and in lower case; ``text`` is the readable body
    (the text part, else the HTML part as text), NUL-free, with LF line endings."""

    message_id: str  # with its angle brackets: <left@right>
    from_address: str
    from_name: str | None
    to: tuple[str, ...]
    cc: tuple[str, ...]
    subject: str
    date: datetime | None
    text: str
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()  # thread order, each once

    def participants(self) -> frozenset[str]:
        return frozenset((self.from_address, *self.to, *self.cc))

    def thread_references(self) -> tuple[str, ...]:
        """References for a reply to this message: its own chain, then its Message-ID."""
        chain = [r for r in self.references if r != self.message_id]
        if self.in_reply_to and self.in_reply_to not in chain:
            chain.append(self.in_reply_to)
        return (*chain, self.message_id)


@dataclass(frozen=True)
class MailExample:
    """A past exchange retrieved for a new request: the request the mailbox answered and the
    reply it sent. ``score`` is the retrieval's relevance in [0, 1]."""

    reply_message_id: str
    mailbox: str
    subject: str
    request_text: str
    reply_text: str
    score: float
    request_message_id: str | None = None
    replied_at: datetime | None = None
    # How much the replies to the other similar requests say what this one says (``agreement``);
    # None when too few similar requests were found to tell.
    agreement: float | None = None


def message_as_json(message: MailMessage) -> dict[str, object]:
    """The stored form of a parsed message (a draft keeps the request it answers)."""
    return {
        "message_id": message.message_id,
        "from_address": message.from_address,
        "from_name": message.from_name,
        "to": list(message.to),
        "cc": list(message.cc),
        "subject": message.subject,
        "date": message.date.isoformat() if message.date else None,
        "text": message.text,
        "in_reply_to": message.in_reply_to,
        "references": list(message.references),
    }


def message_from_json(data: dict[str, object]) -> MailMessage:
    def strings(key: str) -> tuple[str, ...]:
        value = data.get(key) or []
        assert isinstance(value, list)
        return tuple(str(item) for item in value)

    date = data.get("date")
    name, reply = data.get("from_name"), data.get("in_reply_to")
    return MailMessage(
        message_id=str(data["message_id"]),
        from_address=str(data["from_address"]),
        from_name=str(name) if name is not None else None,
        to=strings("to"),
        cc=strings("cc"),
        subject=str(data.get("subject") or ""),
        date=datetime.fromisoformat(str(date)) if date else None,
        text=str(data.get("text") or ""),
        in_reply_to=str(reply) if reply is not None else None,
        references=strings("references"),
    )
