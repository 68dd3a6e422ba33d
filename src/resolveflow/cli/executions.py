"""The executor, reconciliation and settling unknown outcomes."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

import typer
from rich.text import Text

from resolveflow.accounts import admin
from resolveflow.cli import common, plain
from resolveflow.cli.output import console, emit, err_console, fields, table, timeline, whole
from resolveflow.domain.counted import counted, plural
from resolveflow.domain.records import Execution
from resolveflow.domain.vocabulary import ExecutionState
from resolveflow.errors import ConfigError, InvalidInput, ResolveFlowError, Unavailable
from resolveflow.gate import executions as service
from resolveflow.gate.credentials import check_due_credentials
from resolveflow.gate.kinds.base import Settled
from resolveflow.gate.reconcile import Skipped

if TYPE_CHECKING:
    from resolveflow.bootstrap.app import App
    from resolveflow.gate.executor import Executor

executions_app = typer.Typer(help="Approved actions and what became of them.", no_args_is_help=True)
logger = logging.getLogger(__name__)


def execute(
    once: bool = typer.Option(False, "--once", help="Drain what is due now, then exit."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Stop after N executions."),
    as_json: bool = common.JsonOption,
) -> None:
    """Carry out approved proposals that are due (an approved run's action is carried out at once).

    Due are the proposals made without a run (proposals create, mail drafts) and the retries of
    pending ones. An approved run carries out its own action as it is approved (on the web, in
    the worker), so it is not left for this command."""
    with common.app() as opened:
        _check_credentials(opened, _tenant_ids(opened))
        executor, reconciler = opened.executor(), opened.reconciler()
        done = _drain(opened, executor, limit)
        total = len(done)
        while not once and (limit is None or total < limit):
            time.sleep(opened.settings.executor.poll_seconds)
            try:
                # Crashed owners' leases expire; settling them keeps the queue honest.
                reconciler.run(min_age_seconds=opened.settings.executor.reconcile_interval_seconds)
                total += executor.run_due(
                    tenant_ids=_ready_tenants(opened),
                    limit=None if limit is None else limit - total,
                )
            except ResolveFlowError as exc:
                # A long-running worker outlives a database restart or one bad execution: nothing
                # is lost, because an execution whose outcome was not recorded stays leased and
                # is reconciled.
                logger.warning("executor round failed; retrying", extra={"error": exc.message})
        waiting = _waiting(opened) if total == 0 and not as_json else ""
    if not as_json:
        _show_executed(done, total, waiting)
    _fail_unless_done(done, "executed")
    emit({"processed": total}, as_json, lambda: None)


def _tenant_ids(opened: App) -> list[UUID]:
    return [tenant.id for tenant in admin.list_tenants(opened.db)]


def _check_credentials(opened: App, tenant_ids: list[UUID]) -> None:
    check_due_credentials(opened.db, tenant_ids, opened.configured_credentials())


def _ready_tenants(opened: App) -> list[UUID]:
    """The tenants whose due executions all have a credential; the others wait (and say so)."""
    ready = []
    for tenant_id in _tenant_ids(opened):
        try:
            _check_credentials(opened, [tenant_id])
            ready.append(tenant_id)
        except ConfigError as exc:
            logger.warning("executions wait for a credential", extra={"error": exc.message})
    return ready


def _drain(opened: App, executor: Executor, limit: int | None) -> list[Execution]:
    """As ``Executor.run_due``, keeping each execution's outcome to report it."""
    done: list[Execution] = []
    for tenant_id in _tenant_ids(opened):
        while limit is None or len(done) < limit:
            execution = executor.execute_next(tenant_id)
            if execution is None:
                break
            done.append(execution)
    return done


def _show_executed(done: list[Execution], total: int, waiting: str) -> None:
    if done:
        table(
            "executed",
            [whole("execution"), "state", "detail"],
            [(e.id, plain.state(e.state), _said(e.state, e.detail)) for e in done],
        )
    if total == 0:
        console.print(Text(waiting), soft_wrap=True)
        return
    said = f"processed {counted(total, 'execution')}"
    if len(done) == total:  # a long run's later rounds are counted, not kept
        states = Counter(plain.state(e.state) for e in done)
        said += ": " + "; ".join(f"{n} {words}" for words, n in states.items())
    console.print(Text(said), soft_wrap=True)


def _said(state: ExecutionState, detail: str | None) -> str:
    """An execution's detail, unless it only repeats its state (``sent`` beside ``posted``)."""
    if not detail or detail.strip().lower() in (state.value, plain.state(state)):
        return ""
    return detail


def _waiting(opened: App) -> str:
    """Why nothing was carried out, in words: what the executions of every tenant are waiting
    for, if anything (issue 29: "processed 0" read as broken after an approval that had
    already posted)."""
    from resolveflow.store import metrics

    with opened.db.unscoped() as conn:
        counts = metrics.metric_counts(conn).get("executions", {})
    n = {state: int(counts.get(state.value, 0)) for state in ExecutionState}
    done = sum(n[state] for state in ExecutionState if state.is_final)
    parts = [f"{done} already done" if done else "nothing approved yet"]
    if n[ExecutionState.PENDING]:
        parts.append(f"{n[ExecutionState.PENDING]} waiting until later (a rate limit or an outage)")
    if n[ExecutionState.SENDING]:
        parts.append(f"{n[ExecutionState.SENDING]} being carried out by another executor")
    if n[ExecutionState.UNKNOWN]:
        parts.append(
            f"{n[ExecutionState.UNKNOWN]} with an unknown outcome (resolveflow reconcile settles "
            "them)"
        )
    return (
        "nothing waiting to be carried out: " + "; ".join(parts) + ". An approved run's action "
        "is carried out as it is approved; an approved proposal waits for this command."
    )


# The outcomes that mean the work did not get done: a person has to look (docs/cli.md).
_NOT_DONE = {ExecutionState.FAILED, ExecutionState.PARTIAL, ExecutionState.UNKNOWN}


def _fail_unless_done(executions: Sequence[Execution | Settled | Skipped], verb: str) -> None:
    """Exit non-zero, naming them, when some executions failed or ended unknown, or were left
    as they were (Unavailable: GitHub refused or did not answer, as ``ProviderError`` is)."""
    bad = [e for e in executions if _not_done(e)]
    if bad:
        named = "; ".join(f"{_id(e)} {e.state.value}: {_detail(e)}" for e in bad)
        raise Unavailable(
            f"{len(bad)} of {len(executions)} {verb} {plural(len(executions), 'execution')} did not "
            f"complete: {named}; "
            "see `resolveflow executions show ID`"
        )


def _not_done(e: Execution | Settled | Skipped) -> bool:
    return e.state in _NOT_DONE or e.state is ExecutionState.SENDING


def _id(e: Execution | Settled | Skipped) -> UUID:
    return e.id if isinstance(e, Execution) else e.execution_id


def _detail(e: Execution | Settled | Skipped) -> str:
    return (e.reason if isinstance(e, Skipped) else e.detail) or "no detail"


def _outcome(result: Settled | Skipped) -> dict[str, str]:
    """One execution reconciliation looked at: settled (a final state), still unknown, given
    back to the queue (no request had left), or skipped with the reason."""
    if isinstance(result, Skipped):
        outcome, detail = "skipped", result.reason
    else:
        outcome, detail = _SETTLED_AS.get(result.state, "settled"), result.detail
    return {
        "execution_id": str(result.execution_id),
        "state": result.state.value,
        "outcome": outcome,
        "detail": detail,
    }


_SETTLED_AS = {ExecutionState.UNKNOWN: "still_unknown", ExecutionState.PENDING: "requeued"}


def reconcile(as_json: bool = common.JsonOption) -> None:
    """Settle unknown and abandoned executions by reading GitHub; never resends."""
    with common.app() as opened:
        results = opened.reconciler().survey()
    data = [_outcome(result) for result in results]
    if not as_json:
        if data:
            table(
                "reconciled",
                [whole("execution"), "state", "outcome", "detail"],
                [
                    (
                        d["execution_id"],
                        plain.state(d["state"]),
                        plain.reconcile_words(d["outcome"]),
                        d["detail"],
                    )
                    for d in data
                ],
            )
        else:
            console.print("nothing to reconcile")
        _fail_unless_done(results, "reconciled")
        return
    emit(data, as_json, lambda: None)
    try:
        _fail_unless_done(results, "reconciled")
    except Unavailable as exc:
        from resolveflow.cli import exit_code_for

        # The report above is the one JSON document, every execution in it; the exit code and
        # the error line still say that work is left (docs/cli.md).
        err_console.print(Text.assemble(("error:", "red"), " ", exc.message), soft_wrap=True)
        raise typer.Exit(exit_code_for(exc)) from None


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
            [whole("id"), "state", "kind", "target", "detail"],
            [
                (
                    r["id"],
                    plain.state(r["state"]),
                    plain.words(r["kind"], "ActionKind"),
                    r["target"],
                    _said(ExecutionState(r["state"]), r["detail"]),
                )
                for r in rows
            ],
        ),
    )


