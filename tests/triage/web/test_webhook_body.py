"""The webhook body: read with a cap (findings 4) and parsed without ever answering 500 (finding 5).

The cap is checked while the body streams in, so a chunked body without Content-Length is refused
at the cap with 413 and nothing more is read: the ASGI test counts the bytes the app asked for,
and the uvicorn test sends a body far larger than the cap over a real socket.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import select
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from fixtures_web import WEBHOOK_SECRET, Web, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.triage.store import webhooks as webhook_store
from resolveflow.web import create_app
from resolveflow.web.server import ServerThread

pytest_plugins = ["fixtures_web"]

CHUNK = 64 * 1024
DEFAULT_CAP = 25 * 1024 * 1024  # RESOLVEFLOW_WEBHOOK_MAX_BODY_BYTES's default: GitHub's own cap


def _sign(body: bytes) -> str:
    return "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()


def _deliveries(web: Web) -> int:
    with web.db.unscoped() as conn:
        return webhook_store.count_deliveries(conn)


class EndlessBody:
    """An ASGI ``receive`` that streams ``total`` bytes in chunks and counts what was taken."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.taken = 0

    async def __call__(self) -> dict[str, Any]:
        if self.taken >= self.total:
            await asyncio.sleep(3600)  # a well-behaved app never asks again after the last chunk
        size = min(CHUNK, self.total - self.taken)
        self.taken += size
        return {"type": "http.request", "body": b"x" * size, "more_body": self.taken < self.total}


def _call_asgi(app: Any, receive: EndlessBody, headers: dict[str, str]) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": "/webhooks/github",
        "raw_path": b"/webhooks/github",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 443),
    }
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(asyncio.wait_for(app(scope, receive, send), timeout=60))
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert len(starts) == 1, sent
    return int(starts[0]["status"])


def _chunked_headers() -> dict[str, str]:
    return {
        "host": "testserver",
        "transfer-encoding": "chunked",  # no Content-Length: the size is unknown until the end
        "x-github-event": "issues",
        "x-github-delivery": str(uuid.uuid4()),
        "x-hub-signature-256": "sha256=" + "0" * 64,
    }


def test_a_chunked_body_over_the_cap_is_refused_at_the_cap_with_413(web: Web) -> None:
    receive = EndlessBody(DEFAULT_CAP + 40 * CHUNK)
    status = _call_asgi(web.client.app, receive, _chunked_headers())
    assert status == 413
    assert receive.taken <= DEFAULT_CAP + CHUNK, f"read {receive.taken} bytes past a cap"
    assert _deliveries(web) == 0


def test_a_declared_length_over_the_cap_is_refused_before_reading(web: Web) -> None:
    receive = EndlessBody(DEFAULT_CAP + 1)
    headers = {**_chunked_headers(), "content-length": str(DEFAULT_CAP + 1)}
    del headers["transfer-encoding"]
    assert _call_asgi(web.client.app, receive, headers) == 413
    assert receive.taken == 0


def test_a_client_that_goes_away_mid_body_is_not_a_server_error(web: Web) -> None:
    class GoneAway(EndlessBody):
        async def __call__(self) -> dict[str, Any]:
            if self.taken:
                return {"type": "http.disconnect"}
            return await super().__call__()

    receive = GoneAway(10 * CHUNK)
    assert _call_asgi(web.client.app, receive, _chunked_headers()) == 400
    assert _deliveries(web) == 0


@pytest.fixture
def small_cap_server(queue_ready: str, oauth_github: FakeGitHubWithOAuth) -> Iterator[str]:
    settings = web_settings(queue_ready, oauth_github.url, webhook_max_body_bytes=256 * 1024)
    with open_app(settings, auto_migrate=False) as app, ServerThread(app) as server:
        yield server.url


def test_uvicorn_answers_413_long_before_a_huge_chunked_body_is_sent(small_cap_server: str) -> None:
    """200 MB offered in 64 KiB chunks to a server capped at 256 KiB: the 413 arrives while
    most of the body is still unsent, and the server reads no more."""
    host, port = small_cap_server.removeprefix("http://").split(":")
    offered = 200 * 1024 * 1024
    head = (
        "POST /webhooks/github HTTP/1.1\r\n"
        f"Host: {host}\r\n"
        "Transfer-Encoding: chunked\r\n"
        "X-GitHub-Event: issues\r\n"
        f"X-GitHub-Delivery: {uuid.uuid4()}\r\n"
        f"X-Hub-Signature-256: sha256={'0' * 64}\r\n\r\n"
    ).encode()
    chunk = f"{CHUNK:x}\r\n".encode() + b"x" * CHUNK + b"\r\n"
    sent = 0
    answer = b""
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        while sent < offered:
            readable, writable, _ = select.select([sock], [sock], [], 10)
            if readable:
                answer = sock.recv(65536)
                break
            if not writable:
                continue  # the server stopped reading; its answer is on the way
            try:
                sock.sendall(chunk)
            except OSError:  # reset after the server answered and closed
                break
            sent += CHUNK
        if not answer:
            answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 16 * 1024 * 1024, f"{sent} bytes went out before the server refused"


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"a":' * 5000,
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b"[" * 999 + b"]" * 999,
    ],
    ids=["open-arrays", "open-objects", "deep-object", "deep-but-closed-array"],
)
def test_deeply_nested_signed_json_is_400_never_500(web: Web, body: bytes) -> None:
    response = web.client.post(
        "/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": _sign(body),
        },
    )
    assert response.status_code == 400, response.text
    assert _deliveries(web) == 0


def test_deep_values_inside_a_valid_event_are_recorded_not_500(web: Web) -> None:
    """A JSON object whose fields nest deeply is still an event (finding 12): recorded, ignored."""
    inner = '{"a":' * 400 + "1" + "}" * 400
    body = ('{"action": "opened", "x": ' + inner + "}").encode()
    response = web.client.post(
        "/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": _sign(body),
        },
    )
    assert response.status_code == 202, response.text


def test_the_default_cap_is_githubs_25_mb(queue_ready: str, oauth_github: Any) -> None:
    settings = web_settings(queue_ready, oauth_github.url)
    assert settings.webhooks.max_body_bytes == DEFAULT_CAP
    with open_app(settings, auto_migrate=False) as app, TestClient(create_app(app)) as client:
        exact = b"{}" + b" " * (DEFAULT_CAP - 2)  # exactly at the cap: read, verified, recorded
        response = client.post(
            "/webhooks/github",
            content=exact,
            headers={
                "X-GitHub-Event": "ping",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": _sign(exact),
            },
        )
        assert response.status_code == 202, response.text
