"""The stdio server (``resolveflow mcp``): its principal, and stdin read one bounded line at a time.

The principal is the API token in RESOLVEFLOW_TOKEN (as for the CLI), looked up again at each
call, so a revoked token stops working at once.

The SDK's own reader takes a whole line into memory before it parses it: one 200 MB line grew
the process by 730 MB before it was refused. Here stdin is read in chunks, and a line longer
than ``RESOLVEFLOW_MCP_MAX_MESSAGE_BYTES`` is skipped as it streams in (only its first bytes are
kept, to find its id): it is answered with a JSON-RPC error naming the limit, and the server
reads the next line. The SDK still owns stdout (its writer, and fd 1 pointed away from the wire
while serving).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, cast

import anyio
import anyio.abc
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError

from resolveflow.accounts.auth import authenticate
from resolveflow.bootstrap.app import App
from resolveflow.domain.records import Principal

logger = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024
HEAD_BYTES = 512  # of a refused line, kept to find its id: ``{"jsonrpc":"2.0","id":7,...``
RequestId = int | str | None


class EnvironmentWho:
    def __init__(self, app: App) -> None:
        self.app = app

    def check(self) -> Principal:
        token = self.app.settings.cli.token
        return authenticate(self.app.db, token.get_secret_value() if token else None)

    def __call__(self, ctx: Context) -> Principal:
        return self.check()


def serve_stdio(server: MCPServer[Any], max_message_bytes: int) -> None:
    """Serve one agent on stdin/stdout until it closes stdin."""
    anyio.run(_serve, server, max_message_bytes)


class _Replies(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


class _Refusals:
    """Answers a line past the limit on the SDK's write stream, once the transport made it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ready = anyio.Event()

    def open(self, stream: _Replies) -> None:
        self.stream: _Replies = stream
        self.ready.set()

    async def __call__(self, request_id: RequestId, size: int) -> None:
        logger.warning("MCP message refused", extra={"bytes": size, "limit": self.limit})
        await self.ready.wait()  # the stream is set then
        error = ErrorData(
            code=INVALID_REQUEST,
            message=f"message refused: longer than {self.limit} bytes "
            "(RESOLVEFLOW_MCP_MAX_MESSAGE_BYTES); it was not parsed",
        )
        await self.stream.send(
            SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        )


async def _serve(server: MCPServer[Any], max_message_bytes: int) -> None:
    refuse = _Refusals(max_message_bytes)
    lines = bounded_lines(_stdin_chunks(), max_message_bytes, refuse)
    # The SDK only iterates what it is given as stdin (``async for line in stdin``).
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
        refuse.open(write)
        # The SDK's MCPServer.run_stdio_async, with our stdin; the low-level server has no
        # public accessor.
        lowlevel = server._lowlevel_server
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


async def _stdin_chunks() -> AsyncIterator[bytes]:
    fd = sys.stdin.fileno()
    while chunk := await anyio.to_thread.run_sync(os.read, fd, CHUNK_BYTES, abandon_on_cancel=True):
        yield chunk


async def bounded_lines(
    chunks: AsyncIterator[bytes],
    limit: int,
    refuse: Callable[[RequestId, int], Awaitable[None]],
) -> AsyncIterator[str]:
    """The lines of ``chunks`` (without their newline), each at most ``limit`` bytes; a longer
    one is never held: ``refuse(its id, its size)`` is awaited instead, and reading goes on.
    At most ``limit`` plus one chunk is in memory."""
    line = bytearray()
    head: bytes | None = None  # of the line being skipped
    skipped = 0
    async for chunk in chunks:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start : end if end >= 0 else len(chunk)]
            if head is None and len(line) + len(piece) > limit:
                head, skipped = bytes((line + piece[:HEAD_BYTES])[:HEAD_BYTES]), len(line)
                line.clear()
            if head is not None:
                skipped += len(piece)
            else:
                line += piece
            if end < 0:
                break
            if head is not None:
                await refuse(request_id(head), skipped)
                head, skipped = None, 0
            elif line.strip():
                yield line.decode("utf-8", "replace")
            line.clear()
            start = end + 1
    if head is not None:
        await refuse(request_id(head), skipped)
    elif line.strip():
        yield line.decode("utf-8", "replace")


def request_id(head: bytes) -> RequestId:
    """The id of a JSON-RPC message from its first bytes, when it comes before any large member
    (the SDK's clients write ``jsonrpc``, ``id``, then ``method`` and ``params``); else None,
    which JSON-RPC answers as ``"id": null``."""
    text = head.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    while True:
        try:
            key, at = decoder.raw_decode(text, _skip(text, at))
            at = _skip(text, at)
            if not text.startswith(":", at):
                return None
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
        except ValueError:
            return None  # a member cut off by the head, or not JSON
        if key == "id":
            ok = isinstance(value, int | str) and not isinstance(value, bool)
            return value if ok else None
        at = _skip(text, at)
        if not text.startswith(",", at):
            return None
        at += 1


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at
