"""Commands for the web app and the background worker (registered on the main app)."""

from __future__ import annotations

import typer

from resolveflow.cli import common
from resolveflow.cli.output import console, emit, err_console


def register(app: typer.Typer) -> None:
    """Add the web and worker commands to ``app``."""
    app.command("serve")(serve)
    app.command("worker")(worker)


def serve(
    host: str | None = typer.Option(
        None, "--host", help="Default: RESOLVEFLOW_WEB_HOST (127.0.0.1)."
    ),
    port: int | None = typer.Option(None, "--port", help="Default: RESOLVEFLOW_WEB_PORT (8000)."),
    with_worker: bool = typer.Option(
        False, "--with-worker", help="Also run the background worker in this process."
    ),
) -> None:
    """Serve the JSON API, the approval inbox and the GitHub webhook endpoint."""
    from resolveflow.bootstrap.app import open_app
    from resolveflow.web.server import bind
    from resolveflow.web.server import serve as run_server
    from resolveflow.worker import WorkerThread, prepare_queue

    settings = common.settings()
    bind_host = host or settings.web.host
    bind_port = settings.web.port if port is None else port
    # Bound first: a port in use fails at once, in one line, before the database is opened.
    with bind(bind_host, bind_port) as listening, open_app(settings) as opened:
        prepare_queue(opened)
        bound_port = listening.getsockname()[1]  # the one chosen for --port 0
        err_console.print(f"serving on http://{bind_host}:{bound_port} (Ctrl-C stops)")
        if with_worker:
            with WorkerThread(opened):
                run_server(opened, listening)
        else:
            run_server(opened, listening)


def worker(
    once: bool = typer.Option(False, "--once", help="Run the jobs that are due now, then exit."),
    as_json: bool = common.JsonOption,
) -> None:
    """Run background jobs: webhook runs, executions, reconciliation and index updates."""
    from resolveflow.worker import prepare_queue, run_once, run_worker

    with common.app() as opened:
        prepare_queue(opened)
        if once:
            # Jobs that failed, or executions left unsent for want of a credential: non-zero,
            # as `execute --once` (docs/cli.md).
            run_once(opened).raise_if_not_done()
        else:
            err_console.print("worker started (Ctrl-C stops after the running jobs finish)")
            run_worker(opened)
    emit({"stopped": True}, as_json, lambda: console.print("worker stopped"))
