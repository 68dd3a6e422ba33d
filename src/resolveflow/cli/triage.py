"""Triage runs from the command line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import typer
from rich.text import Text

from resolveflow.bootstrap.issue_check import check_issue, missing_issue
from resolveflow.bootstrap.policy import PRODUCT_SECTIONS
from resolveflow.cli import common, plain
from resolveflow.cli.action_view import POSTED, fate
from resolveflow.cli.output import (
    console,
    emit,
    err_console,
    exact,
    fields,
    table,
    timeline,
    whole,
)
from resolveflow.errors import NotFound, Unavailable
from resolveflow.policy_file import PolicyFile, parse_policy
from resolveflow.refine.domain.rules import repository_refine
from resolveflow.triage import runs as run_service
from resolveflow.triage.domain.references import parse_issue_reference

if TYPE_CHECKING:
    from resolveflow.bootstrap.app import App

runs_app = typer.Typer(help="Triage runs.", no_args_is_help=True)

_WAITING = {"running", "awaiting_approval"}


def _render_run(view: dict[str, Any]) -> None:
    reason = f": {view['reason']}" if view["reason"] else ""
    route = f": {view['route_reason']}" if view["route_reason"] else ""
    classification = view["classification"]
    fields(
        [
            (name, value)
            for name, value in (
                ("run", view["run_id"]),
                ("target", view["target"]),
                ("status", plain.words(view["status"], "RunStatus")),
                ("error", view["detail"].get("error")),
                ("classification", plain.words(classification, "Classification")),
                ("rule", f"{plain.words(view['rule'], 'rule')}{reason}" if view["rule"] else None),
                (
                    "next step",
                    f"{plain.words(view['branch'], 'Classification')}{route}"
                    if view["branch"] and (view["branch"] != classification or route)
                    else None,
                ),
                ("proposal", view["proposal_id"]),
                ("digest", view["digest"]),
            )
            if value and value != "–"
        ]
    )
    _render_config(view["detail"])
    _render_facts(view.get("facts") or {})
    proposal = view["proposal"]
    if proposal:
        _render_proposal(view, proposal)
    elif view["detail"].get("notes"):
        console.print(Text("notes: " + "; ".join(view["detail"]["notes"])), soft_wrap=True)


def _render_config(detail: dict[str, Any]) -> None:
    """The repository's .github/resolveflow.yml: each problem on its own line (the run then used
    the tenant's policy alone), or the blob that narrowed it."""
    errors = detail.get("config_errors") or []
    for line in errors:
        console.print(Text(f"config error: {line}", style="bold red"), soft_wrap=True)
    if errors:
        console.print(
            Text("the repository's config was not applied: the tenant's policy alone held"),
            soft_wrap=True,
        )
    elif detail.get("config_sha"):
        console.print(Text(f"config: .github/resolveflow.yml {detail['config_sha'][:12]}"))


def _render_proposal(view: dict[str, Any], proposal: dict[str, Any]) -> None:
    action = proposal["action"]
    console.print(Text(f"labels: {', '.join(action['labels']) or '(none)'}"), soft_wrap=True)
    execution = proposal["execution"]
    if action.get("comment"):
        shown = fate(proposal["decision"], execution["state"] if execution else None)
        console.print(exact(action["comment"], shown.title("comment", POSTED)))
    if proposal["decision"] is None:
        console.print(
            f"approve with: resolveflow approve {view['run_id']} --digest {view['digest']}",
            soft_wrap=True,
        )


def _render_facts(facts: dict[str, Any]) -> None:
    """The evidence facts the rules read, each with its value and how it was found."""
    if facts:
        table(
            "evidence facts",
            ["fact", "value", "how it was found"],
            [
                (plain.words(name, "fact"), _yes_no(fact.get("value")), fact.get("rule") or "")
                for name, fact in sorted(facts.items())
            ],
        )


def _yes_no(value: Any) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def _failure(
    opened: App, tenant_id: UUID, view: dict[str, Any], repository: str, number: int
) -> Exception:
    """A failed run as an error: not found when GitHub has no such issue (it went between the
    check and the run), otherwise unavailable (GitHub, the model or the database failed it;
    docs/cli.md)."""
    message = f"run {view['run_id']} failed: {view['detail'].get('error') or 'no reason recorded'}"
    missing = missing_issue(opened, tenant_id, repository, number)
    if missing is not None:
        return NotFound(f"{missing.message}; run {view['run_id']} failed")
    return Unavailable(message)


