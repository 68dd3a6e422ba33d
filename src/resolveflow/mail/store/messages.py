"""Mail messages of a tenant's mailboxes and the mail search's rows (mail/store/index.sql)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.mail.domain import recipients
from resolveflow.mail.domain.message import Direction, MailMessage
from resolveflow.mail.domain.recipients import ReceivedMessage, ReceivedThread
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class Exchange:
    """A sent reply with the request it answers: one example of how the mailbox replies."""

    reply_id: str
    subject: str
    reply_text: str
    sent_at: datetime | None
    request_id: str
    request_text: str


@dataclass(frozen=True)
class MailboxExchange(Exchange):
    mailbox: str


def insert_message(
    conn: Connection, tenant_id: UUID, mailbox: str, message: MailMessage, direction: Direction
) -> bool:
    """Store the message unless its Message-ID is already in the mailbox; True when new."""
    root = (
        message.references[0] if message.references else message.in_reply_to or message.message_id
    )
    row = conn.execute(
        q("mail/store/index", "insert_message"),
        {
            "tenant_id": tenant_id,
            "mailbox": mailbox,
            "message_id": message.message_id,
            "direction": direction.value,
            "in_reply_to": message.in_reply_to,
            "references": list(message.references),
            "thread_root": root,
            "from_address": message.from_address,
            "from_name": message.from_name,
            "to": list(message.to),
            "cc": list(message.cc),
            "subject": message.subject,
            "sent_at": message.date,
            "text": message.text,
        },
    ).fetchone()
    return row is not None


def link_replies(conn: Connection, tenant_id: UUID, mailbox: str) -> int:
    """Link each unlinked sent reply to the request it answers, where that request is here."""
    cursor = conn.execute(
        q("mail/store/index", "link_replies"), {"tenant_id": tenant_id, "mailbox": mailbox}
    )
    return cursor.rowcount


def exchanges(conn: Connection, tenant_id: UUID, mailbox: str) -> list[Exchange]:
    params = {"tenant_id": tenant_id, "mailbox": mailbox}
    return typed.every(conn, Exchange, q("mail/store/index", "exchanges"), params)


def forget_message(
    conn: Connection, tenant_id: UUID, mailbox: str, message_id: str
) -> Direction | None:
    """Mark the message forgotten (a re-import keeps it so); None when it is not there."""
    row = conn.execute(
        q("mail/store/index", "forget_message"),
        {"tenant_id": tenant_id, "mailbox": mailbox, "message_id": message_id},
    ).fetchone()
    return Direction(row["direction"]) if row is not None else None


def replies_answering(
    conn: Connection, tenant_id: UUID, mailbox: str, message_id: str
) -> list[str]:
    rows = conn.execute(
        q("mail/store/index", "replies_answering"),
        {"tenant_id": tenant_id, "mailbox": mailbox, "message_id": message_id},
    ).fetchall()
    return [row["message_id"] for row in rows]


def received_thread(
    conn: Connection, tenant_id: UUID, mailbox: str, request: MailMessage
) -> ReceivedThread:
    """The thread of ``request`` as the mailbox received it: the stored received message with
    its Message-ID, if it came from the request's From (``recipients.received_thread``)."""
    row = conn.execute(
        q("mail/store/index", "received_message"),
        {"tenant_id": tenant_id, "mailbox": mailbox, "message_id": request.message_id},
    ).fetchone()
    stored = (
        ReceivedMessage(row["from_address"], tuple(row["to_addresses"]), tuple(row["cc_addresses"]))
        if row is not None
        else None
    )
    return recipients.received_thread(request, stored)


def thread(conn: Connection, tenant_id: UUID, mailbox: str, message_id: str) -> list[str]:
    """The Message-IDs of the message's thread, oldest first ([] when it is not here)."""
    params = {"tenant_id": tenant_id, "mailbox": mailbox, "message_id": message_id}
    root = conn.execute(q("mail/store/index", "thread_root"), params).fetchone()
    if root is None:
        return []
    rows = conn.execute(
        q("mail/store/index", "thread"), {**params, "thread_root": root["thread_root"]}
    ).fetchall()
    return [row["message_id"] for row in rows]


@dataclass(frozen=True)
class MailCandidate:
    """A mail chunk either branch of the mail search found: the fusion's input
    (``retrieval.fusion.CandidateRow``), like the main search's. A rank is None when that branch
    did not find the chunk."""

    chunk_id: int
    document_id: UUID
    ordinal: int
    section: str
    text: str
    distance: float
    vrank: int | None
    lexical_score: float
    lrank: int | None
    source: str
    external_id: str  # the sent reply's Message-ID
    kind: str
    title: str
    mailbox: str  # nullable column, but a mail chunk's document is its mailbox's


def mail_candidates(conn: Connection, params: dict[str, Any]) -> list[MailCandidate]:
    return typed.every(conn, MailCandidate, q("mail/store/index", "mail_candidates"), params)


def exchange_texts(
    conn: Connection, tenant_id: UUID, mailboxes: Sequence[str], reply_ids: Sequence[str]
) -> list[MailboxExchange]:
    params = {"tenant_id": tenant_id, "mailboxes": list(mailboxes), "reply_ids": list(reply_ids)}
    return typed.every(conn, MailboxExchange, q("mail/store/index", "exchange_texts"), params)


@dataclass(frozen=True)
class WordCount:
    word: str
    stop: bool  # the index keeps no lexeme of it
    exchanges: int  # the mailbox's examples that use it


def word_counts(
    conn: Connection, tenant_id: UUID, mailbox: str, words: Sequence[str], reply_suffix: str
) -> tuple[int, list[WordCount]]:
    """The mailbox's examples in the index, and how many of them use each of ``words``.
    ``reply_suffix`` ends the external id of a reply document (``importer``): not counted."""
    params = {"tenant_id": tenant_id, "mailbox": mailbox, "reply_documents": f"%{reply_suffix}"}
    row = conn.execute(q("mail/store/index", "mailbox_examples"), params).fetchone()
    total = int(row["examples"]) if row is not None else 0
    if not words:
        return total, []
    counts = typed.every(
        conn, WordCount, q("mail/store/index", "word_exchanges"), {**params, "words": list(words)}
    )
    return total, counts


@dataclass(frozen=True)
class HeadDistance:
    mailbox: str
    external_id: str
    distance: float | None  # None: the document has no vector in this space


def head_distances(conn: Connection, params: dict[str, Any]) -> list[HeadDistance]:
    return typed.every(conn, HeadDistance, q("mail/store/index", "head_distances"), params)
