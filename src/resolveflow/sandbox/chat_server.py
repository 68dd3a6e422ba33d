"""A real HTTP server on 127.0.0.1 implementing ``POST /v1/chat/completions``, for tests.

The production ``OpenAIChatModel`` (the official client, httpx underneath) talks to it by base URL,
so every byte goes through the same path as against a real endpoint. Replies are queued: a
``Reply`` (content, with usage), a ``Refusal``, an ``HttpError`` (429 with Retry-After, 500, ...),
or ``Slow`` (wait, then another reply). With an empty queue it answers 500. Every request body is
kept in ``requests`` so tests can check what was sent (the schema, the messages); the
Authorization header is only counted, never stored.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    content: str | None
    prompt_tokens: int = 120
    completion_tokens: int = 40
    model: str | None = None


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


class FakeChatServer:
    def __init__(self, model: str = "fake-model") -> None:
        self.model = model
        self._queue: deque[FakeAnswer] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.authorized_requests = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def queue(self, *answers: FakeAnswer) -> None:
        with self._lock:
            self._queue.extend(answers)

    def _take(self, body: dict[str, Any], authorized: bool) -> FakeAnswer:
        with self._lock:
            self.requests.append(body)
            self.authorized_requests += authorized
            return (
                self._queue.popleft() if self._queue else HttpError(500, message="no reply queued")
            )

    def start(self) -> Self:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._httpd = server
        host, port = server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def completion(self, reply: Reply) -> dict[str, Any]:
        return _completion(reply.model or self.model, reply.content, None, reply)

    def refusal(self, refusal: Refusal) -> dict[str, Any]:
        return _completion(self.model, None, refusal.text, Reply(None, 50, 5))


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
                "finish_reason": "stop",
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        fake: FakeChatServer = self.server.fake  # type: ignore[attr-defined]
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request is not JSON"}})
            return
        answer = fake._take(body, bool(self.headers.get("authorization")))
        if isinstance(answer, Slow):
            time.sleep(answer.seconds)
            answer = answer.then
        try:
            if isinstance(answer, Reply):
                self._send(200, fake.completion(answer))
            elif isinstance(answer, Refusal):
                self._send(200, fake.refusal(answer))
            else:
                payload = {"error": {"message": answer.message, "type": "fake", "code": None}}
                self._send(answer.status, payload, answer.headers)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (a timeout test): nothing to answer

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
