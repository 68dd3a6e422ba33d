"""``resolveflow mail draft|edit|show|drafts``: replies drafted from the mailbox's past replies,
checked, edited by a person and turned into an ``email.send`` proposal to approve."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any
from uuid import UUID

import typer
from rich.text import Text

from resolveflow.bootstrap.app import App
from resolveflow.cli import common, plain
from resolveflow.cli.output import console, emit, exact, fields, table, whole
from resolveflow.domain.counted import plural
from resolveflow.domain.records import Principal
from resolveflow.domain.vocabulary import Decision, ExecutionState
from resolveflow.errors import InvalidInput

MAX_REQUEST_BYTES = 10_000_000
SENT = "approved and sent"


def register(app: typer.Typer) -> None:
    app.command("draft")(draft)
    app.command("edit")(edit)
    app.command("show")(show)
    app.command("drafts")(drafts)


def _draft_id(value: str) -> UUID:
    try:
        return UUID(value.strip())
    except ValueError:
        raise InvalidInput(f"a draft id is a UUID, got {value!r}") from None


def _read_request(path: Path) -> bytes:
    from resolveflow.mail.files import read_file

    if str(path) != "-" and not path.exists():
        raise InvalidInput(f"no such file: {path}")
    # Never more than the bound, and no FIFO or device: /dev/zero must not fill the memory.
    if str(path) != "-":
        return read_file(path, MAX_REQUEST_BYTES, follow=True)
    data = typer.get_binary_stream("stdin").read(MAX_REQUEST_BYTES + 1)
    if len(data) > MAX_REQUEST_BYTES:
        raise InvalidInput(f"{path} is larger than {MAX_REQUEST_BYTES} bytes")
    return data


def draft(
    mailbox: str = typer.Option(..., "--mailbox", help="The mailbox that replies (its From)."),
    reply_to: Path = typer.Option(
        ..., "--reply-to", help="The request to answer: one .eml file (- for stdin)."
    ),
    facts: Path | None = typer.Option(
        None, "--facts", help="Staff facts for the reply: 'name: value' lines (a file)."
    ),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Draft a reply from the mailbox's most similar past replies; it is checked, and a draft
    that passes becomes a proposal to approve."""
    from resolveflow.bootstrap.mail_drafts import mail_drafts
    from resolveflow.mail.loader import parse_message
    from resolveflow.mail.views import draft_view

    bounds = common.settings().mail.bounds()
    request = parse_message(_read_request(reply_to), str(reply_to), bounds)
    facts_text = common.read_text_file(facts) if facts is not None else ""
    with common.app() as opened:
        actor = common.principal(opened, token)
        service = mail_drafts(opened, actor)
        record, _ = service.draft(actor, mailbox, request, facts_text)
        view = draft_view(opened.db, actor, *service.load(actor, record.id))
        fate = _fate(opened, actor, view)
    emit(view, as_json, lambda: _print_draft(view, fate))


