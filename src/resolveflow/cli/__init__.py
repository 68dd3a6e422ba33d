"""The ``resolveflow`` command line."""

from __future__ import annotations

import logging
import os
import sys

import click
import typer
from rich.text import Text

from resolveflow.cli import (
    admin,
    demo,
    executions,
    investigation_cmds,
    proposals,
    retrieval_cmds,
    triage,
    web_cmds,
    webhooks_cmds,
)
from resolveflow.cli.output import err_console
from resolveflow.errors import ErrorCategory, ResolveFlowError, one_line
from resolveflow.logging_setup import configure_logging

logger = logging.getLogger(__name__)

app = typer.Typer(
    name="resolveflow",
    help="Issue triage where the model proposes, the application authorizes and code executes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(admin.db_app, name="db")
app.add_typer(admin.tenants_app, name="tenants")
app.add_typer(admin.principals_app, name="principals")
app.add_typer(admin.repos_app, name="repos")
app.add_typer(admin.tokens_app, name="tokens")
app.add_typer(proposals.proposals_app, name="proposals")
app.add_typer(executions.executions_app, name="executions")
app.add_typer(triage.runs_app, name="runs")
app.add_typer(triage.policy_app, name="policy")
app.command("triage")(triage.triage)
app.command("approve")(proposals.approve)
app.command("reject")(proposals.reject)
app.command("execute")(executions.execute)
app.command("reconcile")(executions.reconcile)
app.command("demo")(demo.demo)
retrieval_cmds.register(app)
investigation_cmds.register(app)
investigation_cmds.add_eval_commands(retrieval_cmds.eval_app)
web_cmds.register(app)
webhooks_cmds.register(app)


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
INTERRUPTED = 130
_DETAILS_HINT = "(run with RESOLVEFLOW_LOG_LEVEL=DEBUG for details)"


def exit_code_for(exc: ResolveFlowError) -> int:
    return UNEXPECTED if exc.category is None else EXIT_CODES[exc.category]


def _fail(message: str, code: int) -> int:
    err_console.print(Text.assemble(("error:", "red"), " ", one_line(message)))
    return code


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure ends as one ``error:`` line on stderr and an exit code."""
    configure_logging(os.environ.get("RESOLVEFLOW_LOG_LEVEL", "WARNING"))
    try:
        app(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        return _fail("aborted", INTERRUPTED)
    except click.ClickException as exc:  # usage errors: Click's own usage text and exit code
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except ResolveFlowError as exc:
        logger.debug("command failed", exc_info=True)
        if exc.category is None:
            return _fail(f"{exc.message} {_DETAILS_HINT}", UNEXPECTED)
        return _fail(exc.message, exit_code_for(exc))
    except KeyboardInterrupt:
        return _fail("interrupted", INTERRUPTED)
    except Exception as exc:  # the last line of defence: one line, never a traceback
        logger.debug("unexpected error", exc_info=True)
        return _fail(f"unexpected {type(exc).__name__}: {exc} {_DETAILS_HINT}", UNEXPECTED)
    return 0


def entrypoint() -> None:
    sys.exit(main())
