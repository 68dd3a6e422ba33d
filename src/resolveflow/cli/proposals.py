"""Proposals and decisions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from resolveflow.bootstrap.app import App
from resolveflow.cli import common, plain
from resolveflow.cli.action_view import action_rows, action_texts, fate
from resolveflow.cli.digest_cmds import say_moved
from resolveflow.cli.output import console, emit, exact, fields, table, whole
from resolveflow.domain.vocabulary import ExecutionState
from resolveflow.errors import InvalidInput
from resolveflow.gate import executions as execution_service
from resolveflow.gate import proposals as service
from resolveflow.gate import quiet
from resolveflow.gate.domain.actions import ActionChanges, check_digest_format, parse_action
from resolveflow.gate.domain.parts import Drops

if TYPE_CHECKING:
    # The decision path (approval checks, the executor's store, the forge's protocol) loads in
    # the commands that decide, not in ``proposals show`` or ``list`` (issue 29: start-up time).
    from resolveflow.gate import decisions

proposals_app = typer.Typer(help="Proposed actions awaiting a decision.", no_args_is_help=True)

CommentFile = typer.Option(None, "--comment-file", help="File with the comment body ('-' = stdin).")
Labels = typer.Option(None, "--label", help="A label to add (repeat for several).")
BodyFile = typer.Option(None, "--body-file", help="File with the new issue's body ('-' = stdin).")
Assignees = typer.Option(None, "--assignee", help="A login to assign (repeat for several).")


def _render(view: dict[str, Any]) -> None:
    action = parse_action(view["action"])
    execution = view["execution"]
    rows = [
        ("proposal", view["id"]),
        ("kind", plain.words(view["kind"], "ActionKind")),
        ("version", f"{view['version']} of {view['latest_version']}"),
        ("target", view["summary"]),
        *action_rows(action),
        ("digest", view["digest"]),
        ("decision", plain.decision(view["decision"])),
        (
            "execution",
            f"{execution['id']} ({plain.state(execution['state'])})" if execution else "none",
        ),
    ]
    if view.get("outcome"):  # what became of it, in words, with the link (as the page says)
        rows.append(("outcome", view["outcome"]["text"]))
    if view.get("like_this"):  # how suggestions like this one fared here (issue 31)
        rows.append(("suggestions like this", plain.like_this(view["like_this"])))
    fields(rows)
    superseded = view["version"] < view["latest_version"]
    shown = fate(view["decision"], execution["state"] if execution else None, superseded=superseded)
    for text, title in action_texts(action, shown):
        console.print(exact(text, title))
    if view["decision"] is None and not superseded:
        console.print(
            f"approve with: resolveflow approve {view['id']} --digest {view['digest']}",
            soft_wrap=True,
        )


def _text(path: Path | None, inline: str | None, what: str) -> str | None:
    if path is not None and inline is not None:
        raise InvalidInput(f"give --{what} or --{what}-file, not both")
    return common.read_text_file(path) if path is not None else inline


@proposals_app.command("create")
def create(
    repo: str = typer.Option(..., "--repo", help="OWNER/REPO"),
    issue: int | None = typer.Option(None, "--issue", help="Issue or pull request number."),
    comment_file: Path | None = CommentFile,
    comment: str | None = typer.Option(None, "--comment", help="Comment body inline."),
    new_issue: bool = typer.Option(False, "--new-issue", help="Propose a new issue instead."),
    title: str | None = typer.Option(None, "--title", help="The new issue's title."),
    body_file: Path | None = BodyFile,
    label: list[str] | None = Labels,
    assignee: list[str] | None = Assignees,
    note: str | None = typer.Option(None, "--note", help="Why (kept with the proposal)."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Propose a comment and/or labels for one issue (--issue N), or a new issue (--new-issue
    --title T --body-file F); prints the digest to approve."""
    if new_issue:
        if issue is not None or comment is not None or comment_file is not None:
            raise InvalidInput(
                "--new-issue takes --title and --body-file, not --issue or a comment"
            )
        if title is None or body_file is None:
            raise InvalidInput("--new-issue needs --title and --body-file")
    elif issue is None:
        raise InvalidInput("give --issue N (or --new-issue to propose a new issue)")
    elif title is not None or body_file is not None or assignee:
        raise InvalidInput("--title, --body-file and --assignee go with --new-issue")
    with common.app() as opened:
        actor = common.principal(opened, token)
        if new_issue:
            assert title is not None and body_file is not None
            proposal = service.create_issue_proposal(
                opened.db,
                actor,
                repository=repo,
                title=title,
                body=common.read_text_file(body_file),
                labels=label or [],
                assignees=assignee or [],
                note=note,
            )
        else:
            assert issue is not None
            proposal = service.create_proposal(
                opened.db,
                actor,
                repository=repo,
                issue=issue,
                comment=_text(comment_file, comment, "comment"),
                labels=label or [],
                note=note,
            )
        view = service.describe(opened.db, actor, proposal.id)
    emit(view, as_json, lambda: _render(view))


