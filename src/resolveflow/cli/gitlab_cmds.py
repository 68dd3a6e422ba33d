"""``resolveflow gitlab token set`` and ``resolveflow issues prepare``: issues on GitLab (or
GitHub) prepared from a tenant's project aliases, approved like any other proposal."""

from __future__ import annotations

from pathlib import Path

import typer

from resolveflow.accounts import admin
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.cli import common
from resolveflow.cli.output import console, emit, print_proposal
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.store import gitlab_tokens
from resolveflow.store.token_cipher import KEY_SETTING

gitlab_app = typer.Typer(help="GitLab: each tenant's token.", no_args_is_help=True)
token_app = typer.Typer(help="A tenant's GitLab token, stored encrypted.", no_args_is_help=True)
gitlab_app.add_typer(token_app, name="token")
issues_app = typer.Typer(
    help="Issues prepared from a tenant's project aliases.", no_args_is_help=True
)


@token_app.command("set")
def token_set(
    tenant: str | None = common.TenantOption,
    stdin: bool = typer.Option(False, "--stdin", help="Read the token from stdin (required)."),
    as_json: bool = common.JsonOption,
) -> None:
    """Store (or replace) the tenant's GitLab token, encrypted; it is never printed."""
    if not stdin:
        raise InvalidInput("give the token on stdin with --stdin (never on the command line)")
    given = typer.get_text_stream("stdin").read()
    with common.app() as opened:
        cipher = opened.token_cipher()
        if cipher is None:
            raise ConfigError(f"set {KEY_SETTING} to store a GitLab token encrypted")
        name = common.tenant_name(opened, tenant)
        found = admin.find_tenant(opened.db, name)
        with opened.db.tenant(found.id) as conn:
            gitlab_tokens.save_gitlab_token(conn, cipher, found.id, name, given)
    emit(
        {"tenant": name, "stored": True},
        as_json,
        lambda: console.print(f"GitLab token of {name} stored"),
    )


@issues_app.command("prepare")
def issues_prepare(
    project: str = typer.Option(..., "--project", help="A project alias of your tenant."),
    title: str = typer.Option(..., "--title", help="The issue's title."),
    body_file: Path = typer.Option(..., "--body-file", help="The issue's description (a file)."),
    label: list[str] = typer.Option([], "--label", help="A label the alias allows (repeat)."),
    assignee: list[str] = typer.Option(
        [], "--assignee", help="A name in the alias's map (repeat)."
    ),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Propose a new issue in a configured project; it waits for a person's approval."""
    try:
        body = body_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {body_file}: {exc.strerror}") from None
    with common.app() as opened:
        actor = common.principal(opened, token)
        targets = IssueTargets(policy=opened.policy, gitlab=opened.gitlab())
        view = prepare_issue(
            opened.db,
            actor,
            targets,
            alias=project,
            title=title,
            body=body,
            labels=label,
            assignees=assignee,
        )
    emit(view, as_json, lambda: print_proposal(view))
