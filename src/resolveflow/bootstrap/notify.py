"""Wiring the notifier (``notify/``) from the settings: the process's webhook, the senders, the
approval window and the inbox's address. Neither a process webhook nor a cipher (tenants' own
webhooks are stored encrypted): no notifier, and the worker's round does nothing."""

from __future__ import annotations

from resolveflow.adapters.notify_webhook import WebhookSender, refuse_inward
from resolveflow.config import Settings
from resolveflow.notify.domain.destination import Destination
from resolveflow.notify.domain.message import NotifyFormat
from resolveflow.notify.notifier import Notifier, NotifyConfig, Sender
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher

__all__ = ["build_notifier", "process_destination", "refuse_inward", "sender_for"]

NOTIFY_BATCH = 20  # messages per tenant per round (a round a minute)
_EVERYWHERE = {"0.0.0.0", "::", ""}  # noqa: S104 - read, not bound to


def inbox_base_url(settings: Settings) -> str:
    """Where people reach the web app: ``RESOLVEFLOW_WEB_PUBLIC_URL``, else ``serve``'s own
    address (a link that only works on this machine: set the public URL in production)."""
    web = settings.web
    if web.public_url:
        return web.public_url
    host = "127.0.0.1" if web.host in _EVERYWHERE else web.host
    return f"http://[{host}]:{web.port}" if ":" in host else f"http://{host}:{web.port}"


def notify_config(settings: Settings) -> NotifyConfig:
    notify = settings.notify
    return NotifyConfig(
        inbox_base_url=inbox_base_url(settings),
        ttl_seconds=settings.approval.ttl_seconds,
        remind_before_seconds=notify.remind_before_seconds,
        max_attempts=notify.max_attempts,
        retry_base_seconds=notify.retry_base_seconds,
        retry_max_seconds=max(notify.retry_max_seconds, notify.retry_base_seconds),
        batch=NOTIFY_BATCH,
        # A message's lease outlasts its send, which its deadline ends: no other round (a
        # minute later, maybe in another worker) sends it again while it is in flight.
        lease_seconds=notify.timeout_seconds + 60,
    )


def process_destination(settings: Settings) -> Destination | None:
    """``RESOLVEFLOW_NOTIFY_URL`` (with its format and key), for tenants without their own. The
    settings held its host to the tenants' destination policy when they were read."""
    notify = settings.notify
    if notify.url is None:
        return None
    secret = notify.secret.get_secret_value() if notify.secret else None
    return Destination(notify.url.get_secret_value(), NotifyFormat(notify.format), secret)


def sender_for(settings: Settings, where: Destination) -> Sender:
    secret = where.secret.encode() if where.secret else None
    return WebhookSender(
        where.url,
        timeout_seconds=settings.notify.timeout_seconds,
        policy=settings.notify.address_policy(),
        secret=secret,
    )


def build_notifier(settings: Settings, db: Database, cipher: TokenCipher | None) -> Notifier | None:
    default = process_destination(settings)
    if default is None and cipher is None:
        return None
    return Notifier(
        db,
        notify_config(settings),
        lambda destination: sender_for(settings, destination),
        default=default,
        cipher=cipher,
    )