def _issue_ref(value: str) -> tuple[str, int]:
    repo, _, number = value.partition("#")
    if not repo or not number.isdigit():
        raise InvalidInput(f"give the issue as OWNER/REPO#N, not {value!r}")
    return repo, int(number)


@proposals_app.command("close-duplicate")
def close_duplicate(
    target: str = typer.Argument(..., help="The issue to close, as OWNER/REPO#N."),
    original: int = typer.Option(..., "--of", help="The issue it duplicates (same repository)."),
    grace_days: float = typer.Option(
        3, "--grace-days", help="Days between the notice and the close (1 hour to 30 days)."
    ),
    comment: str | None = typer.Option(
        None,
        "--comment",
        help="The notice inline (must mention #ORIGINAL); default: a standard one.",
    ),
    note: str | None = typer.Option(None, "--note", help="Why (kept with the proposal)."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Propose closing an issue as a duplicate: once approved, a notice is posted and the issue is
    closed after the grace period unless someone comments, reacts with a thumbs-down, edits or
    reopens it meanwhile. Prints the digest to approve."""
    repo, issue = _issue_ref(target)
    hours = grace_days * 24
    if hours != int(hours):
        raise InvalidInput("--grace-days must come to whole hours")
    with common.app() as opened:
        actor = common.principal(opened, token)
        proposal = service.create_close_duplicate_proposal(
            opened.db,
            actor,
            opened.github,
            repository=repo,
            issue=issue,
            original=original,
            grace_hours=int(hours),
            comment=comment,
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
    title: str | None = typer.Option(None, "--title", help="A new issue's new title."),
    body_file: Path | None = BodyFile,
    assignee: list[str] | None = Assignees,
    to: list[str] | None = typer.Option(None, "--to", help="An email's To (repeat; replaces)."),
    cc: list[str] | None = typer.Option(None, "--cc", help="An email's Cc (repeat; replaces)."),
    bcc: list[str] | None = typer.Option(None, "--bcc", help="An email's Bcc (repeat; replaces)."),
    subject: str | None = typer.Option(None, "--subject", help="An email's subject."),
    text_file: Path | None = typer.Option(None, "--text-file", help="An email's text (a file)."),
    drop_part: list[str] | None = typer.Option(
        None, "--drop-part", help="Take a run's part out (related, missing_facts...; repeat)."
    ),
    drop_label: list[str] | None = typer.Option(
        None, "--drop-label", help="Take one label out (repeat)."
    ),
    drop_item: list[str] | None = typer.Option(
        None, "--drop-item", help="Take one item of a part out, as PART:REF (repeat)."
    ),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Write a new version (new digest, needs its own approval)."""
    drops = Drops(tuple(drop_part or ()), tuple(drop_label or ()), tuple(drop_item or ()))
    comment = "" if no_comment else _text(comment_file, None, "comment")
    changes = ActionChanges(
        comment=comment,
        labels=tuple(label) if label is not None else None,
        title=title,
        body=common.read_text_file(body_file) if body_file is not None else None,
        assignees=tuple(assignee) if assignee is not None else None,
        to=tuple(to) if to else None,
        cc=tuple(cc) if cc else None,
        bcc=tuple(bcc) if bcc else None,
        subject=subject,
        text=common.read_text_file(text_file) if text_file is not None else None,
    )
    if not drops.empty and (changes.texts() or no_comment):
        raise InvalidInput("--drop-part, --drop-label and --drop-item make an edit of their own")
    with common.app() as opened:
        actor = common.principal(opened, token)
        target = common.find_id(opened, actor, proposal_id, "proposal", "run")
        from resolveflow.gate import decisions

        proposal = (
            decisions.edit(opened.db, actor, target, changes)
            if drops.empty
            else decisions.drop(opened.db, actor, target, drops)
        )
        view = service.describe(opened.db, actor, proposal.id)
    emit(view, as_json, lambda: _render(view))


@proposals_app.command("show")
def show(
    proposal_id: str, token: str | None = common.TokenOption, as_json: bool = common.JsonOption
) -> None:
    """Show the exact action, its digest and its state."""
    from resolveflow.gate.outcome_words import GITLAB_KIND
    from resolveflow.gate.posting import proposal_outcome

    with common.app() as opened:
        actor = common.principal(opened, token)
        view = service.describe(
            opened.db, actor, common.find_id(opened, actor, proposal_id, "proposal")
        )
        if view["decision"] is not None:  # the client is built only when there is an outcome
            lookup = opened.token_lookup()
            gitlab = opened.gitlab() if view["kind"] == GITLAB_KIND else None
            view["outcome"] = proposal_outcome(
                opened.db, actor, view, opened.github, lookup, gitlab
            )
    emit(view, as_json, lambda: _render(view))


@proposals_app.command("list")
def list_(token: str | None = common.TokenOption, as_json: bool = common.JsonOption) -> None:
    """Every proposal, newest first (those in the digest too); above them, one line per kind that
    went to the digest by itself (``resolveflow digest`` lists those kept out of the inbox)."""
    with common.app() as opened:
        principal = common.principal(opened, token)
        rows = service.list_proposals(opened.db, principal)
        moved = [] if as_json else quiet.notices(opened.db, principal, opened.quiet())
    say_moved(moved)
    emit(
        rows,
        as_json,
        lambda: table(
            "proposals",
            [whole("id"), "version", "kind", "target", "decision", "execution"],
            [
                (
                    r["id"],
                    r["version"],
                    plain.words(r["kind"], "ActionKind"),
                    r["target"],
                    plain.decision(r["decision"]),
                    plain.state(r["execution_state"]),
                )
                for r in rows
            ],
        ),
    )


def _deciding(opened: App) -> decisions.Deciding:
    """The web's path (``decisions``), but a run resumes here and now, under the decision's
    lease, rather than in the worker."""
    from resolveflow.gate import decisions
    from resolveflow.gate.approvals import RepositoryLabels

    return decisions.Deciding(
        runs=opened.run_handle(),
        follow_up=decisions.FollowUp.NOW,
        ttl_seconds=opened.settings.approval.ttl_seconds,
        lease_seconds=opened.settings.triage.run_lease_seconds,
        labels=RepositoryLabels(opened.github),  # "labels exist" without a run: this command's
        mailboxes=opened.mailbox_lookup(),
        aliases=opened.alias_lookup(),
    )


def approve(
    run_or_proposal: str,
    digest: str = typer.Option(..., "--digest", help="The SHA-256 digest you reviewed."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Approve exactly this digest (of a run's proposal, or of a proposal); a run then continues
    and the executor performs the action once."""
    checked = check_digest_format(digest)
    typed = common.check_id(run_or_proposal, "run", "proposal")
    with common.app() as opened:
        actor = common.principal(opened, token)
        target = common.find_id(opened, actor, typed, "run", "proposal")
        from resolveflow.gate import decisions

        decided = decisions.approve(opened.db, actor, target, checked, _deciding(opened))
        assert decided.execution_id is not None
        execution = execution_service.show_execution(opened.db, actor, decided.execution_id)
    data = {
        "approval_id": str(decided.approval_id),
        "proposal_id": str(decided.proposal_id),
        "run_id": str(decided.run_id) if decided.run_id else None,
        "digest": checked,
        "execution_id": execution["id"],
        "execution_state": execution["state"],
        "comment_url": execution["comment_url"],
        "result_url": execution["result_url"],
        "expires_at": decided.expires_at,
    }
    rows = [
        ("approved", data["proposal_id"]),
        ("run", data["run_id"]),
        ("execution", f"{execution['id']} ({plain.state(execution['state'])})"),
        ("written", execution["result_url"] or execution["comment_url"]),
        ("next", _next_step(execution)),
    ]
    # Only what exists: a proposal without a run, an action not written yet, has no such line.
    emit(data, as_json, lambda: fields([(name, value) for name, value in rows if value]))


def _next_step(execution: dict[str, Any]) -> str:
    """After an approval: what carries the action out, or that it was already (a run's action
    is carried out as it is approved; a proposal's waits for ``execute``)."""
    state = ExecutionState(execution["state"])
    if state is ExecutionState.PENDING:
        return "resolveflow execute --once carries it out"
    if state is ExecutionState.SENT:
        return "nothing: it was carried out as it was approved"
    said = (
        f"{plain.state(state)}: {execution['detail']}"
        if execution["detail"]
        else plain.state(state)
    )
    return f"{said}; see resolveflow executions show {execution['id']}"


def reject(
    run_or_proposal: str,
    reason: str = typer.Option(..., "--reason", help="Why; kept in the audit trail."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Reject a run's proposal (or a proposal) with a reason; nothing is written."""
    typed = common.check_id(run_or_proposal, "run", "proposal")
    with common.app() as opened:
        actor = common.principal(opened, token)
        target = common.find_id(opened, actor, typed, "run", "proposal")
        from resolveflow.gate import decisions

        decided = decisions.reject(opened.db, actor, target, reason, _deciding(opened))
    data = {
        "approval_id": str(decided.approval_id),
        "proposal_id": str(decided.proposal_id),
        "run_id": str(decided.run_id) if decided.run_id else None,
        "decision": decided.decision.value,
        "reason": reason.strip(),
    }
    emit(
        data,
        as_json,
        lambda: console.print(
            Text(f"rejected {data['proposal_id']}: {data['reason']}; nothing is written"),
            soft_wrap=True,
        ),
    )
