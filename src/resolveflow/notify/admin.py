"""An operator's commands on a tenant's own notification webhook (``resolveflow notify``): set,
show, remove and a test message. The URL and the HMAC key are stored encrypted
(``notify/store/webhooks.py``); what is shown of a URL is its scheme and host only, and the audit
names the format, never the URL or the key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from resolveflow.accounts.admin import find_tenant, operator_actor
from resolveflow.domain.network_addresses import AddressPolicy
from resolveflow.domain.records import Tenant
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import ConfigError
from resolveflow.notify.domain.destination import Destination, destination
from resolveflow.notify.domain.message import NotifyFormat, trial_body
from resolveflow.notify.notifier import Sender
from resolveflow.notify.store import webhooks as store
from resolveflow.store import audit
from resolveflow.store.database import Connection, Database
from resolveflow.store.token_cipher import TokenCipher


class WebhookSource(StrEnum):
    TENANT = "tenant"  # its own webhook
    PROCESS = "process"  # RESOLVEFLOW_NOTIFY_URL
    NONE = "none"  # nowhere: nothing is sent


@dataclass(frozen=True)
class WebhookView:
    """Where a tenant's notifications go, as it may be shown."""

    tenant: str
    source: WebhookSource
    url: str | None  # scheme and host only
    format: NotifyFormat | None
    signed: bool
    updated_at: datetime | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "source": self.source.value,
            "url": self.url,
            "format": self.format.value if self.format else None,
            "signed": self.signed,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }


def set_webhook(
    db: Database,
    cipher: TokenCipher,
    tenant_name: str,
    fmt: NotifyFormat,
    url: str,
    secret: str | None,
    policy: AddressPolicy,
    resolves_inward: Callable[[Destination], None] | None = None,
) -> WebhookView:
    """Store (or replace) the tenant's own webhook, encrypted. A host internal by its spelling
    is refused; ``resolves_inward`` (the adapter's DNS check) refuses one whose name resolves
    inward now; wherever it resolves later is checked again when a message is sent."""
    checked = destination(url, fmt, secret, policy)
    if resolves_inward is not None:
        resolves_inward(checked)
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        store.save_webhook(conn, cipher, tenant.id, checked)
        details: dict[str, object] = {"format": fmt.value, "signed": checked.secret is not None}
        _audit(conn, tenant, AuditEvent.NOTIFY_WEBHOOK_SET, details)
    return _view(tenant.name, WebhookSource.TENANT, checked)


def remove_webhook(db: Database, tenant_name: str) -> bool:
    """Whether the tenant had a webhook of its own; it is told through the process's from now."""
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        removed = store.remove_webhook(conn, tenant.id)
        if removed:
            _audit(conn, tenant, AuditEvent.NOTIFY_WEBHOOK_REMOVED, {})
    return removed


def _audit(conn: Connection, tenant: Tenant, event: AuditEvent, details: dict[str, object]) -> None:
    """What an operator did to the tenant's webhook: never its URL or key."""
    audit.record(
        conn,
        tenant_id=tenant.id,
        actor=operator_actor(),
        event=event,
        subject_type="tenant",
        subject_id=tenant.name,
        details=details,
    )


def webhook_of(
    db: Database, cipher: TokenCipher | None, tenant_name: str, default: Destination | None
) -> WebhookView:
    found, _ = _resolve(db, cipher, tenant_name, default)
    return found


def send_test(
    db: Database,
    cipher: TokenCipher | None,
    tenant_name: str,
    default: Destination | None,
    make_sender: Callable[[Destination], Sender],
) -> WebhookView:
    """Send one test message where the tenant's notifications go; raises the sender's error
    (in our words) when it does not arrive."""
    view, where = _resolve(db, cipher, tenant_name, default)
    if where is None:
        raise ConfigError(
            f"tenant {tenant_name} has no notification webhook: `resolveflow notify set` "
            "or RESOLVEFLOW_NOTIFY_URL"
        )
    sender: Sender = make_sender(where)
    try:
        sender.send(trial_body(view.tenant, where.format))
    finally:
        sender.close()
    return view


def _resolve(
    db: Database, cipher: TokenCipher | None, tenant_name: str, default: Destination | None
) -> tuple[WebhookView, Destination | None]:
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        own, where = store.destination_for(conn, cipher, tenant.id, default)
    if where is None:
        return WebhookView(tenant.name, WebhookSource.NONE, None, None, False), None
    if own is None:
        return _view(tenant.name, WebhookSource.PROCESS, where), where
    return _view(tenant.name, WebhookSource.TENANT, where, own.updated_at), where


def _view(
    tenant: str,
    source: WebhookSource,
    where: Destination,
    updated_at: datetime | None = None,
) -> WebhookView:
    return WebhookView(
        tenant, source, where.shown, where.format, where.secret is not None, updated_at
    )
