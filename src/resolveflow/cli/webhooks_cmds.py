"""``resolveflow webhooks secret set|remove``: a tenant's own webhook secret (docs/web.md)."""

from __future__ import annotations

import typer

from resolveflow.cli import common
from resolveflow.cli.output import console, emit, fields
from resolveflow.triage import webhook_secrets

webhooks_app = typer.Typer(help="GitHub webhooks.", no_args_is_help=True)
secret_app = typer.Typer(
    help="A tenant's own webhook secret, for /webhooks/github/TENANT.", no_args_is_help=True
)
webhooks_app.add_typer(secret_app, name="secret")


def register(app: typer.Typer) -> None:
    app.add_typer(webhooks_app, name="webhooks")


@secret_app.command("set")
def secret_set(
    tenant: str | None = common.TenantOption,
    stdin: bool = typer.Option(
        False, "--stdin", help="Read the secret from stdin instead of making a random one."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Set (or replace) the tenant's webhook secret; a secret made here is printed once."""
    given = typer.get_text_stream("stdin").read() if stdin else None
    with common.app() as opened:
        made = webhook_secrets.set_secret(
            opened.db, opened.token_cipher(), common.tenant_name(opened, tenant), given
        )
    data = {"tenant": made.tenant, "path": made.path, "secret": made.secret}
    emit(
        data,
        as_json,
        lambda: fields(
            [
                ("tenant", made.tenant),
                ("payload URL", f"<this server>{made.path}"),
                ("secret", made.secret or "(the one given; not shown)"),
            ]
        ),
    )


@secret_app.command("remove")
def secret_remove(
    tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption
) -> None:
    """Remove the tenant's own secret: its URL then refuses every delivery (401)."""
    with common.app() as opened:
        name = common.tenant_name(opened, tenant)
        removed = webhook_secrets.remove_secret(opened.db, name)
    emit(
        {"tenant": name, "removed": removed},
        as_json,
        lambda: console.print(
            f"webhook secret of {name} removed" if removed else f"{name} had no webhook secret"
        ),
    )
