"""``resolveflow notify``: a tenant's own notification webhook (docs/notifications.md).

The URL (a Slack URL is itself a credential) and the HMAC key are read from stdin only, never
from an argument (it would sit in the shell's history and the process list), and never printed:
what is shown of a URL is its scheme and host.
"""

from __future__ import annotations

import typer

from resolveflow.bootstrap.notify import process_destination, refuse_inward, sender_for
from resolveflow.cli import common
from resolveflow.cli.output import console, emit
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.notify import admin
from resolveflow.notify.admin import WebhookSource, WebhookView
from resolveflow.notify.domain.message import NotifyFormat
from resolveflow.store.token_cipher import KEY_SETTING

notify_app = typer.Typer(
    help="Where each tenant's notifications about waiting proposals go.", no_args_is_help=True
)


@notify_app.command("set")
def set_webhook(
    tenant: str | None = common.TenantOption,
    fmt: NotifyFormat = typer.Option(
        NotifyFormat.SLACK, "--format", help="slack ({'text': ...}) or json (signed)."
    ),
    stdin: bool = typer.Option(
        False,
        "--stdin",
        help="Read the URL from stdin's first line (and, for json, the HMAC key from the second).",
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Give the tenant its own webhook: its proposals are told there, no longer through
    RESOLVEFLOW_NOTIFY_URL. Stored encrypted; never printed."""
    if not stdin:
        raise InvalidInput("give the URL on stdin with --stdin (never on the command line)")
    with common.app() as opened:
        cipher = opened.token_cipher()
        if cipher is None:  # checked before stdin is read: nobody pastes a secret then refused
            raise ConfigError(f"set {KEY_SETTING} to store a webhook encrypted")
        name = common.tenant_name(opened, tenant)
        lines = typer.get_text_stream("stdin").read().splitlines()
        url = lines[0] if lines else ""
        secret = lines[1] if len(lines) > 1 and lines[1].strip() else None
        policy = opened.settings.notify.address_policy()
        view = admin.set_webhook(
            opened.db,
            cipher,
            name,
            fmt,
            url,
            secret,
            policy,
            lambda where: refuse_inward(where.url, policy, opened.settings.notify.timeout_seconds),
        )
    _print(view, as_json, "stored")


@notify_app.command("show")
def show(tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption) -> None:
    """Where the tenant's notifications go: its own webhook, the process's, or nowhere."""
    with common.app() as opened:
        name = common.tenant_name(opened, tenant)
        default = process_destination(opened.settings)
        view = admin.webhook_of(opened.db, opened.token_cipher(), name, default)
    _print(view, as_json, None)


@notify_app.command("remove")
def remove(tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption) -> None:
    """Remove the tenant's own webhook; the process's (if any) tells it from then on."""
    with common.app() as opened:
        name = common.tenant_name(opened, tenant)
        removed = admin.remove_webhook(opened.db, name)
    emit(
        {"tenant": name, "removed": removed},
        as_json,
        lambda: console.print(
            f"tenant {name}: its own webhook removed"
            if removed
            else f"tenant {name} had no webhook of its own"
        ),
    )


@notify_app.command("test")
def test(tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption) -> None:
    """Send one test message where the tenant's notifications go, now."""
    with common.app() as opened:
        name = common.tenant_name(opened, tenant)
        settings = opened.settings
        view = admin.send_test(
            opened.db,
            opened.token_cipher(),
            name,
            process_destination(settings),
            lambda where: sender_for(settings, where),
        )
    _print(view, as_json, "test message delivered")


def _print(view: WebhookView, as_json: bool, done: str | None) -> None:
    def words() -> None:
        if view.source is WebhookSource.NONE:
            console.print(f"tenant {view.tenant}: no notification webhook (nothing is sent)")
            return
        whose = (
            "its own webhook" if view.source is WebhookSource.TENANT else "the process's webhook"
        )
        signed = ", signed" if view.signed else ""
        prefix = f"{done}: " if done else ""
        console.print(f"{prefix}tenant {view.tenant}: {whose}, {view.url} ({view.format}{signed})")

    emit(view.as_json(), as_json, words)
