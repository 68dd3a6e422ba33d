"""``resolveflow demo``: the command line only; the sandbox itself lives in ``demo_run``, imported
when the command runs so that the web stack does not slow every other command's start."""

from __future__ import annotations

import typer


def demo(
    once: bool = typer.Option(
        False,
        "--once",
        help="Approve the failing-CI run through the API, wait for the post, say what was "
        "approved, by whom and where it was posted, exit.",
    ),
    port: int = typer.Option(0, "--port", help="Port for the inbox (0: any free port)."),
    keep: bool = typer.Option(False, "--keep", help="Keep the demo's database folder."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON summary."),
) -> None:
    """The inbox on a sandbox forge: webhook -> triage -> approve in the browser -> posted once."""
    from resolveflow.cli import demo_run

    demo_run.demo(once=once, port=port, keep=keep, as_json=as_json)
