"""Every request body is bounded before a route sees it (a pure ASGI middleware around the app).

- A declared ``Content-Length`` over the route's cap is refused (413) before anything is read; a
  chunked body is counted as it streams in and refused as soon as it passes the cap, so at most
  the cap and one chunk are ever held. Documents and webhooks keep their own, larger caps (their
  routes read with ``bodies.read_capped``); here they get a little more, as a backstop.
- An ``/api/`` request that carries a body is authenticated first (the same ``identify`` and CSRF
  check as every API route): a stranger's body is never read, let alone parsed.
- A JSON body to the JSON API is read here (within the cap) and checked before FastAPI parses
  it: nested no deeper than ``RESOLVEFLOW_WEB_MAX_JSON_DEPTH`` (``json.loads`` of 100,000 ``[``
  raises RecursionError), and no string the database cannot hold (``domain.user_text``). Its
  query values are checked the same way. One place for every route, today's and tomorrow's.

Errors are raised as ``ResolveFlowError``s; ``errors._LastResort`` (outside) renders them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from resolveflow.config import Settings
from resolveflow.domain.user_text import unstorable
from resolveflow.errors import InvalidInput
from resolveflow.web.api import viewer
from resolveflow.web.bodies import declared_length
from resolveflow.web.security import wired

_BACKSTOP = 1024 * 1024  # past a route's own cap: that route refuses first, with its own words
_INLINE_BYTES = 64 * 1024  # larger JSON is checked on a worker thread, off the event loop


class RequestTooLarge(InvalidInput):
    """The request body is larger than the route's cap; nothing more was read."""


class NestedTooDeeply(InvalidInput):
    """The JSON body nests deeper than RESOLVEFLOW_WEB_MAX_JSON_DEPTH."""


@dataclass(frozen=True)
class Rule:
    cap: int
    setting: str  # the variable that raises the cap
    inspect_json: bool = False  # read here and checked before the route parses it
    # The route reads with its own, smaller cap, and decides what comes first (a webhook for an
    # unknown tenant is 401 whatever its length): here only the backstop count.
    route_caps: bool = False

    def too_large(self) -> RequestTooLarge:
        return RequestTooLarge(f"the request body is larger than {self.cap} bytes ({self.setting})")


def rule_for(path: str, settings: Settings) -> Rule:
    if path.startswith("/webhooks/"):
        cap = settings.webhooks.max_body_bytes + _BACKSTOP
        return Rule(cap, "RESOLVEFLOW_WEBHOOK_MAX_BODY_BYTES", route_caps=True)
    if path.rstrip("/") == "/api/v1/documents":  # base64 and multipart framing on top
        cap = settings.retrieval.document_max_bytes * 4 // 3 + _BACKSTOP
        return Rule(cap, "RESOLVEFLOW_DOCUMENT_MAX_BYTES", route_caps=True)
    return Rule(
        settings.web.max_body_bytes,
        "RESOLVEFLOW_WEB_MAX_BODY_BYTES",
        inspect_json=path.startswith("/api/"),
    )


class BodyLimits:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        settings = wired(request).settings
        rule = rule_for(scope["path"], settings)
        headers = request.headers
        carries_body = _carries_body(headers)
        if scope["path"].startswith("/api/"):
            _check_query(request)
            if carries_body:  # before one byte of it is read
                await run_in_threadpool(viewer, request)
        declared = declared_length(headers)
        if declared is not None and declared > rule.cap and not rule.route_caps:
            raise rule.too_large()
        if carries_body and rule.inspect_json and _is_json(headers):
            body = await _read(receive, rule)
            check = _JsonCheck(settings.web.max_json_depth)
            if len(body) > _INLINE_BYTES:
                await run_in_threadpool(check, body)
            else:
                check(body)
            await self.app(scope, _replay(body, receive), send)
            return
        await _Counted(self.app, rule)(scope, receive, send)


class _Counted:
    """Run the app with a receive that counts, and refuses past the cap: whatever the app then
    answers (FastAPI says 400 when reading the body fails) is dropped for the 413."""

    def __init__(self, app: ASGIApp, rule: Rule) -> None:
        self.app = app
        self.rule = rule
        self.received = 0
        self.exceeded: RequestTooLarge | None = None
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.rule.cap:
                    self.exceeded = self.exceeded or self.rule.too_large()
                    raise self.exceeded
            return message

        async def guarded(message: Message) -> None:
            if self.exceeded is not None and not self.started:
                return  # the app's answer to the failed read; the 413 goes instead
            self.started = self.started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if self.exceeded is None or self.started:
                raise
        if self.exceeded is not None and not self.started:
            raise self.exceeded


def _carries_body(headers: Headers) -> bool:
    return "transfer-encoding" in headers or headers.get("content-length", "0").strip() != "0"


def _is_json(headers: Headers) -> bool:
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind in ("", "application/json") or (
        kind.startswith("application/") and kind.endswith("+json")
    )


async def _read(receive: Receive, rule: Rule) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise InvalidInput("the client went away before the body was complete")
        body += message.get("body", b"")
        if len(body) > rule.cap:
            raise rule.too_large()
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body once, as one message; then the real receive (which reports a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _check_query(request: Request) -> None:
    for name, value in request.query_params.multi_items():
        _check_string("a query parameter's name", name)
        _check_string(f"query parameter {name[:60]}", value)


class _JsonCheck:
    """Depth first, without recursion; text the database cannot hold, with where it is."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth

    def __call__(self, body: bytes) -> None:
        try:
            value = json.loads(body)
        except RecursionError:
            raise self._too_deep() from None
        except ValueError:  # not JSON (or not UTF-8): the route answers as it always has
            return
        stack: list[tuple[Any, str, int]] = [(value, "body", 1)]
        while stack:
            item, where, depth = stack.pop()
            if isinstance(item, str):
                _check_string(where, item)
            elif isinstance(item, dict | list):
                if depth > self.max_depth:
                    raise self._too_deep()
                stack.extend(_children(item, where, depth))

    def _too_deep(self) -> NestedTooDeeply:
        return NestedTooDeeply(
            f"the JSON body nests deeper than {self.max_depth} levels "
            "(RESOLVEFLOW_WEB_MAX_JSON_DEPTH)"
        )


def _children(item: dict[str, Any] | list[Any], where: str, depth: int) -> list[Any]:
    if isinstance(item, list):
        return [(child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item)]
    children = []
    for key, child in item.items():
        _check_string(f"a key in {where}", key)
        children.append((child, key[:60] if where == "body" else f"{where}.{key[:60]}", depth + 1))
    return children


def _check_string(where: str, text: str) -> None:
    reason = unstorable(text)
    if reason is not None:
        # A name may itself be unstorable: shown escaped, so that the message always encodes.
        shown = where.encode("unicode_escape").decode("ascii")
        raise InvalidInput(f"{shown} {reason}")
