"""``resolveflow refine``: the whole graph on one ticket, one step on a document, the schemas.

``refine REF|-`` runs every step and prints the Markdown (the final document with ``--json``);
with ``--propose`` the Markdown becomes a comment proposal on the GitHub issue, waiting for a
person's approval (``refine/propose.py``), and the proposal is printed instead;
``refine step NAME`` reads one document on stdin and writes one on stdout; ``refine schema
[NAME]`` prints the JSON Schema. A word that is not a subcommand is a ticket reference, so
``refine sandbox/widgets#3`` means ``refine run sandbox/widgets#3``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer._click import Context
from typer.core import TyperGroup

from resolveflow.cli import common
from resolveflow.cli.output import emit, print_proposal
from resolveflow.cli.terminal_text import for_terminal
from resolveflow.errors import InvalidInput
from resolveflow.refine.domain.document import RefineDocument, RefineStep
from resolveflow.refine.load import STDIN, ticket_for, with_repository
from resolveflow.refine.step_runner import (
    StepDeps,
    parse_document,
    run_step,
    step_named,
    step_schema,
)

# Steps that read nothing but the document (and settings): no database is opened for them.
_OFFLINE = frozenset({RefineStep.RELEVANCE, RefineStep.SUMMARIZE, RefineStep.OUTPUT})


class _RunByDefault(TyperGroup):
    """``refine REF`` is ``refine run REF``: a first word that names no subcommand is a ticket."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and (args[0] == STDIN or args[0][:1] != "-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


refine_app = typer.Typer(
    help="Refine a raw ticket into verified context: related tasks, relevance, a summary with "
    "scopes, a runbook, the changes that solved similar tasks.",
    cls=_RunByDefault,
    no_args_is_help=True,
)


def _stdin() -> str:
    return sys.stdin.read()


@contextmanager
def _deps(tenant: str | None, *, offline: bool = False, stdin: bool = False) -> Iterator[StepDeps]:
    """The steps' dependencies: from settings alone when ``offline``, else from the opened app;
    ``stdin``: a text ticket may be read from stdin (not when stdin holds the document)."""
    if offline:
        from resolveflow.bootstrap.app import build_model
        from resolveflow.bootstrap.refine import refine_policy

        settings = common.settings()
        yield StepDeps(model=lambda: build_model(settings), policy=refine_policy(settings))
        return
    from resolveflow.bootstrap.refine import step_deps

    with common.app() as opened:
        yield step_deps(
            opened, lambda: common.tenant_name(opened, tenant), _stdin if stdin else None
        )


@refine_app.command("run")
def run(
    ref: str = typer.Argument(
        ..., help="OWNER/REPO#N, gitlab:GROUP/PROJECT#N, a file, or - for text on stdin."
    ),
    tenant: str | None = common.TenantOption,
    propose: bool = typer.Option(
        False,
        "--propose",
        help="Propose the Markdown as a comment on the GitHub issue; it waits for a person's "
        "approval (requester role).",
    ),
    token: str | None = common.TokenOption,
    repo: str | None = typer.Option(
        None,
        "--repo",
        help="For a file or text ticket: the repository it concerns (OWNER/REPO), whose clone "
        "and rules refine uses.",
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Run every step on one ticket and print the Markdown (the document with --json)."""
    from resolveflow.refine.graph import refine_document

    start = RefineDocument(ticket=ticket_for(ref))  # a bad reference fails before anything opens
    if repo is not None:
        start.ticket = with_repository(start.ticket, repo)
    if propose:
        _run_and_propose(start, tenant, token, as_json)
        return
    with _deps(tenant, stdin=True) as deps:
        final = refine_document(start, deps)
    emit(final.model_dump(mode="json"), as_json, lambda: _print_markdown(final.markdown))


def _print_markdown(markdown: str | None) -> None:
    """The Markdown is written for a GitHub comment; a terminal is shown what GitHub would show
    (``cli/terminal_text.py``). ``--json`` and ``--propose`` carry the Markdown itself."""
    print(for_terminal(markdown or ""), end="")


def _run_and_propose(
    start: RefineDocument, tenant: str | None, token: str | None, as_json: bool
) -> None:
    """The graph in the token's tenant, then the proposal (its view with --json)."""
    from resolveflow.bootstrap.refine import step_deps
    from resolveflow.refine.graph import refine_document
    from resolveflow.refine.propose import check_proposable, propose_enrichment, tenant_name

    check_proposable(start.ticket)  # before anything opens
    with common.app() as opened:
        actor = common.principal(opened, token)
        name = tenant_name(opened.db, actor.tenant_id)
        if tenant is not None and tenant != name:
            raise InvalidInput(f"--tenant {tenant}: the token's tenant is {name}")
        final = refine_document(start, step_deps(opened, lambda: name, None, actor))
        view = propose_enrichment(opened.db, actor, final, opened.quiet())
    emit(view, as_json, lambda: print_proposal(view, state="waiting for approval"))


@refine_app.command("step")
def step(
    name: str = typer.Argument(
        ..., help="load, related, relevance, summarize, runbook, changes or output."
    ),
    tenant: str | None = common.TenantOption,
) -> None:
    """Run one step: one document as JSON on stdin, the document after the step on stdout."""
    chosen = step_named(name)
    doc = parse_document(sys.stdin.read())
    from resolveflow.refine.steps import require

    require(doc, chosen)  # before anything is opened
    with _deps(tenant, offline=chosen in _OFFLINE) as deps:
        done = run_step(chosen, doc, deps)
    print(done.model_dump_json(indent=2))


@refine_app.command("schema")
def schema(
    name: str | None = typer.Argument(None, help="A step: what it requires and fills."),
) -> None:
    """Print the JSON Schema of the refine document (versioned: x-schema-version)."""
    found: dict[str, Any] = step_schema(step_named(name) if name else None)
    print(json.dumps(found, indent=2, ensure_ascii=False))
