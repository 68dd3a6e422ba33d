"""Mailbox grants: which of a tenant's mailboxes a principal may approve mail from, draft from
and retrieve examples of. Addresses are kept in lower case (``mailbox_key``)."""

from __future__ import annotations

from uuid import UUID

from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def grant_mailbox(conn: Connection, tenant_id: UUID, principal_id: UUID, mailbox: str) -> bool:
    """True when the grant is new (granting again changes nothing)."""
    cursor = conn.execute(
        q("mail/store/send", "grant_mailbox"),
        {"tenant_id": tenant_id, "principal_id": principal_id, "mailbox": mailbox_key(mailbox)},
    )
    return cursor.rowcount == 1


def revoke_mailbox(conn: Connection, tenant_id: UUID, principal_id: UUID, mailbox: str) -> bool:
    """True when there was a grant to remove."""
    cursor = conn.execute(
        q("mail/store/send", "revoke_mailbox"),
        {"tenant_id": tenant_id, "principal_id": principal_id, "mailbox": mailbox_key(mailbox)},
    )
    return cursor.rowcount == 1


def granted_mailboxes(conn: Connection, tenant_id: UUID, principal_id: UUID) -> frozenset[str]:
    """The mailboxes (lower case) granted to the principal in this tenant."""
    rows = conn.execute(
        q("mail/store/send", "granted_mailboxes"),
        {"tenant_id": tenant_id, "principal_id": principal_id},
    ).fetchall()
    return frozenset(str(row["mailbox"]) for row in rows)


def approver_holds_grant(
    conn: Connection, tenant_id: UUID, approval_id: UUID, mailbox: str
) -> bool:
    """Whether the principal who gave ``approval_id`` still holds the grant for ``mailbox``."""
    row = conn.execute(
        q("mail/store/send", "approver_holds_grant"),
        {"tenant_id": tenant_id, "approval_id": approval_id, "mailbox": mailbox_key(mailbox)},
    ).fetchone()
    return bool(row and row["held"])
