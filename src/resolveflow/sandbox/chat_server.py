"""The fake chat model: a real HTTP server on 127.0.0.1 implementing ``POST /v1/chat/completions``.

The production ``OpenAIChatModel`` (the official client, httpx underneath) talks to it by base URL,
so every byte goes through the same path as against a real endpoint. Replies are queued: a
``Reply`` (content, with usage), a ``Refusal``, an ``HttpError`` (429 with Retry-After, 500, ...),
or ``Slow`` (wait, then another reply). With an empty queue it answers 500. Every request body is
kept in ``requests`` so tests can check what was sent (the schema, the messages); the
Authorization header is only counted, never stored.

Built like the forge: ``ChatState`` (the queue and what was received, behind a lock), a route
table of functions over it, and ``FakeChatServer``, which puts them on a ``LoopbackServer``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from resolveflow.sandbox.loopback import Exchange, LoopbackServer
from resolveflow.sandbox.loopback import Reply as WireReply


@dataclass(frozen=True)
class Reply:
    content: str | None
    prompt_tokens: int = 120
    completion_tokens: int = 40
    model: str | None = None
    finish_reason: str = "stop"  # "length": the server cut the answer at max_tokens


@dataclass(frozen=True)
class Refusal:
    text: str = "I can't help with that."


@dataclass(frozen=True)
class HttpError:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "error"


@dataclass(frozen=True)
class Slow:
    seconds: float
    then: Reply | Refusal | HttpError


FakeAnswer = Reply | Refusal | HttpError | Slow


@dataclass(eq=False)
class ChatState:
    """The queued answers and every request received; hold ``lock`` to touch them."""

    model: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: deque[FakeAnswer] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorized_requests: int = 0

    def take(self, body: dict[str, Any], authorized: bool) -> FakeAnswer:
        """Record the request and pop the next answer (a 500 when none is queued)."""
        with self.lock:
            self.requests.append(body)
            self.authorized_requests += authorized
            if self.answers:
                return self.answers.popleft()
            return HttpError(500, message="no reply queued")


@dataclass(frozen=True)
class ChatRequest:
    body: dict[str, Any]
    authorized: bool


Answer = tuple[float, WireReply]  # seconds to wait first, then the reply


def chat_completion(state: ChatState, request: ChatRequest) -> Answer:
    answer = state.take(request.body, request.authorized)
    delay = 0.0
    if isinstance(answer, Slow):
        delay, answer = answer.seconds, answer.then
    if isinstance(answer, Reply):
        return delay, WireReply(
            200, _completion(answer.model or state.model, answer.content, None, answer)
        )
    if isinstance(answer, Refusal):
        return delay, WireReply(200, _refusal(state.model, answer))
    payload = {"error": {"message": answer.message, "type": "fake", "code": None}}
    return delay, WireReply(answer.status, payload, headers=dict(answer.headers))


Handler = Callable[[ChatState, ChatRequest], Answer]

ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    ("POST", re.compile(r"^/v1/chat/completions/?$"), chat_completion),
]


def _find(method: str, path: str) -> Handler | None:
    for route_method, pattern, handler in ROUTES:
        if route_method == method and pattern.match(path):
            return handler
    return None


class FakeChatServer:
    """``ChatState`` and ``ROUTES`` served on 127.0.0.1 (see the module docstring)."""

    def __init__(self, model: str = "fake-model") -> None:
        self.state = ChatState(model)
        self._server = LoopbackServer(self._serve, server_name="sandbox-chat")

    @property
    def model(self) -> str:
        return self.state.model

    @property
    def url(self) -> str:
        """``http://127.0.0.1:{port}`` once started, else ``""``."""
        return self._server.url or ""

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received, in order (the live list)."""
        return self.state.requests

    @property
    def authorized_requests(self) -> int:
        with self.state.lock:
            return self.state.authorized_requests

    def queue(self, *answers: FakeAnswer) -> None:
        with self.state.lock:
            self.state.answers.extend(answers)

    def start(self) -> Self:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def completion(self, reply: Reply) -> dict[str, Any]:
        return _completion(reply.model or self.model, reply.content, None, reply)

    def refusal(self, refusal: Refusal) -> dict[str, Any]:
        return _refusal(self.model, refusal)

    def _serve(self, exchange: Exchange) -> None:
        handler = _find(exchange.method, exchange.path)
        if handler is None:
            exchange.send(WireReply(404, {"error": {"message": "not found"}}))
            return
        try:
            body = json.loads(exchange.body or b"{}")
        except json.JSONDecodeError:
            exchange.send(WireReply(400, {"error": {"message": "request is not JSON"}}))
            return
        authorized = bool(exchange.header("authorization"))
        delay, reply = handler(self.state, ChatRequest(body, authorized))
        if delay and self._server.stopping.wait(delay):
            exchange.drop()  # stopped while waiting: the client has long given up
            return
        exchange.send(reply)


def _refusal(model: str, refusal: Refusal) -> dict[str, Any]:
    return _completion(model, None, refusal.text, Reply(None, 50, 5))


def _completion(
    model: str, content: str | None, refusal: str | None, reply: Reply
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": reply.finish_reason,
                "logprobs": None,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }
