"""The FastAPI application, built around an already wired ``App`` (database, GitHub, executor).

Routes live in ``api`` (JSON under ``/api/v1``, in the OpenAPI schema), ``pages`` (HTML),
``oauth`` (sign-in) and ``webhooks``. Every response carries a strict Content-Security-Policy:
scripts only from this origin (the vendored htmx), no inline script or style, no framing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.errors import AuthenticationFailed, ResolveFlowError
from resolveflow.retrieval.search import Searcher
from resolveflow.service.sessions import UserGrant, parse_users
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.web import api, oauth, pages, webhooks
from resolveflow.web.errors import status_for
from resolveflow.web.markdown import render
from resolveflow.wiring import App, build_embedder, search_params
from resolveflow.workflows.runs import RunController

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


class WebState:
    """What the routes share; built lazily where building is costly (graph, embedder)."""

    def __init__(self, wired: App, sandbox: str | None) -> None:
        self.wired = wired
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._controller: RunController | None = None
        self._searcher: Searcher | None = None
        settings = wired.settings
        self.grants: dict[str, UserGrant] = parse_users(settings.web_users)
        key = settings.token_encryption_key
        self.cipher = TokenCipher(key.get_secret_value()) if key else None

    def controller(self) -> RunController:
        with self._lock:
            if self._controller is None:
                self._controller = self.wired.run_controller()
            return self._controller

    def searcher(self) -> Searcher:
        with self._lock:
            if self._searcher is None:
                embedder: Embedder = build_embedder(self.wired.settings)
                self._searcher = Searcher(
                    self.wired.db, embedder, search_params(self.wired.settings)
                )
            return self._searcher


def create_app(wired: App, *, sandbox: str | None = None) -> FastAPI:
    """``sandbox``: a banner naming the sandbox forge (the demo), shown on every page."""
    app = FastAPI(
        title="ResolveFlow",
        version="1",
        description="Issue triage: the model proposes, the application authorizes, code executes.",
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.wired = wired
    app.state.web = WebState(wired, sandbox)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["markdown"] = render
    templates.env.globals["sandbox"] = sandbox
    app.state.templates = templates
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.include_router(api.router)
    app.include_router(webhooks.router)
    app.include_router(oauth.router)
    app.include_router(pages.router)

    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        if request.url.path.startswith(("/api/", "/runs", "/executions", "/inbox", "/audit")):
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    @app.exception_handler(ResolveFlowError)
    async def domain_error(request: Request, exc: ResolveFlowError) -> Response:
        status = status_for(exc)
        if status >= 500:
            logger.warning(
                "request failed", extra={"path": request.url.path, "error": type(exc).__name__}
            )
        if _wants_html(request):
            if isinstance(exc, AuthenticationFailed):
                return RedirectResponse("/login", status_code=303)
            return templates.TemplateResponse(
                request,
                "error.html",
                {"status": status, "message": exc.message, "viewer": None},
                status_code=status,
            )
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse(
            {"error": type(exc).__name__, "message": exc.message},
            status_code=status,
            headers=headers,
        )

    return app


def _wants_html(request: Request) -> bool:
    path = request.url.path
    if path.startswith(("/api/", "/webhooks/")):
        return False
    accept = request.headers.get("accept", "")
    return "text/html" in accept or request.headers.get("HX-Request") == "true"


def page_context(request: Request, **values: Any) -> dict[str, Any]:
    return {"request": request, **values}
