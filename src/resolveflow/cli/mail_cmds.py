"""``resolveflow mail``: a tenant's mailboxes. Each part lives in its own module and adds its
commands here (credentials, import and forget, drafts)."""

from __future__ import annotations

import typer

mail_app = typer.Typer(
    help="Email: import sent mail, draft replies, store mailbox credentials.",
    no_args_is_help=True,
)
