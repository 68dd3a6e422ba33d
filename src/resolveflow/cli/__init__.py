"""The ``resolveflow`` command line.

``COMMANDS`` names every top-level command, its help line and where it lives; a command's module
is imported only when that command runs (``cli/lazy.py``), so ``--help`` and the quick commands
start without the triage graph, the search stack or the web app.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys

import typer
from rich.text import Text
from typer._click import exceptions as click_errors

from resolveflow.cli.lazy import Entry, LazyGroup
from resolveflow.cli.output import err_console
from resolveflow.errors import ErrorCategory, ResolveFlowError, one_line
from resolveflow.logging_setup import configure_logging
from resolveflow.telemetry import configure_tracing

logger = logging.getLogger(__name__)


def _eval_app() -> typer.Typer:
    """The ``eval`` group: retrieval's evaluations and the investigation's, in one group."""
    from resolveflow.cli import (
        ask_cmds,
        changes_eval,
        investigation_cmds,
        mail_eval,
        retrieval_cmds,
    )

    if not any(c.name == "safety" for c in retrieval_cmds.eval_app.registered_commands):
        investigation_cmds.add_eval_commands(retrieval_cmds.eval_app)
    if not any(c.name == "answers" for c in retrieval_cmds.eval_app.registered_commands):
        ask_cmds.add_eval_commands(retrieval_cmds.eval_app)
    if not any(c.name == "changes" for c in retrieval_cmds.eval_app.registered_commands):
        changes_eval.add_eval_commands(retrieval_cmds.eval_app)
    if not any(c.name == "drafts" for c in retrieval_cmds.eval_app.registered_commands):
        mail_eval.add_eval_commands(retrieval_cmds.eval_app)
    return retrieval_cmds.eval_app


_CLI = "resolveflow.cli."
# The help lines are those of the commands themselves (tests/core/unit/test_cli_registry.py checks).
COMMANDS: tuple[Entry, ...] = (
    Entry(
        "triage",
        "Start a triage run: gather evidence, classify by rules, propose, wait for approval.",
        _CLI + "triage:triage",
    ),
    Entry(
        "approve",
        "Approve exactly this digest (of a run's proposal, or of a proposal); a run then "
        "continues and the executor performs the action once.",
        _CLI + "proposals:approve",
    ),
    Entry(
        "reject",
        "Reject a run's proposal (or a proposal) with a reason; nothing is written.",
        _CLI + "proposals:reject",
    ),
    Entry(
        "execute",
        "Carry out approved proposals that are due (an approved run's action is carried out at once).",
        _CLI + "executions:execute",
    ),
    Entry(
        "reconcile",
        "Settle unknown and abandoned executions by reading GitHub; never resends.",
        _CLI + "executions:reconcile",
    ),
    Entry(
        "demo",
        "The inbox on a sandbox forge: webhook -> triage -> approve in the browser -> posted once.",
        _CLI + "demo:demo",
    ),
    Entry(
        "sandbox",
        "The sandbox forge: a fake GitHub on 127.0.0.1 with the sample repository "
        "sandbox/widgets (never GitHub).",
        _CLI + "sandbox_cmd:sandbox_app",
    ),
    Entry(
        "search",
        "Hybrid search (meaning and words) over the tenant's index.",
        _CLI + "retrieval_cmds:search",
    ),
    Entry(
        "ask",
        "Answer a question from the tenant's documents, with citations, or say there is no source.",
        _CLI + "ask_cmds:ask",
    ),
    Entry(
        "gaps",
        "The questions Ask could not answer, grouped by topic, the biggest first; with "
        "--propose, an issue proposed for the biggest one.",
        _CLI + "gaps_cmds:gaps",
    ),
    Entry(
        "refine",
        "Refine a raw ticket into verified context: related tasks, relevance, a summary with "
        "scopes, a runbook, the changes that solved similar tasks.",
        _CLI + "refine_cmds:refine_app",
    ),
    Entry(
        "plan",
        "Plan with a model: search the tenant's documents, maybe prepare an issue, answer.",
        _CLI + "plan_cmds:plan",
    ),
    Entry(
        "backtest",
        "Replay triage on past issues in shadow mode (nothing is proposed or sent) and measure "
        "each part of what it would have proposed against what the maintainers did.",
        _CLI + "investigation_cmds:backtest",
    ),
    Entry(
        "mcp",
        "Serve the MCP tools on stdio to one agent, as the principal of RESOLVEFLOW_TOKEN: read "
        "and propose; a person approves in the inbox.",
        _CLI + "mcp_cmds:mcp",
    ),
    Entry(
        "serve",
        "Serve the JSON API, the approval inbox and the GitHub webhook endpoint.",
        _CLI + "web_cmds:serve",
    ),
    Entry(
        "worker",
        "Run background jobs: webhook runs, executions, reconciliation and index updates.",
        _CLI + "web_cmds:worker",
    ),
    Entry("db", "Database schema.", _CLI + "admin:db_app"),
    Entry("tenants", "Tenants.", _CLI + "admin:tenants_app"),
    Entry(
        "principals",
        "People and services that act through ResolveFlow.",
        _CLI + "admin:principals_app",
    ),
    Entry(
        "sign-in-link",
        "Print a one-time link that signs a principal in to the web pages (no GitHub app needed).",
        _CLI + "signin_cmds:sign_in_link",
    ),
    Entry("repos", "The repositories a tenant may act on.", _CLI + "admin:repos_app"),
    Entry("tokens", "Principals' own GitHub tokens, encrypted at rest.", _CLI + "admin:tokens_app"),
    Entry("proposals", "Proposed actions awaiting a decision.", _CLI + "proposals:proposals_app"),
    Entry(
        "executions",
        "Approved actions and what became of them.",
        _CLI + "executions:executions_app",
    ),
    Entry(
        "decisions",
        "The team's decisions on what ResolveFlow suggested, and how each kind fared.",
        _CLI + "decisions_cmds:decisions_app",
    ),
    Entry(
        "digest",
        "The daily digest: suggestions kept out of the inbox, per day, place and kind.",
        _CLI + "digest_cmds:digest",
    ),
    Entry("runs", "Triage runs.", _CLI + "triage:runs_app"),
    Entry("policy", "The triage policy file.", _CLI + "triage:policy_app"),
    Entry(
        "index",
        "Put issues, pull requests and docs into the search index.",
        _CLI + "retrieval_cmds:index_app",
    ),
    Entry("eval", "Measure retrieval and label suggestion on a corpus.", _eval_app),
    Entry("webhooks", "GitHub webhooks.", _CLI + "webhooks_cmds:webhooks_app"),
    Entry("gitlab", "GitLab: each tenant's token.", _CLI + "gitlab_cmds:gitlab_app"),
    Entry(
        "github-app",
        "A GitHub App: its manifest and its installations' tenants.",
        _CLI + "github_app_cmds:github_app_app",
    ),
    Entry(
        "notify",
        "Where each tenant's notifications about waiting proposals go.",
        _CLI + "notify_cmds:notify_app",
    ),
    Entry(
        "mail",
        "Email: import sent mail, draft replies, store mailbox credentials.",
        _CLI + "mail_cmds:mail_app",
    ),
    Entry(
        "issues",
        "Issues prepared from a tenant's project aliases.",
        _CLI + "gitlab_cmds:issues_app",
    ),
)


class _Commands(LazyGroup):
    entries = COMMANDS


app = typer.Typer(
    name="resolveflow",
    help="Issue triage where the model proposes, the application authorizes and code executes.",
    cls=_Commands,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    # Typer builds a group only from an app with a callback or registered commands; the
    # commands here come from COMMANDS, through the group class.
    pass


# One exit code per error category (docs/errors.md). 2 is also what Click uses for a usage
# error, which is invalid input too; 1 means "unexpected": a bug, or an error with no category.
EXIT_CODES: dict[ErrorCategory, int] = {
    ErrorCategory.INVALID_INPUT: 2,
    ErrorCategory.NOT_FOUND: 3,
    ErrorCategory.FORBIDDEN: 4,
    ErrorCategory.CONFLICT: 5,
    ErrorCategory.UNAVAILABLE: 6,
    ErrorCategory.CONFIGURATION: 7,
}
UNEXPECTED = 1
USAGE = 2
INTERRUPTED = 130
# The "kind" of an error in the JSON document printed with --json: a category's value, or one of
# these for the failures that have no category.
USAGE_KIND, UNEXPECTED_KIND, INTERRUPTED_KIND = "usage", "unexpected", "interrupted"
_DETAILS_HINT = "(run with RESOLVEFLOW_LOG_LEVEL=DEBUG for details)"


def exit_code_for(exc: ResolveFlowError) -> int:
    return UNEXPECTED if exc.category is None else EXIT_CODES[exc.category]


class _Failure:
    """How one failure is reported: the ``error:`` line on stderr, and with ``--json`` also
    exactly one JSON document on stdout (the command printed nothing before it failed)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def __call__(self, message: str, code: int, kind: str) -> int:
        line = one_line(message)
        err_console.print(Text.assemble(("error:", "red"), " ", line))
        if self.as_json:
            print(json.dumps({"error": {"kind": kind, "message": line}}, ensure_ascii=False))
        return code


