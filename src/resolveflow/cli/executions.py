"""The executor, reconciliation and settling unknown outcomes."""

from __future__ import annotations

import logging
import time

import typer

from resolveflow.cli import common
from resolveflow.cli.output import console, emit, fields, table
from resolveflow.errors import InvalidInput, ResolveFlowError
from resolveflow.service import executions as service

executions_app = typer.Typer(help="Approved actions and what became of them.", no_args_is_help=True)
logger = logging.getLogger(__name__)


def execute(
    once: bool = typer.Option(False, "--once", help="Drain what is due now, then exit."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Stop after N executions."),
    as_json: bool = common.JsonOption,
) -> None:
    """Run due executions (the only command that writes to GitHub)."""
    with common.app() as opened:
        executor = opened.executor()
        reconciler = opened.reconciler()
        total = executor.run_due(limit=limit)
        while not once and (limit is None or total < limit):
            time.sleep(opened.settings.executor.poll_seconds)
            try:
                # Crashed owners' leases expire; settling them keeps the queue honest.
                reconciler.run(min_age_seconds=opened.settings.executor.reconcile_interval_seconds)
                total += executor.run_due(limit=None if limit is None else limit - total)
            except ResolveFlowError as exc:
                # A long-running worker outlives a database restart or one bad execution: nothing
                # is lost, because an execution whose outcome was not recorded stays leased and
                # is reconciled.
                logger.warning("executor round failed; retrying", extra={"error": exc.message})
    emit({"processed": total}, as_json, lambda: console.print(f"processed {total} execution(s)"))


def reconcile(as_json: bool = common.JsonOption) -> None:
    """Settle unknown and abandoned executions by reading GitHub; never resends."""
    with common.app() as opened:
        settled = opened.reconciler().run()
    data = [
        {"execution_id": str(s.execution_id), "state": s.state.value, "detail": s.detail}
        for s in settled
    ]
    emit(
        data,
        as_json,
        lambda: (
            table(
                "reconciled",
                ["execution", "state", "detail"],
                [(d["execution_id"], d["state"], d["detail"]) for d in data],
            )
            if data
            else console.print("nothing to reconcile")
        ),
    )


@executions_app.command("list")
def list_(
    state: str | None = typer.Option(None, "--state"),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    with common.app() as opened:
        try:
            rows = service.list_executions(opened.db, common.principal(opened, token), state)
        except ValueError:
            raise InvalidInput(f"unknown state {state!r}") from None
    emit(
        rows,
        as_json,
        lambda: table(
            "executions",
            ["id", "state", "kind", "target", "detail"],
            [(r["id"], r["state"], r["kind"], r["target"], r["detail"]) for r in rows],
        ),
    )


@executions_app.command("show")
def show(
    execution_id: str, token: str | None = common.TokenOption, as_json: bool = common.JsonOption
) -> None:
    with common.app() as opened:
        view = service.show_execution(
            opened.db, common.principal(opened, token), common.parse_id(execution_id, "execution")
        )

    def render() -> None:
        fields(
            [
                (key, view[key])
                for key in (
                    "id",
                    "state",
                    "kind",
                    "target",
                    "proposal_id",
                    "digest",
                    "comment_url",
                    "labels_done",
                    "result_url",
                    "detail",
                )
                if view.get(key) is not None
            ]
        )
        table(
            "attempts",
            ["step", "credential", "started", "outcome", "status"],
            [
                (
                    a["step"],
                    a["credential"],
                    a["started_at"],
                    a["outcome"] or "(no outcome)",
                    a["http_status"],
                )
                for a in view["attempts"]
            ],
        )
        table(
            "timeline",
            ["at", "actor", "event"],
            [(e["at"], e["actor"], e["event"]) for e in view["timeline"]],
        )

    emit(view, as_json, render)


@executions_app.command("resolve")
def resolve(
    execution_id: str,
    was_sent: bool = typer.Option(False, "--was-sent", help="You saw it on GitHub."),
    not_sent: bool = typer.Option(False, "--not-sent", help="You checked: it is not there."),
    note: str | None = typer.Option(None, "--note"),
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Settle an unknown execution after checking the target yourself. Nothing is resent."""
    if was_sent == not_sent:
        raise InvalidInput("give exactly one of --was-sent or --not-sent")
    with common.app() as opened:
        after = service.resolve(
            opened.db,
            common.principal(opened, token),
            common.parse_id(execution_id, "execution"),
            was_sent=was_sent,
            note=note,
        )
    view = service.execution_view(after)
    emit(view, as_json, lambda: console.print(f"execution {after.id} is now {after.state.value}"))
