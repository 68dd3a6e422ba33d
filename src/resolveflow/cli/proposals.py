"""Proposals and decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from resolveflow.cli import common
from resolveflow.cli.output import console, emit, exact, fields, table
from resolveflow.domain.actions import check_digest_format
from resolveflow.errors import InvalidInput
from resolveflow.service import executions as execution_service
from resolveflow.service import proposals as service

proposals_app = typer.Typer(help="Proposed actions awaiting a decision.", no_args_is_help=True)

CommentFile = typer.Option(None, "--comment-file", help="File with the comment body ('-' = stdin).")
Labels = typer.Option(None, "--label", help="A label to add (repeat for several).")


def _render(view: dict[str, Any]) -> None:
    action = view["action"]
    target = f"{action['target']['repository']}#{action['target']['issue']}"
    fields(
        [
            ("proposal", view["id"]),
            ("version", f"{view['version']} of {view['latest_version']}"),
            ("target", target),
            ("labels", ", ".join(action["labels"]) or "(none)"),
            ("digest", view["digest"]),
            ("decision", view["decision"] or "undecided"),
            (
                "execution",
                f"{view['execution']['id']} ({view['execution']['state']})"
                if view["execution"]
                else "none",
            ),
        ]
    )
    if action["comment"] is not None:
        console.print(exact(action["comment"], "comment, exactly as it will be posted"))
    if view["decision"] is None and view["version"] == view["latest_version"]:
        console.print(
            f"approve with: resolveflow approve {view['id']} --digest {view['digest']}",
            soft_wrap=True,
        )


@proposals_app.command("create")
def create(
    repo: str = typer.Option(..., "--repo", help="OWNER/REPO"),
    issue: int = typer.Option(..., "--issue", help="Issue or pull request number."),
    comment_file: Path | None = CommentFile,
    comment: str | None = typer.Option(None, "--comment", help="Comment body inline."),
    label: list[str] | None = Labels,
    note: str | None = typer.Option(None, "--note", help="Why (kept with the proposal)."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Propose a comment and/or labels for one issue; prints the digest to approve."""
    if comment_file is not None and comment is not None:
        raise InvalidInput("give --comment or --comment-file, not both")
    body = common.read_text_file(comment_file) if comment_file is not None else comment
    with common.app() as opened:
        actor = common.principal(opened, token)
        proposal = service.create_proposal(
            opened.db,
            actor,
            repository=repo,
            issue=issue,
            comment=body,
            labels=label or [],
            note=note,
        )
        view = service.describe(opened.db, actor, proposal.id)
    emit(view, as_json, lambda: _render(view))


@proposals_app.command("edit")
def edit(
    proposal_id: str,
    comment_file: Path | None = CommentFile,
    label: list[str] | None = Labels,
    no_comment: bool = typer.Option(False, "--no-comment", help="Drop the comment."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Write a new version (new digest, needs its own approval)."""
    body = common.read_text_file(comment_file) if comment_file is not None else None
    with common.app() as opened:
        actor = common.principal(opened, token)
        proposal = service.edit_proposal(
            opened.db,
            actor,
            common.parse_id(proposal_id, "proposal"),
            comment=body,
            labels=label,
            drop_comment=no_comment,
        )
        view = service.describe(opened.db, actor, proposal.id)
    emit(view, as_json, lambda: _render(view))


@proposals_app.command("show")
def show(
    proposal_id: str, token: str | None = common.TokenOption, as_json: bool = common.JsonOption
) -> None:
    """Show the exact action, its digest and its state."""
    with common.app() as opened:
        actor = common.principal(opened, token)
        view = service.describe(opened.db, actor, common.parse_id(proposal_id, "proposal"))
    emit(view, as_json, lambda: _render(view))


@proposals_app.command("list")
def list_(token: str | None = common.TokenOption, as_json: bool = common.JsonOption) -> None:
    with common.app() as opened:
        rows = service.list_proposals(opened.db, common.principal(opened, token))
    emit(
        rows,
        as_json,
        lambda: table(
            "proposals",
            ["id", "v", "target", "decision", "execution"],
            [
                (
                    r["id"],
                    r["version"],
                    r["target"],
                    r["decision"] or "undecided",
                    r["execution_state"] or "",
                )
                for r in rows
            ],
        ),
    )


def approve(
    run_or_proposal: str,
    digest: str = typer.Option(..., "--digest", help="The SHA-256 digest you reviewed."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Approve exactly this digest (of a run's proposal, or of a proposal); a run then continues
    and the executor posts the action once."""
    checked = check_digest_format(digest)
    target = common.parse_id(run_or_proposal, "run or proposal")
    with common.app() as opened:
        actor = common.principal(opened, token)
        controller = opened.run_controller()
        run_id, _ = controller.find(actor, target)
        result = controller.approve(actor, target, checked)
        execution = execution_service.show_execution(opened.db, actor, result.execution.id)
    data = {
        "approval_id": str(result.approval.id),
        "proposal_id": str(result.approval.proposal_id),
        "run_id": str(run_id) if run_id else None,
        "digest": checked,
        "execution_id": execution["id"],
        "execution_state": execution["state"],
        "comment_url": execution["comment_url"],
        "expires_at": result.approval.expires_at,
    }
    next_step = (
        "resolveflow execute --once" if execution["state"] == "pending" else execution["detail"]
    )
    emit(
        data,
        as_json,
        lambda: fields(
            [
                ("approved", data["proposal_id"]),
                ("run", data["run_id"] or "(none)"),
                ("execution", f"{execution['id']} ({execution['state']})"),
                ("comment", execution["comment_url"] or ""),
                ("next", next_step),
            ]
        ),
    )


def reject(
    run_or_proposal: str,
    reason: str = typer.Option(..., "--reason", help="Why; kept in the audit trail."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Reject a run's proposal (or a proposal) with a reason; nothing is posted."""
    target = common.parse_id(run_or_proposal, "run or proposal")
    with common.app() as opened:
        actor = common.principal(opened, token)
        controller = opened.run_controller()
        run_id, _ = controller.find(actor, target)
        rejection = controller.reject(actor, target, reason)
    data = {
        "approval_id": str(rejection.id),
        "proposal_id": str(rejection.proposal_id),
        "run_id": str(run_id) if run_id else None,
        "decision": "rejected",
        "reason": rejection.reason,
    }
    emit(
        data, as_json, lambda: console.print(f"rejected {data['proposal_id']}: {rejection.reason}")
    )
