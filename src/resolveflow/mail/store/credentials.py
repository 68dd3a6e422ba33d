"""Each mailbox's SMTP (and IMAP) secret, encrypted at rest with the tokens' cipher, and the bytes
of approved attachments by SHA-256.

The associated data names the tenant, the mailbox and the kind of secret, so a ciphertext copied
to another tenant's or another mailbox's row (or passed off as the other kind) does not decrypt.
The secret is never returned by anything but ``mailbox_secret``, never logged and never printed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal
from uuid import UUID

from resolveflow.errors import InvalidInput
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import TokenCipher, TokenOwner, TokenUnreadable

SecretKind = Literal["password", "xoauth2"]
MAX_SECRET_CHARS = 8192  # OAuth2 access tokens run to a few kilobytes


@dataclass(frozen=True)
class MailboxSecretOwner(TokenOwner):
    """A mailbox's secret as the cipher's owner: tenant, mailbox and kind are the associated data."""

    mailbox: str = ""
    kind: str = "password"

    def associated_data(self) -> bytes:
        return f"resolveflow mailbox secret v1|{self.tenant_id}|{self.mailbox}|{self.kind}".encode()


@dataclass(frozen=True)
class MailboxSecret:
    kind: SecretKind
    secret: str = field(repr=False)


def _owner(tenant_id: UUID, mailbox: str, kind: str) -> MailboxSecretOwner:
    return MailboxSecretOwner(
        tenant_id=tenant_id, principal_id=tenant_id, subject=mailbox, mailbox=mailbox, kind=kind
    )


def save_mailbox_secret(
    conn: Connection,
    cipher: TokenCipher,
    tenant_id: UUID,
    mailbox: str,
    kind: SecretKind,
    secret: str,
) -> None:
    secret = secret.strip("\r\n")
    if not secret.strip() or any(ch in secret for ch in "\r\n\x00"):
        raise InvalidInput("a mailbox secret is one non-empty line; nothing was stored")
    if len(secret) > MAX_SECRET_CHARS:
        raise InvalidInput(f"a mailbox secret is at most {MAX_SECRET_CHARS} characters")
    key = mailbox_key(mailbox)
    conn.execute(
        q("mail/store/send", "save_mailbox_credential"),
        {
            "tenant_id": tenant_id,
            "mailbox": key,
            "kind": kind,
            "ciphertext": cipher.encrypt(secret, _owner(tenant_id, key, kind)),
        },
    )


def mailbox_secret(
    conn: Connection, cipher: TokenCipher, tenant_id: UUID, mailbox: str
) -> MailboxSecret | None:
    """The mailbox's secret in clear, or None when none is stored."""
    key = mailbox_key(mailbox)
    row = conn.execute(
        q("mail/store/send", "mailbox_credential"), {"tenant_id": tenant_id, "mailbox": key}
    ).fetchone()
    if row is None:
        return None
    kind: SecretKind = "xoauth2" if row["kind"] == "xoauth2" else "password"
    try:
        return MailboxSecret(kind, cipher.decrypt(row["ciphertext"], _owner(tenant_id, key, kind)))
    except TokenUnreadable:
        raise TokenUnreadable(
            f"the secret stored for mailbox {key} does not decrypt with any configured key "
            "(altered, or copied from another row); give it again with "
            "`resolveflow mail credentials set`"
        ) from None


def save_attachment(conn: Connection, tenant_id: UUID, media_type: str, content: bytes) -> str:
    """Store a file's bytes by SHA-256 (once per tenant); its digest, for the action."""
    sha256 = hashlib.sha256(content).hexdigest()
    conn.execute(
        q("mail/store/send", "save_attachment"),
        {"tenant_id": tenant_id, "sha256": sha256, "media_type": media_type, "bytes": content},
    )
    return sha256


def attachments(conn: Connection, tenant_id: UUID, sha256s: Iterable[str]) -> dict[str, bytes]:
    """The stored bytes of each of ``sha256s`` that exists (the message builder checks them)."""
    wanted = sorted(set(sha256s))
    if not wanted:
        return {}
    rows = conn.execute(
        q("mail/store/send", "attachments_by_sha256"), {"tenant_id": tenant_id, "sha256s": wanted}
    ).fetchall()
    return {str(row["sha256"]): bytes(row["bytes"]) for row in rows}
