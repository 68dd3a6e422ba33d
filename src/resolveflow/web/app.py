"""The FastAPI application around an already wired ``App``: routes reach everything they use
(database, GitHub, run controller, searcher, token cipher) through ``security.wired(request)``.

Routes live in ``api`` (JSON under ``/api/v1``, in the OpenAPI schema), ``pages`` (HTML),
``oauth`` (sign-in with GitHub), ``link_sign_in`` (with a one-time link) and ``webhooks``. Every
response carries a strict Content-Security-Policy: scripts only from this origin (the vendored
htmx), no inline script or style, no framing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.routing import Route

from resolveflow.bootstrap.app import App
from resolveflow.mcp_server.http import PATH as MCP_PATH
from resolveflow.mcp_server.http import McpEndpoint
from resolveflow.telemetry import instrument_web
from resolveflow.web import (
    api,
    api_ask,
    api_docs,
    api_documents,
    api_mail,
    ask_pages,
    errors,
    filters,
    github_app,
    health,
    link_sign_in,
    mail_pages,
    metrics,
    oauth,
    pages,
    webhooks,
)
from resolveflow.web.body_limits import BodyLimits
from resolveflow.web.markdown import render, reveal

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
_CSP = (
    # Images only from here: one in issue text would tell its owner who read it, and when.
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
# Pages with a tenant's data, and the sign-in pages (a link's token, a nonce): never cached.
_NO_STORE = (
    "/api/", "/runs", "/proposals", "/executions", "/inbox", "/audit", "/ask", "/passages",
    "/auth/", "/login", "/digest",
)  # fmt: skip


def create_app(wired: App, *, sandbox: str | None = None) -> FastAPI:
    """``sandbox``: a banner naming the sandbox forge (the demo), shown on every page."""
    mcp = McpEndpoint(wired)  # the MCP server over streamable HTTP (mcp_server/http.py)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.running():
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="ResolveFlow",
        version="1",
        description="Issue triage: the model proposes, the application authorizes, code executes.",
        docs_url=None,  # our own page (api_docs): Swagger UI would come from a CDN
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.wired = wired
    app.state.sign_in_refusals = link_sign_in.refusal_limits(wired.settings.web)
    instrument_web(app)  # server spans, when tracing is on
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["markdown"] = render
    templates.env.filters["reveal"] = reveal
    templates.env.globals["sandbox"] = sandbox
    # What the pages say about posting as oneself: sign-in with GitHub brings the person's own
    # token; a sign-in link does not, and then the service account posts (if there is one).
    templates.env.globals["github_sign_in"] = bool(wired.settings.github.oauth_client_id)
    templates.env.globals["service_account"] = wired.settings.github.token is not None
    filters.install(templates.env)
    app.state.templates = templates
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(api.router)
    app.include_router(api_documents.router)
    app.include_router(api_ask.router)
    app.include_router(api_mail.router)
    app.include_router(api_docs.router)
    app.include_router(webhooks.router)
    app.include_router(oauth.router)
    app.include_router(github_app.router)
    app.include_router(link_sign_in.router)
    app.include_router(pages.router)
    app.include_router(ask_pages.router)
    app.include_router(mail_pages.router)
    app.router.routes.append(Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"]))
    # Inside the error edge (which renders what it raises), before any route reads a body.
    app.add_middleware(BodyLimits)
    errors.install(app, templates)  # before the headers middleware: the 500 page gets them too

    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        if request.url.path.startswith(_NO_STORE):
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    return app