def triage(
    issue: str = typer.Argument(..., help="OWNER/REPO#N or an issue or pull request URL."),
    wait: bool = typer.Option(False, "--wait", help="Stay until the run is decided."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Start a triage run: gather evidence, classify by rules, propose, wait for approval."""
    repository, number = parse_issue_reference(issue)
    with common.app() as opened:
        actor = common.principal(opened, token)
        check_issue(opened, actor, repository, number)
        run_id = opened.run_controller().start(actor, repository, number)
        view = run_service.describe_run(opened.db, actor, run_id)
        if wait:
            status = plain.words(view["status"], "RunStatus")
            err_console.print(f"run {run_id} is {status}; this command waits until it is decided")
            while view["status"] in _WAITING:
                time.sleep(1.0)
                view = run_service.describe_run(opened.db, actor, run_id)
        if view["status"] == "failed":
            raise _failure(opened, actor.tenant_id, view, repository, number)
    emit(view, as_json, lambda: _render_run(view))


@runs_app.command("list")
def list_(
    status: str | None = typer.Option(None, "--status", help="Only runs with this status."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    with common.app() as opened:
        rows = run_service.list_runs(opened.db, common.principal(opened, token), status)
    emit(
        rows,
        as_json,
        lambda: table(
            "runs",
            [whole("run"), "status", "target", "classification", "rule"],
            [
                (
                    r["run_id"],
                    plain.words(r["status"], "RunStatus"),
                    r["target"],
                    plain.words(r["classification"], "Classification"),
                    plain.words(r["rule"], "rule"),
                )
                for r in rows
            ],
        ),
    )


@runs_app.command("show")
def show(
    run_id: str, token: str | None = common.TokenOption, as_json: bool = common.JsonOption
) -> None:
    """A run: evidence facts, classification and rule, proposal, and its timeline."""
    with common.app() as opened:
        actor = common.principal(opened, token)
        view = run_service.describe_run(
            opened.db, actor, common.find_id(opened, actor, run_id, "run")
        )

    def render() -> None:
        _render_run(view)
        timeline(view["timeline"])

    emit(view, as_json, render)


@runs_app.command("resume")
def resume(
    run_id: str, token: str | None = common.TokenOption, as_json: bool = common.JsonOption
) -> None:
    """Continue a run whose proposal was decided but whose run did not finish (after a crash)."""
    with common.app() as opened:
        actor = common.principal(opened, token)
        target = common.find_id(opened, actor, run_id, "run")
        opened.run_controller().resume(actor, target)
        view = run_service.describe_run(opened.db, actor, target)
    emit(view, as_json, lambda: _render_run(view))


policy_app = typer.Typer(help="The triage policy file.", no_args_is_help=True)


@policy_app.command("check")
def policy_check(
    path: Path = typer.Argument(..., help="A policy TOML file."),
    repository: str | None = typer.Option(None, "--repo", help="Show the policy for OWNER/REPO."),
    as_json: bool = common.JsonOption,
) -> None:
    """Validate a policy file; with --repo, show the effective policy for that repository."""
    policy = parse_policy(common.read_text_file(path), str(path), PRODUCT_SECTIONS)
    effective = _effective(policy, repository) if repository else None
    repositories = sorted(policy.repositories)
    data = {"valid": True, "repositories": repositories, "effective": effective}
    emit(
        data,
        as_json,
        lambda: console.print(
            f"{path}: valid; repositories: {', '.join(repositories) or '(defaults only)'}"
            + (f"\n{json.dumps(effective, indent=2)}" if effective else "")
        ),
    )


def _effective(policy: PolicyFile, repository: str) -> dict[str, Any]:
    """The repository's policy as it applies, refine's section read by refine."""
    shown = policy.for_repository(repository).model_dump(mode="json")
    shown["refine"] = repository_refine(policy, repository).model_dump(mode="json")
    return shown
