"""The only place where errors become HTTP responses.

Every ``ResolveFlowError`` gets its category's status (one table, ``_STATUS``, with a few more
specific statuses where HTTP has a word for the case) and a one-line message: JSON under
``/api/`` and ``/webhooks/``, the error page otherwise. Anything else (a bug) gets a generic 500
page that names an incident id and nothing internal; the traceback goes to the log under that id.
See docs/errors.md.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from resolveflow import errors as e
from resolveflow.accounts.limits import LimitExceeded
from resolveflow.llm.errors import ModelError, ModelTimeout, ModelUnavailable
from resolveflow.retrieval.loaders import DocumentTooLarge, UnsupportedMediaType
from resolveflow.triage.webhooks import BodyTooLarge, SignatureInvalid
from resolveflow.web.body_limits import RequestTooLarge

logger = logging.getLogger(__name__)

# The nearest class in an error's MRO decides. Each category is here, so every categorized
# error has a status; the other rows are the few cases HTTP has a more exact status for.
_STATUS: dict[type[e.ResolveFlowError], int] = {
    e.InvalidInput: 400,
    e.NotFound: 404,
    e.Forbidden: 403,
    e.Conflict: 409,
    e.Unavailable: 503,
    e.ConfigurationError: 503,  # the server cannot serve this until an operator fixes it
    # -- more exact statuses
    e.AuthenticationFailed: 401,
    SignatureInvalid: 401,
    BodyTooLarge: 413,
    RequestTooLarge: 413,
    DocumentTooLarge: 413,
    UnsupportedMediaType: 415,
    e.ApprovalExpired: 410,
    LimitExceeded: 429,  # every daily limit: runs started, model calls
    e.ProviderError: 502,  # GitHub answered, with an error
    ModelError: 502,  # the model answered, unusably
    e.ProviderRateLimited: 503,
    e.ProviderUnavailable: 503,
    ModelUnavailable: 503,
    ModelTimeout: 504,
}
INTERNAL = 500
_TITLES = {
    400: "That request could not be used",
    401: "Please sign in",
    403: "Not allowed",
    404: "Page not found",
    409: "That conflicts with what happened since",
    410: "No longer valid",
    413: "That is too large",
    422: "That address is not valid",
    429: "Too many requests",
    500: "Something went wrong",
}
_INTERNAL_MESSAGE = "Something went wrong on our side; it has been logged as incident {incident}."


def status_for(exc: e.ResolveFlowError) -> int:
    """The HTTP status for ``exc``; 500 only for a bare ``ResolveFlowError`` (no category)."""
    for kind in type(exc).__mro__:
        if kind in _STATUS:
            return _STATUS[kind]
    return INTERNAL


def wants_html(request: Request) -> bool:
    """Everything outside the JSON API and the webhooks is a page a browser may reach: its errors
    are pages too, whatever the request's Accept header says (a browser never sees JSON)."""
    return not request.url.path.startswith(("/api/", "/webhooks/"))


def install(app: FastAPI, templates: Jinja2Templates) -> None:
    """Register the handlers. Call it before adding middleware that decorates responses (the
    security headers), so that the 500 page passes through that middleware too."""
    render = _Renderer(templates)
    app.add_exception_handler(e.ResolveFlowError, render.resolveflow_error)
    app.add_exception_handler(RequestValidationError, render.validation_error)
    app.add_exception_handler(HTTPException, render.http_exception)
    app.add_exception_handler(RecursionError, render.recursion_error)
    app.add_middleware(_LastResort, render=render)


class _Renderer:
    def __init__(self, templates: Jinja2Templates) -> None:
        self.templates = templates

    def response(
        self,
        request: Request,
        status: int,
        name: str,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        message = e.one_line(message)
        if wants_html(request):
            return self.templates.TemplateResponse(
                request,
                "error.html",
                {
                    "status": status,
                    "title": _TITLES.get(status, HTTPStatus(status).phrase),
                    "message": message,
                    "viewer": None,
                },
                status_code=status,
                headers=headers,
            )
        return JSONResponse(
            {"error": name, "message": message}, status_code=status, headers=headers
        )

    async def resolveflow_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, e.ResolveFlowError)
        status = status_for(exc)
        if status == INTERNAL:
            return self.internal(request, exc)
        if status >= 500:
            logger.warning(
                "request failed",
                extra={"path": request.url.path, "error": type(exc).__name__, "status": status},
            )
        if status == 401:
            if wants_html(request) and isinstance(exc, e.AuthenticationFailed):
                return RedirectResponse("/login", status_code=303)
            return self.response(
                request, status, type(exc).__name__, exc.message, {"WWW-Authenticate": "Bearer"}
            )
        return self.response(request, status, type(exc).__name__, exc.message)

    async def validation_error(self, request: Request, exc: Exception) -> Response:
        """The request did not match the route's parameters or body: FastAPI's 422, with the
        same envelope as ours (the field-by-field ``detail`` kept for API clients)."""
        assert isinstance(exc, RequestValidationError)
        problems = exc.errors()
        first = problems[0] if problems else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid')}" if where else "invalid request"
        if wants_html(request):
            return self.response(request, 422, "InvalidInput", _page_message(first))
        body = {
            "error": "InvalidInput",
            "message": e.one_line(message),
            # ``input`` may be the raw body (another content type), which need not be UTF-8.
            "detail": jsonable_encoder(problems, custom_encoder={bytes: _decoded}),
        }
        # ASCII-escaped: ``detail`` echoes the input, which may hold a lone surrogate (valid in
        # JSON text, not encodable as UTF-8: JSONResponse would fail with a 500).
        return Response(json.dumps(body), status_code=422, media_type="application/json")

    async def http_exception(self, request: Request, exc: Exception) -> Response:
        """Starlette's own errors: an unknown path (404), a wrong method (405)."""
        assert isinstance(exc, HTTPException)
        phrase = HTTPStatus(exc.status_code).phrase
        if exc.status_code in (204, 304):  # no body allowed
            return Response(status_code=exc.status_code, headers=exc.headers)
        message = str(exc.detail)
        if exc.status_code == 404 and wants_html(request):
            message = f"There is nothing at {request.url.path[:200]}."
        return self.response(
            request, exc.status_code, phrase.replace(" ", ""), message, exc.headers
        )

    async def recursion_error(self, request: Request, exc: Exception) -> Response:
        """Input nested deeper than a parser's recursion (a JSON, HTML or MIME tree) is the
        input's fault: 400, logged with its traceback in case it is ours."""
        logger.warning("input nested too deeply", exc_info=exc, extra={"path": request.url.path})
        return self.response(
            request, 400, "InvalidInput", "the input is nested too deeply to be read"
        )

    def internal(self, request: Request, exc: BaseException) -> Response:
        incident = uuid.uuid4().hex[:12]
        logger.error(
            "unexpected error",
            exc_info=exc,
            extra={"path": request.url.path, "incident": incident},
        )
        message = _INTERNAL_MESSAGE.format(incident=incident)
        return self.response(request, INTERNAL, "InternalError", message)


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _page_message(problem: Mapping[str, Any]) -> str:
    """A page's address or form did not fit, in words: "the run id 'x' in the address is not
    valid" (FastAPI's field-by-field detail is for API clients)."""
    loc = [str(part) for part in problem.get("loc") or ()]
    name = loc[-1].replace("_", " ") if loc else "value"
    where = {"path": " in the address", "query": " in the address", "body": " in the form"}
    given = problem.get("input")
    shown = f" {str(given)[:80]!r}" if isinstance(given, str | int) else ""
    return f"the {name}{shown}{where.get(loc[0], '') if loc else ''} is not valid"


class _LastResort:
    """Answers any exception no handler took with the generic 500 page, instead of Starlette's
    server-error middleware (which re-raises it to the server after answering); one of ours
    raised by a middleware inside it (the body limits) with its own status and message."""

    def __init__(self, app: ASGIApp, render: _Renderer) -> None:
        self.app = app
        self.render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except Exception as exc:
            if started:  # too late for a page: the server closes the connection
                raise
            request = Request(scope, receive)
            if isinstance(exc, e.ResolveFlowError):  # from a middleware (body_limits)
                response = await self.render.resolveflow_error(request, exc)
            else:
                response = self.render.internal(request, exc)
            await response(scope, receive, send)
