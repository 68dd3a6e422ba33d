"""The MCP server over streamable HTTP, mounted by the web app at ``/mcp`` (``serve``).

Each request is authenticated before the SDK reads its body: ``Authorization: Bearer rf_...``
(the principal's API token, as for ``/api/v1``), else 401 with one line. The web app's body
limits (``web/body_limits.py``) bound it like any other request. The SDK runs stateless with
JSON answers: no session to pin to one process, each call authenticated from its own header.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from resolveflow.accounts.auth import authenticate
from resolveflow.bootstrap.app import App
from resolveflow.domain.records import Principal
from resolveflow.errors import AuthenticationFailed, ResolveFlowError, one_line
from resolveflow.mcp_server.server import build_server
from resolveflow.mcp_server.tools import AgentTools

PATH = "/mcp"
_HOW_TO_AUTHENTICATE = "send the principal's API token as 'Authorization: Bearer rf_...'"


def bearer(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class HttpWho:
    """The principal of a tool call: the bearer token of the HTTP request it came in."""

    def __init__(self, app: App) -> None:
        self.app = app

    def __call__(self, ctx: Context) -> Principal:
        request = ctx.request_context.request
        if not isinstance(request, Request):
            raise AuthenticationFailed(_HOW_TO_AUTHENTICATE)
        return authenticate(self.app.db, bearer(request.headers))


class McpEndpoint:
    """The ASGI endpoint at ``/mcp``; ``running()`` (the web app's lifespan) starts the SDK's
    session manager, which lives as long as the server."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        server = build_server(AgentTools(self.app), HttpWho(self.app))
        # The token is in a header, never a cookie: a page on another origin (or a rebound DNS
        # name) cannot use a browser's credentials here, so the Host check is not needed and
        # would refuse the public name the server is reached at.
        server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=self.app.settings.web.max_body_bytes,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = server.session_manager
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self.manager
        if manager is None:
            await _answer(send, 503, "the MCP server is not running (the app's lifespan is off)")
            return
        refused = await self._refusal(Headers(scope=scope))
        if refused is not None:
            await _answer(send, 401, refused, {"www-authenticate": "Bearer"})
            return
        await manager.handle_request(scope, receive, send)

    async def _refusal(self, headers: Headers) -> str | None:
        token = bearer(headers)
        if token is None:
            return _HOW_TO_AUTHENTICATE
        try:
            await run_in_threadpool(authenticate, self.app.db, token)
        except ResolveFlowError as exc:
            return one_line(exc.message)
        return None


async def _answer(
    send: Send, status: int, message: str, extra: dict[str, str] | None = None
) -> None:
    body = json.dumps({"detail": message}).encode()
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