def _usage(exc: click_errors.UsageError) -> str:
    """Click's message (it names the option or argument), and where the usage is explained."""
    message = exc.format_message()
    if exc.ctx is not None:
        message += f" (see: {exc.ctx.command_path} --help)"
    return message


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure ends as one ``error:`` line on stderr and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    fail = _Failure(as_json="--json" in args)
    configure_logging(os.environ.get("RESOLVEFLOW_LOG_LEVEL", "WARNING"))
    try:
        configure_tracing("resolveflow")  # off unless OTEL_* configures an exporter
        # Outside standalone mode Click raises its usage errors (Typer's own copy of Click's
        # classes, typer._click) and returns the exit code of a typer.Exit instead of exiting.
        result = app(args=args, standalone_mode=False, prog_name="resolveflow")
    except click_errors.NoArgsIsHelpError as exc:  # the group's help page is the answer
        if exc.message.strip():
            err_console.print(exc.message, end="")
        return USAGE
    except click_errors.UsageError as exc:
        return fail(_usage(exc), USAGE, USAGE_KIND)
    except click_errors.ClickException as exc:  # a file Click could not open
        return fail(exc.format_message(), USAGE, ErrorCategory.INVALID_INPUT.value)
    except typer.Abort:
        return fail("aborted", INTERRUPTED, INTERRUPTED_KIND)
    except ResolveFlowError as exc:
        logger.debug("command failed", exc_info=True)
        if exc.category is None:
            return fail(f"{exc.message} {_DETAILS_HINT}", UNEXPECTED, UNEXPECTED_KIND)
        return fail(exc.message, exit_code_for(exc), exc.category.value)
    except KeyboardInterrupt:
        return fail("interrupted", INTERRUPTED, INTERRUPTED_KIND)
    except Exception as exc:  # the last line of defence: one line, never a traceback
        logger.debug("unexpected error", exc_info=True)
        message = f"unexpected {type(exc).__name__}: {exc} {_DETAILS_HINT}"
        return fail(message, UNEXPECTED, UNEXPECTED_KIND)
    if result == INTERRUPTED:  # Typer turns Ctrl-C into typer.Exit(130)
        return fail("interrupted", INTERRUPTED, INTERRUPTED_KIND)
    return result if isinstance(result, int) else 0


def entrypoint() -> None:
    """``resolveflow`` and ``python -m resolveflow``: one command, in a process of its own."""
    # Most of a quick command's time is its start: tens of thousands of objects made by imports
    # (modules, classes, functions) that live as long as the process. The cyclic collector walks
    # them again in each full collection and in the collections at exit, about a quarter of a
    # second of ``tenants list``; frozen, they are left out, and what is made later is collected
    # as always. Only here, never in ``main``: tests call ``main`` many times in one process.
    gc.freeze()
    code = main()
    gc.freeze()  # the exit needs no collection: the process gives its memory back
    sys.exit(code)
