"""``resolveflow sign-in-link``: a one-time link into the web pages, with no GitHub OAuth app.

The link points at the running ``serve``: ``RESOLVEFLOW_WEB_PUBLIC_URL`` when set (the address
people reach it at), else ``http://RESOLVEFLOW_WEB_HOST:RESOLVEFLOW_WEB_PORT``, with a host that
listens everywhere (``0.0.0.0``, ``::``) read as this machine.
"""

from __future__ import annotations

from datetime import UTC

import typer

from resolveflow.accounts import sign_in_links as links
from resolveflow.cli import common
from resolveflow.cli.output import console, emit, fields
from resolveflow.config import Settings
from resolveflow.errors import InvalidInput

_EVERYWHERE = {"0.0.0.0", "::", ""}  # noqa: S104 - read, not bound to


def base_url(settings: Settings) -> str:
    """Where ``serve`` is reached, as the link names it."""
    web = settings.web
    if web.public_url:
        return web.public_url.rstrip("/")
    host = "127.0.0.1" if web.host in _EVERYWHERE else web.host
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"http://{host}:{web.port}"


def sign_in_link(
    subject: str = typer.Option(..., "--subject", help="The principal the link signs in."),
    tenant: str | None = common.TenantOption,
    ttl_minutes: int = typer.Option(
        links.DEFAULT_TTL_MINUTES,
        "--ttl-minutes",
        help=f"How long the link works, 1 to {links.MAX_TTL_MINUTES} minutes.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the link."),
    as_json: bool = common.JsonOption,
) -> None:
    """Print a one-time link that signs a principal in to the web pages (no GitHub app needed).

    The link works once, for --ttl-minutes (15 by default); only its hash is stored. It points at
    RESOLVEFLOW_WEB_PUBLIC_URL, else at http://RESOLVEFLOW_WEB_HOST:RESOLVEFLOW_WEB_PORT. A link
    session brings no GitHub token: what the principal approves is posted with their own stored
    token, else as the service account; posting as oneself needs sign-in with GitHub.
    """
    if quiet and as_json:
        raise InvalidInput("give --quiet or --json, not both")
    links.check_ttl(ttl_minutes)
    with common.app() as opened:
        name = common.tenant_name(opened, tenant)
        issued = links.issue(opened.db, name, subject.strip(), ttl_minutes)
        url = issued.url(base_url(opened.settings))
    if quiet:
        typer.echo(url)  # stdout is the link, nothing else
        return
    data = {
        "url": url,
        "tenant": issued.tenant,
        "subject": issued.subject,
        "expires_at": issued.expires_at,
        "ttl_minutes": issued.ttl_minutes,
    }
    emit(
        data,
        as_json,
        lambda: fields(
            [
                ("link", url),
                ("signs in", f"{issued.subject} (tenant {issued.tenant})"),
                ("works", f"once, until {issued.expires_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"),
                ("", "give it to that person only: whoever opens it first is signed in"),
            ]
        ),
    )
    if not as_json:
        console.print("posting as oneself on GitHub still needs sign-in with GitHub", style="dim")
