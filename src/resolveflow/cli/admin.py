"""Operator commands: database, tenants, principals and their GitHub tokens, repositories."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.text import Text

from resolveflow.accounts import admin
from resolveflow.bootstrap.app import after_upgrade, build_token_cipher, database_url
from resolveflow.cli import common, plain
from resolveflow.cli.output import console, emit, fields, table, whole
from resolveflow.domain.records import Role
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.store.database import Database
from resolveflow.store.migrate import status, upgrade
from resolveflow.store.token_cipher import KEY_SETTING

db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
tenants_app = typer.Typer(help="Tenants.", no_args_is_help=True)
principals_app = typer.Typer(
    help="People and services that act through ResolveFlow.", no_args_is_help=True
)
repos_app = typer.Typer(help="The repositories a tenant may act on.", no_args_is_help=True)
tokens_app = typer.Typer(
    help="Principals' own GitHub tokens, encrypted at rest.", no_args_is_help=True
)


@db_app.command("upgrade")
def db_upgrade(as_json: bool = common.JsonOption) -> None:
    """Apply pending migrations (idempotent)."""
    settings = common.settings()
    cipher = build_token_cipher(settings)
    with Database(database_url(settings)).owner_connection() as conn:
        applied = [m.version + "_" + m.name for m in upgrade(conn, after=after_upgrade(cipher))]
    emit(
        {"applied": applied},
        as_json,
        lambda: console.print(
            f"applied: {', '.join(applied)}" if applied else "database is up to date"
        ),
    )


@db_app.command("status")
def db_status(as_json: bool = common.JsonOption) -> None:
    """Show which migrations are applied."""
    with Database(database_url(common.settings())).owner_connection() as conn:
        rows = status(conn)
    data = [
        {**asdict(row), "applied_at": row.applied_at.isoformat() if row.applied_at else None}
        for row in rows
    ]
    emit(
        data,
        as_json,
        lambda: table(
            "migrations",
            ["version", "name", "applied at", "note"],
            [
                (
                    r.version,
                    r.name,
                    plain.moment(r.applied_at) if r.applied_at else "pending",
                    "file changed after applying" if r.modified else "",
                )
                for r in rows
            ],
        ),
    )


@tenants_app.command("add")
def tenants_add(name: str, as_json: bool = common.JsonOption) -> None:
    """Create a tenant."""
    with common.app() as opened:
        tenant = admin.add_tenant(opened.db, name)
    emit(
        {"id": str(tenant.id), "name": tenant.name},
        as_json,
        lambda: console.print(f"tenant {tenant.name} created ({tenant.id})"),
    )


@tenants_app.command("list")
def tenants_list(as_json: bool = common.JsonOption) -> None:
    """The tenants; an evaluation's scratch tenants (the indexes `eval answers` keeps) are only
    counted below the table."""
    with common.app() as opened:
        everyone = admin.list_tenants(opened.db)
    tenants = [t for t in everyone if not t.scratch]
    scratch = [t for t in everyone if t.scratch]

    def render() -> None:
        table("tenants", ["name", whole("id")], [(t.name, t.id) for t in tenants])
        if scratch:
            some = "1 scratch tenant" if len(scratch) == 1 else f"{len(scratch)} scratch tenants"
            console.print(
                Text(
                    f"Not listed: {some} of evaluations (the indexes `eval answers` keeps for "
                    "its next run); a command never picks one as the only tenant."
                )
            )

    emit([{"id": str(t.id), "name": t.name} for t in tenants], as_json, render)


@principals_app.command("add")
def principals_add(
    subject: str = typer.Option(..., "--subject", help="Login of the person or service."),
    role: list[str] = typer.Option(..., "--role", help="requester, approver or admin (repeat)."),
    tenant: str | None = common.TenantOption,
    github_token_stdin: bool = typer.Option(
        False,
        "--github-token-stdin",
        help="Read this principal's own GitHub token from stdin; the executor posts with it. "
        "Stored encrypted: needs RESOLVEFLOW_TOKEN_ENCRYPTION_KEY.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print only the API token, e.g. for RITA=$(resolveflow ...)."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Add a principal and print its API token (shown once, stored hashed)."""
    if quiet and as_json:
        raise InvalidInput("give --quiet or --json, not both")
    try:
        roles = [Role(value) for value in role]
    except ValueError:
        raise InvalidInput("--role must be requester, approver or admin") from None
    github_token = None
    if github_token_stdin:
        # Checked before stdin is read, so nobody types a token that is then refused.
        if build_token_cipher(common.settings()) is None:
            raise ConfigError(
                f"--github-token-stdin needs {KEY_SETTING}: own GitHub tokens are stored encrypted"
            )
        github_token = typer.get_text_stream("stdin").read().strip()
        if not github_token:
            raise InvalidInput("--github-token-stdin: no token on stdin")
    with common.app() as opened:
        issued = admin.add_principal(
            opened.db,
            common.tenant_name(opened, tenant),
            subject,
            roles,
            github_token,
            opened.token_cipher(),
        )
    roles_held = sorted(r.value for r in issued.principal.roles)
    data = {
        "id": str(issued.principal.id),
        "subject": issued.principal.subject,
        "roles": roles_held,
        "token": issued.token,
    }
    if quiet:
        typer.echo(issued.token)  # one line, nothing else: stdout is the token
        return
    emit(
        data,
        as_json,
        lambda: fields(
            [
                ("principal", f"{issued.principal.subject} ({issued.principal.id})"),
                ("roles", ", ".join(roles_held)),
                ("token", issued.token),
                ("", "store this token now: it is not shown again"),
            ]
        ),
    )


