"""Email drafts and their versions (migration 0018): insert-only, tenant-scoped."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.errors import NotFound
from resolveflow.mail.domain.message import MailMessage, message_as_json, message_from_json
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


@dataclass(frozen=True)
class DraftRecord:
    id: UUID
    tenant_id: UUID
    mailbox: str
    request: MailMessage
    facts: str
    lineage_id: UUID | None
    created_by: UUID | None
    created_at: datetime


@dataclass(frozen=True)
class VersionRecord:
    draft_id: UUID
    version: int
    author_kind: str  # deterministic | model | reviewer
    based_on: int | None
    provider: str | None
    model: str | None
    prompt_version: str | None
    subject: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    bcc: tuple[str, ...]
    body: str
    in_reply_to: str | None
    references: tuple[str, ...]
    examples: tuple[dict[str, Any], ...]
    missing_information: tuple[str, ...]
    findings: tuple[dict[str, str], ...]
    facts: str  # the staff facts this version was written and checked with
    proposal_id: UUID | None
    created_by: UUID | None
    created_at: datetime

    @property
    def passed(self) -> bool:
        return not self.findings


def _draft(row: dict[str, Any]) -> DraftRecord:
    return DraftRecord(
        id=row["id"],
        tenant_id=row["tenant_id"],
        mailbox=row["mailbox"],
        request=message_from_json(row["request"]),
        facts=row["facts"],
        lineage_id=row["lineage_id"],
        created_by=row["created_by"],
        created_at=row["created_at"],
    )


def _version(row: dict[str, Any]) -> VersionRecord:
    return VersionRecord(
        draft_id=row["draft_id"],
        version=row["version"],
        author_kind=row["author_kind"],
        based_on=row["based_on"],
        provider=row["provider"],
        model=row["model"],
        prompt_version=row["prompt_version"],
        subject=row["subject"],
        to=tuple(row["to_addresses"]),
        cc=tuple(row["cc_addresses"]),
        bcc=tuple(row["bcc_addresses"]),
        body=row["body"],
        in_reply_to=row["in_reply_to"],
        references=tuple(row["reference_ids"]),
        examples=tuple(row["examples"]),
        missing_information=tuple(row["missing_information"]),
        findings=tuple(row["findings"]),
        facts=row["facts"],
        proposal_id=row["proposal_id"],
        created_by=row["created_by"],
        created_at=row["created_at"],
    )


def insert_draft(
    conn: Connection,
    tenant_id: UUID,
    *,
    mailbox: str,
    request: MailMessage,
    facts: str,
    created_by: UUID | None,
) -> DraftRecord:
    row = conn.execute(
        q("mail/store/drafts", "insert_draft"),
        {
            "tenant_id": tenant_id,
            "mailbox": mailbox,
            "request": Jsonb(message_as_json(request)),
            "request_message_id": request.message_id,
            "facts": facts,
            "created_by": created_by,
        },
    ).fetchone()
    assert row is not None
    return _draft(row)


def draft_by_id(
    conn: Connection, tenant_id: UUID, draft_id: UUID, *, lock: bool = False
) -> DraftRecord:
    if lock:
        conn.execute(
            q("mail/store/drafts", "lock_draft"), {"tenant_id": tenant_id, "draft_id": draft_id}
        )
    row = conn.execute(
        q("mail/store/drafts", "draft_by_id"), {"tenant_id": tenant_id, "draft_id": draft_id}
    ).fetchone()
    if row is None:
        raise NotFound("no such draft")
    return _draft(row)


def set_lineage(conn: Connection, tenant_id: UUID, draft_id: UUID, lineage_id: UUID) -> None:
    conn.execute(
        q("mail/store/drafts", "set_lineage"),
        {"tenant_id": tenant_id, "draft_id": draft_id, "lineage_id": lineage_id},
    )


def insert_version(conn: Connection, tenant_id: UUID, fields: dict[str, Any]) -> VersionRecord:
    """The next version of a draft (call with the draft locked: ``draft_by_id(lock=True)``)."""
    row = conn.execute(
        q("mail/store/drafts", "insert_version"),
        {
            **fields,
            "tenant_id": tenant_id,
            "examples": Jsonb(list(fields["examples"])),
            "findings": Jsonb(list(fields["findings"])),
        },
    ).fetchone()
    assert row is not None
    return _version(row)


def versions(conn: Connection, tenant_id: UUID, draft_id: UUID) -> list[VersionRecord]:
    rows = conn.execute(
        q("mail/store/drafts", "versions"), {"tenant_id": tenant_id, "draft_id": draft_id}
    ).fetchall()
    return [_version(row) for row in rows]


@dataclass(frozen=True)
class RecentDraft:
    """A draft in the list of recent ones: what it answers, and how many versions it has."""

    id: UUID
    mailbox: str
    request_message_id: str
    subject: str | None  # the request's
    requester: str | None  # the request's sender
    created_at: datetime
    lineage_id: UUID | None
    versions: int | None  # the latest version's number


def recent_drafts(
    conn: Connection, tenant_id: UUID, mailboxes: frozenset[str], limit: int = 50
) -> list[RecentDraft]:
    params = {"tenant_id": tenant_id, "mailboxes": sorted(mailboxes), "limit": limit}
    return typed.every(conn, RecentDraft, q("mail/store/drafts", "recent_drafts"), params)


def draft_of_proposal(
    conn: Connection, tenant_id: UUID, proposal_id: UUID
) -> tuple[UUID, int] | None:
    row = conn.execute(
        q("mail/store/drafts", "draft_of_proposal"),
        {"tenant_id": tenant_id, "proposal_id": proposal_id},
    ).fetchone()
    return None if row is None else (row["draft_id"], row["version"])


def draft_of_lineage(conn: Connection, tenant_id: UUID, lineage_id: UUID) -> UUID | None:
    """The draft whose passing versions became this proposal lineage, if a draft made it."""
    row = conn.execute(
        q("mail/store/drafts", "draft_of_lineage"),
        {"tenant_id": tenant_id, "lineage_id": lineage_id},
    ).fetchone()
    return None if row is None else UUID(str(row["id"]))
