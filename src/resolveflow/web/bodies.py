"""Reading a request body with a cap, for the routes that take raw bodies (webhooks, documents)."""

from __future__ import annotations

from fastapi import Request
from starlette.requests import ClientDisconnect

from resolveflow.errors import InvalidInput, ResolveFlowError


async def read_capped(request: Request, cap: int, too_large: ResolveFlowError) -> bytes:
    """The body, or ``too_large`` raised as soon as it passes ``cap`` (at most one chunk more read).

    A declared Content-Length over the cap is refused before reading anything."""
    declared = request.headers.get("content-length", "")
    # isascii: str.isdigit also accepts digits int() refuses; the length bounds int()'s work.
    if declared.isascii() and declared.isdigit() and (len(declared) > 15 or int(declared) > cap):
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
