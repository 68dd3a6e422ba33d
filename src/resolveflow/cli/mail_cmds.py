"""``resolveflow mail``: a tenant's mailboxes. Each part lives in its own module and adds its
commands here (credentials, import and forget, drafts)."""

from __future__ import annotations

import typer

from resolveflow.cli import mail_credentials_cmds, mail_draft_cmds, mail_import_cmds

mail_app = typer.Typer(
    help="Email: import sent mail, draft replies, store mailbox credentials.",
    no_args_is_help=True,
)

mail_draft_cmds.register(mail_app)
mail_import_cmds.register(mail_app)
mail_credentials_cmds.register(mail_app)
