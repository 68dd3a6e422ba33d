"""``resolveflow mail import|forget``: a mailbox's past mail into the index, and an obsolete
example out of it. Admin commands, like ``index``: they act on the tenant named."""

from __future__ import annotations

from pathlib import Path

import typer

from resolveflow.accounts import admin
from resolveflow.bootstrap.app import App
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.cli import common
from resolveflow.cli.output import emit, err_console, fields
from resolveflow.errors import InvalidInput
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.mailbox import tenant_mailboxes


def register(app: typer.Typer) -> None:
    app.command("import")(mail_import)
    app.command("forget")(mail_forget)


def _tenant_and_mailbox(opened: App, tenant: str | None, mailbox: str) -> tuple[str, str]:
    name = common.tenant_name(opened, tenant)
    key = mailbox_key(mailbox)
    known = tenant_mailboxes(opened.policy(), name)
    if key not in known:
        listed = ", ".join(sorted(known)) or "none"
        raise InvalidInput(
            f"{key} is not a mailbox of tenant {name} in the policy file (its mailboxes: {listed})"
        )
    return name, key


def mail_import(
    path: Path = typer.Argument(..., help="An .eml file, a folder of .eml files, mbox or Maildir."),
    mailbox: str = typer.Option(..., "--mailbox", help="The mailbox the mail is from and to."),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Import a mailbox's mail: sent replies and the requests they answer become examples the
    mail search finds. Messages already imported (by Message-ID) are left as they are."""
    from resolveflow.mail.importer import MailImporter
    from resolveflow.mail.loader import MailSource
    from resolveflow.retrieval.ingest import Indexer

    with common.app() as opened:
        name, key = _tenant_and_mailbox(opened, tenant, mailbox)
        source = MailSource(path, opened.settings.mail.bounds())
        tenant_id = admin.find_tenant(opened.db, name).id
        importer = MailImporter(opened.db, Indexer(opened.db, build_embedder(opened.settings)))
        report = importer.run(tenant_id, key, source, source.skipped)
    for _name, reason in report.skipped:  # one line each (the reason names the message)
        err_console.print(f"skipped {reason}", markup=False, highlight=False, soft_wrap=True)
    data = report.as_json()
    shown = [(k.replace("_", " "), v) for k, v in data.items() if k != "skipped_messages"]
    emit(data, as_json, lambda: fields(shown))


def mail_forget(
    message_id: str = typer.Argument(..., help="The Message-ID (a reply, or the request)."),
    mailbox: str = typer.Option(..., "--mailbox", help="The mailbox the message is in."),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Remove a message's example from retrieval now; a re-import does not bring it back."""
    from resolveflow.mail.importer import MailImporter
    from resolveflow.retrieval.ingest import Indexer

    with common.app() as opened:
        name, key = _tenant_and_mailbox(opened, tenant, mailbox)
        tenant_id = admin.find_tenant(opened.db, name).id
        importer = MailImporter(opened.db, Indexer(opened.db, build_embedder(opened.settings)))
        removed = importer.forget(tenant_id, key, message_id)
    data: dict[str, object] = {"mailbox": key, "forgotten": message_id, "removed": removed}
    emit(
        data,
        as_json,
        lambda: fields([("forgotten", message_id), ("examples removed", len(removed))]),
    )
