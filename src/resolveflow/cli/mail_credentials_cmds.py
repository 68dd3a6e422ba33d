"""``resolveflow mail credentials set``: a mailbox's SMTP (and IMAP) secret, stored encrypted.

The secret is read from stdin only (never an argument: it would sit in the shell's history and
the process list), never printed and never logged; the audit names the kind of secret only.
"""

from __future__ import annotations

import typer

from resolveflow.cli import common
from resolveflow.cli.output import console, emit
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.mail import admin as mail_admin
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.mail.store.credentials import SecretKind
from resolveflow.store.token_cipher import KEY_SETTING

credentials_app = typer.Typer(
    help="Each mailbox's secret (password or OAuth2 token), stored encrypted.",
    no_args_is_help=True,
)


@credentials_app.command("set")
def credentials_set(
    mailbox: str = typer.Option(..., "--mailbox", help="A mailbox of the tenant's policy."),
    tenant: str | None = common.TenantOption,
    stdin: bool = typer.Option(False, "--stdin", help="Read the secret from stdin (required)."),
    xoauth2: bool = typer.Option(
        False, "--xoauth2", help="The secret is an OAuth2 access token (AUTH XOAUTH2)."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Store (or replace) the mailbox's secret, encrypted; it is never printed."""
    if not stdin:
        raise InvalidInput("give the secret on stdin with --stdin (never on the command line)")
    with common.app() as opened:
        cipher = opened.token_cipher()
        if cipher is None:  # checked before stdin is read: nobody types a secret then refused
            raise ConfigError(f"set {KEY_SETTING} to store a mailbox secret encrypted")
        name = common.tenant_name(opened, tenant)
        configured = tenant_mailboxes(opened.policy(), name)
        mail_admin.configured_mailbox(name, mailbox, configured)
        given = typer.get_text_stream("stdin").read()
        kind: SecretKind = "xoauth2" if xoauth2 else "password"
        key = mail_admin.set_mailbox_secret(
            opened.db, cipher, name, mailbox, configured, kind, given
        )
    emit(
        {"tenant": name, "mailbox": key, "kind": kind, "stored": True},
        as_json,
        lambda: console.print(f"{kind} of {key} stored (tenant {name})"),
    )


def register(app: typer.Typer) -> None:
    app.add_typer(credentials_app, name="credentials")
