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
)
from resolveflow.cli.output import err_console
from resolveflow.errors import ResolveFlowError
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


def _fail(message: str, code: int = 1) -> int:
    err_console.print(Text.assemble(("error:", "red"), " ", message))
    return code


def main(argv: list[str] | None = None) -> int:
    configure_logging(os.environ.get("RESOLVEFLOW_LOG_LEVEL", "WARNING"))
    try:
        app(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        return _fail("aborted", 130)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except ResolveFlowError as exc:
        return _fail(exc.message)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Exception as exc:  # the last line of defence: one line, never a traceback
        logger.debug("unexpected error", exc_info=True)
        return _fail(
            f"unexpected {type(exc).__name__}: {exc} (set RESOLVEFLOW_LOG_LEVEL=DEBUG for details)"
        )
    return 0


def entrypoint() -> None:
    sys.exit(main())