@executions_app.command("show")
def show(
    execution_id: str, token: str | None = common.TokenOption, as_json: bool = common.JsonOption
) -> None:
    from resolveflow.gate.outcome_words import GITLAB_KIND
    from resolveflow.gate.posting import execution_outcome

    with common.app() as opened:
        actor = common.principal(opened, token)
        found = common.find_id(opened, actor, execution_id, "execution")
        view = service.show_execution(opened.db, actor, found)
        # What became of it, in words, with the link (as the execution page says).
        lookup = opened.token_lookup()
        gitlab = opened.gitlab() if view["kind"] == GITLAB_KIND else None
        view["outcome"] = execution_outcome(opened.db, actor, found, opened.github, lookup, gitlab)

    emit(view, as_json, lambda: _render(view))


# What ``executions show`` prints of the view, in this order, with the words for each key.
_SHOWN = ("id", "state", "kind", "target", "proposal_id", "digest", "comment_url", "labels_done",
          "result_url", "detail")  # fmt: skip


def _render(view: dict[str, Any]) -> None:
    state = ExecutionState(view["state"])
    values = {
        **view,
        "state": plain.state(state),
        "kind": plain.words(view["kind"], "ActionKind"),
        "labels_done": "yes" if view["labels_done"] else None,
        "detail": _said(state, view["detail"]) or None,
    }
    shown = [
        (plain.words(key, "key"), values[key]) for key in _SHOWN if values.get(key) is not None
    ]
    fields([*shown, ("outcome", view["outcome"]["text"])])
    if view["attempts"]:  # print only what exists: a pending execution has none
        table(
            "attempts",
            ["step", "credential", "started", "outcome", "HTTP status"],
            [
                (
                    plain.words(a["step"], "AttemptStep"),
                    plain.words(a["credential"], "Credential"),
                    plain.moment(a["started_at"]),
                    plain.words(a["outcome"], "AttemptOutcome") if a["outcome"] else "no answer",
                    a["http_status"],
                )
                for a in view["attempts"]
            ],
        )
    else:
        console.print("attempts: none yet")
    timeline(view["timeline"])


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
        actor = common.principal(opened, token)
        after = service.resolve(
            opened.db,
            actor,
            common.find_id(opened, actor, execution_id, "execution"),
            was_sent=was_sent,
            note=note,
        )
    view = service.execution_view(after)
    emit(
        view,
        as_json,
        lambda: console.print(f"execution {after.id} is now {plain.state(after.state)}"),
    )
