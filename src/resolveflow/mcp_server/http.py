"""The MCP server over streamable HTTP, mounted by the web app at ``/mcp`` (``serve``).

Each request is authenticated before the SDK reads its body: ``Authorization: Bearer rf_...``
(the principal's API token, as for ``/api/v1``), else 401 with one line. The web app's body
limits (``web/body_limits.py``) bound it like any other request. The SDK runs stateless with
JSON answers: no session to pin to one process, each call authenticated from its own header.

A ``GET`` opens an event stream the SDK keeps open for server-initiated messages (stateless,
none ever come): 1,000 of them on one token held 108 MB and 1,022 open files. A principal may
hold ``RESOLVEFLOW_MCP_MAX_STREAMS_PER_PRINCIPAL`` at once in this process (one more is 429), and
a stream that has carried no message for ``RESOLVEFLOW_MCP_STREAM_IDLE_SECONDS`` is ended.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any
from uuid import UUID

import anyio
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

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
        self.streams = StreamPlaces(app.settings.mcp.max_streams_per_principal)

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
        who = await self._principal(Headers(scope=scope))
        if isinstance(who, str):
            await _answer(send, 401, who, {"www-authenticate": "Bearer"})
            return
        if scope.get("method") != "GET":
            await manager.handle_request(scope, receive, send)
            return
        with self.streams.held(who.id) as admitted:
            if not admitted:
                await _answer(send, 429, self.streams.refusal)
                return
            idle = self.app.settings.mcp.stream_idle_seconds
            await _until_idle(idle, lambda s: manager.handle_request(scope, receive, s), send)

    async def _principal(self, headers: Headers) -> Principal | str:
        """The request's principal, or why it has none (one line)."""
        token = bearer(headers)
        if token is None:
            return _HOW_TO_AUTHENTICATE
        try:
            principal: Principal = await run_in_threadpool(authenticate, self.app.db, token)
        except ResolveFlowError as exc:
            return one_line(exc.message)
        return principal


class StreamPlaces:
    """How many event streams each principal holds open in this process, up to ``cap``. The
    event loop is the only writer, so a dict needs no lock."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: dict[UUID, int] = {}
        self.refusal = (
            f"too many open MCP event streams for this principal (at most {cap}, "
            "RESOLVEFLOW_MCP_MAX_STREAMS_PER_PRINCIPAL): close one first"
        )

    @contextmanager
    def held(self, principal_id: UUID) -> Iterator[bool]:
        """True, and a place held until the block ends; False when the principal has none left."""
        count = self.open.get(principal_id, 0)
        if count >= self.cap:
            yield False
            return
        self.open[principal_id] = count + 1
        try:
            yield True
        finally:
            left = self.open[principal_id] - 1
            if left:
                self.open[principal_id] = left
            else:
                del self.open[principal_id]


async def _until_idle(idle: float, respond: Callable[[Send], Awaitable[None]], send: Send) -> None:
    """``respond`` through ``send``, ended once it has sent no event (``data:``; a ping comment
    does not count) for ``idle`` seconds; the response is then finished cleanly."""
    started = finished = False
    with anyio.CancelScope() as scope:
        scope.deadline = anyio.current_time() + idle

        async def sending(message: Message) -> None:
            nonlocal started, finished
            started = started or message["type"] == "http.response.start"
            if message["type"] == "http.response.body":
                finished = not message.get("more_body", False)
                if b"data:" in message.get("body", b""):
                    scope.deadline = anyio.current_time() + idle
            await send(message)

        await respond(sending)
    if scope.cancelled_caught and started and not finished:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


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