@principals_app.command("list")
def principals_list(
    tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption
) -> None:
    with common.app() as opened:
        found = admin.list_principals(opened.db, common.tenant_name(opened, tenant))
    data = [
        {
            "id": str(p.id),
            "subject": p.subject,
            "roles": sorted(r.value for r in p.roles),
            "own_github_token": p.has_github_token,
            "token_revoked_at": p.token_revoked_at.isoformat() if p.token_revoked_at else None,
        }
        for p in found
    ]
    emit(
        data,
        as_json,
        lambda: table(
            "principals",
            ["subject", "roles", "own token", "API token", whole("id")],
            [
                (
                    p.subject,
                    ", ".join(sorted(r.value for r in p.roles)),
                    "yes" if p.has_github_token else "",
                    f"revoked {plain.moment(p.token_revoked_at)}" if p.token_revoked_at else "",
                    p.id,
                )
                for p in found
            ],
        ),
    )


@principals_app.command("revoke-token")
def principals_revoke_token(
    subject: str = typer.Option(..., "--subject", help="Login of the person or service."),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Revoke a principal's API token: refused from the next request on (API, MCP, CLI)."""
    with common.app() as opened:
        name = common.tenant_name(opened, tenant)
        revoked = admin.revoke_token(opened.db, name, subject)
    at = plain.moment(revoked.revoked_at)
    emit(
        {
            "tenant": name,
            "subject": revoked.principal.subject,
            "id": str(revoked.principal.id),
            "token_revoked_at": revoked.revoked_at.isoformat(),
            "changed": revoked.changed,
        },
        as_json,
        lambda: console.print(
            f"API token of {revoked.principal.subject} revoked"
            + ("" if revoked.changed else f" (no change: revoked already at {at})")
        ),
    )


MailboxOption = typer.Option(..., "--mailbox", help="A mailbox of the tenant's policy file.")


@principals_app.command("grant")
def principals_grant(
    subject: str = typer.Option(..., "--subject", help="Login of the person or service."),
    mailbox: str = MailboxOption,
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Let a principal approve mail from (and draft with) one of the tenant's mailboxes."""
    _mailbox_grant(subject, mailbox, tenant, as_json, granted=True)


@principals_app.command("revoke")
def principals_revoke(
    subject: str = typer.Option(..., "--subject", help="Login of the person or service."),
    mailbox: str = MailboxOption,
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Take a mailbox grant away."""
    _mailbox_grant(subject, mailbox, tenant, as_json, granted=False)


def _mailbox_grant(
    subject: str, mailbox: str, tenant: str | None, as_json: bool, *, granted: bool
) -> None:
    from resolveflow.mail import admin as mail_admin

    with common.app() as opened:
        name = common.tenant_name(opened, tenant)
        configured = tenant_mailboxes(opened.policy(), name)
        changed = mail_admin.set_mailbox_grant(
            opened.db, name, subject, mailbox, configured, granted=granted
        )
    key, verb = mailbox.strip().lower(), "granted" if granted else "revoked"
    emit(
        {"tenant": name, "subject": subject, "mailbox": key, verb: True, "changed": changed},
        as_json,
        lambda: console.print(f"{key} {verb} for {subject}" + ("" if changed else " (no change)")),
    )


@repos_app.command("add")
def repos_add(
    repository: str, tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption
) -> None:
    """Allow the tenant to act on OWNER/REPO."""
    with common.app() as opened:
        name = admin.add_repository(opened.db, common.tenant_name(opened, tenant), repository)
    emit({"repository": name}, as_json, lambda: console.print(f"{name} allowed"))


@repos_app.command("remove")
def repos_remove(
    repository: str, tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption
) -> None:
    """Remove OWNER/REPO from the allowlist; pending executions for it will fail closed."""
    with common.app() as opened:
        name = admin.remove_repository(opened.db, common.tenant_name(opened, tenant), repository)
    emit({"repository": name, "removed": True}, as_json, lambda: console.print(f"{name} removed"))


@repos_app.command("list")
def repos_list(tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption) -> None:
    with common.app() as opened:
        names = admin.list_repositories(opened.db, common.tenant_name(opened, tenant))
    emit(names, as_json, lambda: table("repositories", ["repository"], [(n,) for n in names]))


@tokens_app.command("reencrypt")
def tokens_reencrypt(as_json: bool = common.JsonOption) -> None:
    """Encrypt every stored GitHub token again with the primary key (the first in
    RESOLVEFLOW_TOKEN_ENCRYPTION_KEY), so older keys can be removed afterwards."""
    with common.app() as opened:
        cipher = opened.token_cipher()
        if cipher is None:
            raise ConfigError(f"{KEY_SETTING} is not set: there is no key to encrypt with")
        done = admin.reencrypt_tokens(opened.db, cipher)
    data = {
        "primary_key_id": cipher.primary_key_id,
        "reencrypted": done.changed,
        "unreadable": done.unreadable,
    }
    emit(
        data,
        as_json,
        lambda: fields(
            [
                ("primary key", cipher.primary_key_id),
                ("re-encrypted", str(done.changed)),
                ("unreadable", ", ".join(done.unreadable) or "none"),
            ]
        ),
    )