def edit(
    draft_id: str = typer.Argument(..., help="The draft's id."),
    version: int = typer.Option(..., "--version", help="The version you read and are editing."),
    subject: str | None = typer.Option(None, "--subject", help="A new subject."),
    body_file: Path | None = typer.Option(None, "--body-file", help="A new body (a file)."),
    to: list[str] = typer.Option([], "--to", help="Replace To with these (repeat)."),
    cc: list[str] = typer.Option([], "--cc", help="Replace Cc with these (repeat)."),
    bcc: list[str] = typer.Option([], "--bcc", help="Replace Bcc with these (repeat)."),
    clear_cc: bool = typer.Option(False, "--no-cc", help="Remove every Cc."),
    clear_bcc: bool = typer.Option(False, "--no-bcc", help="Remove every Bcc."),
    facts: Path | None = typer.Option(
        None,
        "--facts",
        help="Replace the staff facts: 'name: value' lines (a file; empty clears them).",
    ),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Edit the latest version of a draft: a new version, checked again (and proposed again if
    it passes; the earlier approval does not cover it). With --facts alone, the same text is
    checked again with the new facts."""
    from resolveflow.bootstrap.mail_drafts import mail_drafts
    from resolveflow.mail.drafts import Edit
    from resolveflow.mail.views import draft_view

    wanted = _draft_id(draft_id)
    change = Edit(
        subject=subject,
        body=common.read_text_file(body_file) if body_file is not None else None,
        to=tuple(to) or None,
        cc=() if clear_cc else (tuple(cc) or None),
        bcc=() if clear_bcc else (tuple(bcc) or None),
        facts=common.read_text_file(facts) if facts is not None else None,
    )
    with common.app() as opened:
        actor = common.principal(opened, token)
        service = mail_drafts(opened, actor)
        service.edit(actor, wanted, version, change)
        view = draft_view(opened.db, actor, *service.load(actor, wanted))
        fate = _fate(opened, actor, view)
    emit(view, as_json, lambda: _print_draft(view, fate))


def show(
    draft_id: str = typer.Argument(..., help="The draft's id."),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Show a draft: the request, the latest version, its examples and checks, its proposal."""
    from resolveflow.bootstrap.mail_drafts import mail_drafts
    from resolveflow.mail.views import draft_view

    wanted = _draft_id(draft_id)
    with common.app() as opened:
        actor = common.principal(opened, token)
        view = draft_view(opened.db, actor, *mail_drafts(opened, actor).load(actor, wanted))
        fate = _fate(opened, actor, view)
    emit(view, as_json, lambda: _print_draft(view, fate))


def drafts(
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """List recent drafts of the mailboxes you hold a grant for."""
    from resolveflow.bootstrap.mail_drafts import mail_drafts

    with common.app() as opened:
        actor = common.principal(opened, token)
        rows = mail_drafts(opened, actor).recent(actor)
    emit(
        [asdict(r) for r in rows],
        as_json,
        lambda: table(
            "drafts",
            [whole("id"), "mailbox", "requester", "subject", "versions", "created"],
            [
                (r.id, r.mailbox, r.requester, r.subject, r.versions, plain.moment(r.created_at))
                for r in rows
            ],
        ),
    )


def _print_draft(view: dict[str, Any], fate: str | None) -> None:
    latest = view["latest"]
    request = view["request"]
    fields(
        [
            ("draft", view["id"]),
            ("version", f"{latest['version']} ({latest['author_text']})"),
            ("request", f"{request['from']}: {request['subject']}{_unreceived(request)}"),
            ("from", view["mailbox"]),
            ("to", ", ".join(latest["to"])),
            ("cc", ", ".join(latest["cc"]) or "-"),
            ("bcc", ", ".join(latest["bcc"]) or "-"),
            ("subject", latest["subject"]),
            ("facts", "; ".join(latest["facts"].strip().splitlines()) or "none given"),
        ]
    )
    seen = "as it was sent" if fate == SENT else "as the recipient will see it"
    console.print(exact(latest["body"], f"body, {seen}"))
    for example in latest["examples"]:
        console.print(
            Text(
                f"example {example['reply_message_id']} ({example['score']}): {example['subject']}"
            )
        )
    if latest["missing_information"]:
        console.print(Text("missing: " + ", ".join(latest["missing_information"])))
    if latest["new_recipients"]:
        new = ", ".join(latest["new_recipients"])
        said = plural(len(latest["new_recipients"]), "new recipient")
        console.print(Text(f"{said}, in no message the mailbox received: {new}"))
    if latest["findings"]:
        for finding in latest["findings"]:
            console.print(Text(f"check failed: {finding['message']}", style="bold red"))
        console.print(
            Text(
                f"not proposed: edit it with resolveflow mail edit {view['id']} "
                f"--version {latest['version']} ..."
            )
        )
        return
    proposal = latest["proposal"]
    rows = [
        ("checks", "all passed"),
        ("proposal", proposal["id"]),
        ("digest", proposal["digest"]),
    ]
    if fate is None:
        rows.append(
            ("approve with", f"resolveflow approve {proposal['id']} --digest {proposal['digest']}")
        )
    else:
        rows.append(("state", fate))
    fields(rows)


def _unreceived(request: dict[str, Any]) -> str:
    return "" if request["received"] else " (never received by the mailbox)"


def _fate(opened: App, actor: Principal, view: dict[str, Any]) -> str | None:
    """What became of the latest version's proposal, in words; None while it waits for a
    decision (then the command that approves it is printed instead)."""
    from resolveflow.gate import proposals

    proposal = view["latest"]["proposal"]
    if proposal is None:
        return None
    described = proposals.describe(opened.db, actor, UUID(proposal["id"]))
    decision, execution = described["decision"], described["execution"]
    if decision is None:
        return None
    if decision == Decision.REJECTED.value:
        return "rejected: it is not sent"
    state = ExecutionState(execution["state"]) if execution else ExecutionState.PENDING
    if state is ExecutionState.SENT:
        return SENT
    if state is ExecutionState.PENDING:
        return "approved; resolveflow execute --once sends it"
    return f"approved; {plain.state(state)} (resolveflow executions show {execution['id']})"
