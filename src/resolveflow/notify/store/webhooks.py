"""Each tenant's own notification webhook (migration 0033), encrypted at rest with the tokens'
cipher. The caller owns the transaction.

The associated data names the tenant and the part (the URL or the HMAC key), so a ciphertext
copied to another tenant's row, or passed off as the other part, does not decrypt. The URL and
the key are returned by ``tenant_webhook`` only; nothing here logs or prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

from resolveflow.notify.domain.destination import Destination
from resolveflow.notify.domain.message import NotifyFormat
from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import TokenCipher, TokenOwner, TokenUnreadable

_Q = "notify/store/webhooks"
Part = Literal["url", "secret"]


@dataclass(frozen=True)
class WebhookOwner(TokenOwner):
    """A tenant's webhook URL or key as the cipher's owner."""

    part: str = "url"

    def associated_data(self) -> bytes:
        return f"resolveflow notify webhook v1|{self.tenant_id}|{self.part}".encode()


@dataclass(frozen=True)
class StoredWebhook:
    destination: Destination
    updated_at: datetime


def _owner(tenant_id: UUID, part: Part) -> WebhookOwner:
    return WebhookOwner(
        tenant_id=tenant_id, principal_id=tenant_id, subject="the notification webhook", part=part
    )


def save_webhook(
    conn: Connection, cipher: TokenCipher, tenant_id: UUID, destination: Destination
) -> None:
    secret = destination.secret
    conn.execute(
        q(_Q, "save_webhook"),
        {
            "tenant_id": tenant_id,
            "format": destination.format.value,
            "url_ciphertext": cipher.encrypt(destination.url, _owner(tenant_id, "url")),
            "secret_ciphertext": (
                cipher.encrypt(secret, _owner(tenant_id, "secret")) if secret else None
            ),
        },
    )


def tenant_webhook(conn: Connection, cipher: TokenCipher, tenant_id: UUID) -> StoredWebhook | None:
    """The tenant's own webhook in clear, or None when it has none; ``TokenUnreadable`` when
    it does not decrypt with any configured key."""
    row = conn.execute(q(_Q, "webhook"), {"tenant_id": tenant_id}).fetchone()
    if row is None:
        return None
    try:
        url = cipher.decrypt(row["url_ciphertext"], _owner(tenant_id, "url"))
        sealed = row["secret_ciphertext"]
        secret = cipher.decrypt(sealed, _owner(tenant_id, "secret")) if sealed else None
    except TokenUnreadable:
        raise TokenUnreadable(
            "the notification webhook stored for this tenant does not decrypt with "
            "any configured key (altered, or copied from another tenant); set it again with "
            "`resolveflow notify set`"
        ) from None
    destination = Destination(url, NotifyFormat(row["format"]), secret)
    return StoredWebhook(destination, row["updated_at"])


def remove_webhook(conn: Connection, tenant_id: UUID) -> bool:
    """Whether the tenant had a webhook of its own (now gone)."""
    return conn.execute(q(_Q, "remove_webhook"), {"tenant_id": tenant_id}).rowcount > 0


def destination_for(
    conn: Connection, cipher: TokenCipher | None, tenant_id: UUID, default: Destination | None
) -> tuple[StoredWebhook | None, Destination | None]:
    """The tenant's own webhook (None without one, or without a cipher to read it with) and where
    its notifications go: its own, else the process's ``default``, else nowhere (None).
    ``TokenUnreadable`` when its own does not decrypt: never the default in its place."""
    own = tenant_webhook(conn, cipher, tenant_id) if cipher is not None else None
    return own, own.destination if own is not None else default
