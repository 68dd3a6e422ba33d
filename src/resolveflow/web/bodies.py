"""Reading a request body with a cap, for the routes that take raw bodies (webhooks, documents)."""

from __future__ import annotations

from fastapi import Request
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect

from resolveflow.errors import InvalidInput, ResolveFlowError


def declared_length(headers: Headers) -> int | None:
    """The declared Content-Length, or None without a usable one (the server refuses a bad one
    itself); a length past 15 digits counts as 10**15."""
    declared = headers.get("content-length", "").strip()
    # isascii: str.isdigit also accepts digits int() refuses; the length bounds int()'s work.
    if not (declared.isascii() and declared.isdigit()):
        return None
    return int(declared) if len(declared) <= 15 else 10**15


async def read_capped(request: Request, cap: int, too_large: ResolveFlowError) -> bytes:
    """The body, or ``too_large`` raised as soon as it passes ``cap`` (at most one chunk more read).

    A declared Content-Length over the cap is refused before reading anything."""
    declared = declared_length(request.headers)
    if declared is not None and declared > cap:
        raise too_large
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > cap:
                raise too_large
    except ClientDisconnect:
        raise InvalidInput("the client went away before the body was complete") from None
    return bytes(body)
