"""``mail import`` and ``mail forget``: a mailbox's messages into ``mail_messages``, and each
sent reply that answers a request into the index as two documents of kind ``email``.

The request document (source ``mail:<mailbox>``, external id the reply's Message-ID, title its
subject) holds the request's text as its body and the reply as one comment section. The chunker
then puts the subject and the request's opening in the head chunk, the one that gets a vector: a
new request is compared with past requests by meaning, and the reply's words are found by the
lexical branch. The reply document (external id the reply's Message-ID and ``#reply``, no
title) holds the reply as it would be reused (``draft.reusable_text``: no greeting, sign-off or
signature), so its head's vector is the reply's meaning: a new request is compared with what was
answered too, and on mail-rhelp-dev that finds replies closer to the real one than the request
alone (docs/email.md). The text a drafter reuses comes from ``mail_messages``, whole.

Only the mail search reads these documents (mail/search.py; migration 0017 keeps them
out of the ordinary search).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from uuid import UUID

from resolveflow.errors import NotFound
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.draft import reusable_text
from resolveflow.mail.domain.message import Direction, MailMessage
from resolveflow.mail.loader import own_words
from resolveflow.mail.store import messages as store
from resolveflow.mail.store.messages import Exchange
from resolveflow.retrieval.chunking import CommentText
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.store import documents as document_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)


REPLY_DOCUMENT = "#reply"  # after the Message-ID's ">": no Message-ID ends so


def mail_source(mailbox: str) -> str:
    """The index source of a mailbox's examples."""
    return f"mail:{mailbox_key(mailbox)}"


def reply_document_id(reply_id: str) -> str:
    """The external id of an exchange's reply document."""
    return reply_id + REPLY_DOCUMENT


def exchange_id(external_id: str) -> str:
    """The exchange (its reply's Message-ID) an email document belongs to."""
    return external_id.removesuffix(REPLY_DOCUMENT)


@dataclass
class ImportReport:
    mailbox: str
    read: int = 0
    new: int = 0
    known: int = 0  # already imported (by Message-ID): left as they were
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    examples: int = 0  # the mailbox's examples in the index after the import
    examples_indexed: int = 0  # of which written now (new or changed)

    def as_json(self) -> dict[str, object]:
        return {
            "mailbox": self.mailbox,
            "read": self.read,
            "new": self.new,
            "known": self.known,
            "skipped": len(self.skipped),
            "examples": self.examples,
            "examples_indexed": self.examples_indexed,
            "skipped_messages": [{"name": n, "reason": r} for n, r in self.skipped],
        }


class MailImporter:
    def __init__(self, db: Database, indexer: Indexer):
        self.db = db
        self.indexer = indexer

    def run(
        self,
        tenant_id: UUID,
        mailbox: str,
        messages: Iterable[MailMessage],
        skipped: list[tuple[str, str]] | None = None,
    ) -> ImportReport:
        """Store ``messages`` (those already here by Message-ID are left alone), link replies to
        requests, and bring the mailbox's examples in the index up to date. ``skipped`` is the
        source's list of unreadable messages, filled while ``messages`` is read."""
        key = mailbox_key(mailbox)
        report = ImportReport(key)
        batch: list[MailMessage] = []
        for message in messages:
            report.read += 1
            batch.append(message)
            if len(batch) >= 200:
                self._store(tenant_id, key, batch, report)
                batch = []
        self._store(tenant_id, key, batch, report)
        report.skipped = list(skipped or [])
        with self.db.tenant(tenant_id) as conn:
            store.link_replies(conn, tenant_id, key)
            rows = store.exchanges(conn, tenant_id, key)
        documents = [_document(key, row) for row in rows]
        replies = [d for d in (_reply_document(key, row) for row in rows) if d is not None]
        stats = self.indexer.upsert(tenant_id, documents)
        # An index made before reply documents existed gets them now: those examples count as
        # indexed by this import.
        reply_stats = self.indexer.upsert(tenant_id, replies)
        report.examples = len(documents)
        report.examples_indexed = max(stats.written, reply_stats.written)
        logger.info("mail imported", extra={"tenant_id": str(tenant_id), **_counts(report)})
        return report

    def _store(
        self, tenant_id: UUID, mailbox: str, batch: list[MailMessage], report: ImportReport
    ) -> None:
        if not batch:
            return
        with self.db.tenant(tenant_id) as conn:
            for message in batch:
                sent = message.from_address == mailbox
                direction = Direction.SENT if sent else Direction.RECEIVED
                # A reply keeps the team's own words: not the request it quotes, nor a signature.
                stored = _own_words(message) if sent else message
                if store.insert_message(conn, tenant_id, mailbox, stored, direction):
                    report.new += 1
                else:
                    report.known += 1

    def forget(self, tenant_id: UUID, mailbox: str, message_id: str) -> list[str]:
        """Take the message's example(s) out of the index now and mark it forgotten, so a
        re-import does not bring it back. Returns the examples removed (reply Message-IDs)."""
        key = mailbox_key(mailbox)
        wanted = message_id.strip()
        if not wanted.startswith("<"):
            wanted = f"<{wanted}>"
        with self.db.tenant(tenant_id) as conn:
            direction = store.forget_message(conn, tenant_id, key, wanted)
            if direction is None:
                raise NotFound(f"no message {wanted} in mailbox {key}")
            replies = (
                [wanted]
                if direction is Direction.SENT
                else store.replies_answering(conn, tenant_id, key, wanted)
            )
            ids = [*replies, *(reply_document_id(r) for r in replies)]
            removed = document_store.remove_documents(conn, tenant_id, mail_source(key), ids)
        removed = sorted({exchange_id(r) for r in removed})
        logger.info("mail forgotten", extra={"tenant_id": str(tenant_id), "removed": len(removed)})
        return removed


def _own_words(message: MailMessage) -> MailMessage:
    return replace(message, text=own_words(message.text))


def _document(mailbox: str, row: Exchange) -> SourceDocument:
    return SourceDocument(
        source=mail_source(mailbox),
        external_id=row.reply_id,
        kind="email",
        title=row.subject or "(no subject)",
        body=row.request_text,
        comments=(CommentText(author=mailbox, body=row.reply_text),),
        created_at=row.sent_at,
    )


def _reply_document(mailbox: str, row: Exchange) -> SourceDocument | None:
    text = reusable_text(row.reply_text)
    if not text:
        return None
    return SourceDocument(
        source=mail_source(mailbox),
        external_id=reply_document_id(row.reply_id),
        kind="email",
        title="",
        body=text,
        created_at=row.sent_at,
    )


def _counts(report: ImportReport) -> dict[str, object]:
    data = report.as_json()
    data.pop("skipped_messages")
    return data
