"""``resolveflow gaps``: the questions the documents do not answer, by topic (issue 31)."""

from __future__ import annotations

import typer

from resolveflow.accounts import admin
from resolveflow.ask import gaps as service
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.cli import common, plain
from resolveflow.cli.output import console, emit, table


def gaps(
    days: int = typer.Option(
        service.DAYS, "--days", min=1, max=service.MAX_DAYS, help="Questions of these last days."
    ),
    propose: str | None = typer.Option(
        None,
        "--propose",
        metavar="OWNER/REPO",
        help="Also propose an issue for the biggest gap in this allowed repository (a person "
        "approves it like any other proposal).",
    ),
    tenant: str | None = common.TenantOption,
    token: str | None = common.TokenOption,
    as_json: bool = common.JsonOption,
) -> None:
    """The questions Ask could not answer, grouped by topic, the biggest first; with --propose,
    an issue proposed for the biggest one."""
    with common.app() as opened:
        principal = common.principal(opened, token) if propose is not None else None
        if principal is not None:
            tenant_id = principal.tenant_id
        else:
            tenant_id = admin.find_tenant(opened.db, common.tenant_name(opened, tenant)).id
        report = service.gap_report(opened.db, build_embedder(opened.settings), tenant_id, days)
        proposed = None
        if principal is not None and propose is not None:
            quiet = opened.quiet()
            _, proposed = service.propose_gap(opened.db, principal, propose, report, 1, quiet)
    data = {
        **report.as_json(),
        "proposal": (
            {"id": str(proposed.id), "digest": proposed.digest} if proposed is not None else None
        ),
    }

    def render() -> None:
        table(
            f"questions not answered in the last {days} days: {report.unanswered}, by topic",
            ["#", "topic", "asked", "nothing relates", "may help", "last asked", "examples"],
            [
                (
                    n,
                    t.representative,
                    t.count,
                    t.abstained,
                    t.tentative,
                    plain.moment(t.last_asked),
                    " | ".join(t.examples),
                )
                for n, t in enumerate(report.topics, start=1)
            ],
        )
        if proposed is not None:
            console.print(
                f"proposed an issue for topic 1: {proposed.id}, digest {proposed.digest}\n"
                f"approve with: resolveflow approve {proposed.id} --digest {proposed.digest}",
                soft_wrap=True,
            )

    emit(data, as_json, render)
