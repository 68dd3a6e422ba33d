"""``resolveflow github-app``: the manifest for GitHub's one-click App creation, and which tenant
each installation of the App belongs to (docs/github-app.md)."""

from __future__ import annotations

import json

import typer

from resolveflow.accounts import github_app
from resolveflow.adapters.github.app_manifest import app_manifest
from resolveflow.cli import common
from resolveflow.cli.output import console, emit

github_app_app = typer.Typer(
    help="A GitHub App: its manifest and its installations' tenants.", no_args_is_help=True
)


@github_app_app.command("manifest")
def manifest(
    url: str = typer.Option(
        ..., "--url", help="The deployment's base URL, e.g. https://rf.example"
    ),
    name: str = typer.Option("ResolveFlow", "--name", help="The App's name on GitHub."),
    as_json: bool = common.JsonOption,
) -> None:
    """Print the App manifest and a one-time state (valid for an hour) to create it with."""
    found = app_manifest(url, name)
    with common.app() as opened:
        state = github_app.issue_manifest_state(opened.db)
        web = opened.settings.github.web_url.rstrip("/")
    create = f"{web}/settings/apps/new?state={state}"
    if as_json:
        typer.echo(json.dumps({"manifest": found, "state": state, "create_url": create}, indent=2))
        return
    typer.echo(json.dumps(found, indent=2))
    typer.echo(
        "\nCreate the App: POST this JSON as the form field 'manifest' to\n"
        f"  {create}\n(or {web}/organizations/ORG/settings/apps/new?state={state}).\n"
        f"GitHub then sends you to {found['redirect_url']} with this state (one use, within "
        "the hour),\nwhich stores the App encrypted; install it, then:\n"
        "  resolveflow github-app install-map --installation ID --tenant NAME"
    )


@github_app_app.command("install-map")
def install_map(
    installation: int = typer.Option(..., "--installation", help="The installation's id."),
    tenant: str = typer.Option(..., "--tenant", help="The tenant its deliveries belong to."),
    force: bool = typer.Option(
        False,
        "--force",
        help="Move it from the tenant it belongs to, or map an id no event has shown.",
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Map an installation of the App to a tenant: its webhooks start runs there, and the App
    reads and writes through it for that tenant only."""
    with common.app() as opened:
        mapped = github_app.map_installation(opened.db, installation, tenant, force=force)
    row = mapped.row
    notes = [f"moved from {mapped.moved_from}"] if mapped.moved_from else []
    notes += ["never seen in an event or delivery"] if mapped.never_seen else []
    said = f" ({'; '.join(notes)})" if notes else ""
    emit(
        {
            "installation": row.installation_id,
            "account": row.account,
            "tenant": tenant,
            "moved_from": mapped.moved_from,
            "never_seen": mapped.never_seen,
        },
        as_json,
        lambda: console.print(f"installation {row.installation_id} now belongs to {tenant}{said}"),
    )


@github_app_app.command("installations")
def installations(as_json: bool = common.JsonOption) -> None:
    """The App's installations and their tenants."""
    with common.app() as opened:
        rows = github_app.list_installations(opened.db)
    listed = [
        {
            "installation": r.installation_id,
            "account": r.account,
            "tenant": r.tenant,
            "suspended": r.suspended,
        }
        for r in rows
    ]

    def render() -> None:
        for i in listed:
            console.print(f"{i['installation']} {i['account'] or '-'} -> {i['tenant'] or '(none)'}")

    emit(listed, as_json, render)
