"""Request bodies on every route (issue 26, finding 3): bounded as they stream in, and an API
request's body is not read at all until its sender is known.

The ASGI tests count the bytes the app asked for (``EndlessBody``); the uvicorn test sends 200 MB
chunked bodies to a real ``resolveflow serve`` process and measures its peak memory (VmHWM).
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from conftest import make_world
from fixtures_github import SERVICE_TOKEN
from fixtures_web import Web, web_settings
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth

pytest_plugins = ["fixtures_web"]

CHUNK = 64 * 1024
CAP = 4 * 1024 * 1024  # RESOLVEFLOW_WEB_MAX_BODY_BYTES's default
ROUTES = (
    "/api/v1/ask",
    "/api/v1/mail/drafts",
    "/api/v1/runs",
    f"/api/v1/proposals/{uuid.UUID(int=7)}/edit",
)


class EndlessBody:
    """An ASGI ``receive`` that streams ``total`` bytes (of ``fill``) and counts what was taken."""

    def __init__(self, total: int, fill: bytes = b"[") -> None:
        self.total = total
        self.fill = fill
        self.taken = 0

    async def __call__(self) -> dict[str, Any]:
        if self.taken >= self.total:
            await asyncio.sleep(3600)  # a well-behaved app never asks again after the last chunk
        size = min(CHUNK, self.total - self.taken)
        self.taken += size
        body = (self.fill * (size // len(self.fill) + 1))[:size]
        return {"type": "http.request", "body": body, "more_body": self.taken < self.total}


def call_asgi(app: Any, path: str, receive: EndlessBody, headers: dict[str, str]) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
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


def chunked(token: str | None) -> dict[str, str]:
    headers = {"host": "testserver", "transfer-encoding": "chunked"}
    headers["content-type"] = "application/json"
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return headers


@pytest.mark.parametrize("path", ROUTES)
def test_a_chunked_body_over_the_cap_is_refused_at_the_cap(web: Web, path: str) -> None:
    receive = EndlessBody(CAP + 40 * CHUNK)
    assert call_asgi(web.client.app, path, receive, chunked(web.world.requester_token)) == 413
    assert receive.taken <= CAP + CHUNK, f"read {receive.taken} bytes past a {CAP} cap"


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("token", [None, "rf_" + "0" * 32 + "_" + "x" * 43, "garbage"])
def test_no_body_is_read_before_the_sender_is_known(web: Web, path: str, token: str | None) -> None:
    """Without a valid token: 401 before one byte is read (the route would read and validate
    the whole body before its dependency ran)."""
    receive = EndlessBody(CAP // 2)
    assert call_asgi(web.client.app, path, receive, chunked(token)) == 401
    assert receive.taken == 0


@pytest.mark.parametrize("path", ROUTES)
def test_a_declared_length_over_the_cap_is_refused_before_reading(web: Web, path: str) -> None:
    receive = EndlessBody(CAP + 1)
    headers = {**chunked(web.world.requester_token), "content-length": str(CAP + 1)}
    del headers["transfer-encoding"]
    assert call_asgi(web.client.app, path, receive, headers) == 413
    assert receive.taken == 0


def test_the_413_is_one_json_line_that_names_the_setting(web: Web) -> None:
    answer = web.client.post(
        "/api/v1/runs",
        content=b" " * (CAP + 1),
        headers={**web.api(web.world.requester_token), "Content-Type": "application/json"},
    )
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"] == "RequestTooLarge"
    assert "RESOLVEFLOW_WEB_MAX_BODY_BYTES" in answer.json()["message"]


def test_forms_are_capped_too_and_answer_a_page(web: Web) -> None:
    # Fields under Starlette's own 1 MiB per field, fewer than its 1000 fields: only the cap.
    receive = EndlessBody(CAP + 40 * CHUNK, b"a" * (CHUNK - 1) + b"&")
    headers = {"host": "testserver", "transfer-encoding": "chunked"}
    headers["content-type"] = "application/x-www-form-urlencoded"
    assert call_asgi(web.client.app, "/logout", receive, headers) == 413
    assert receive.taken <= CAP + CHUNK


def test_documents_keep_their_own_larger_cap(web: Web) -> None:
    """A document body past the JSON API's cap still reaches its route, which reads it (with its
    own cap, RESOLVEFLOW_DOCUMENT_MAX_BYTES) and then refuses the media type: 415, not 413."""
    answer = web.client.post(
        "/api/v1/documents",
        content=b"a" * (CAP + CAP // 2),
        headers={**web.api(web.world.requester_token), "Content-Type": "text/plain"},
    )
    assert answer.status_code == 415, answer.text[:300]
    receive = EndlessBody(40 * 1024 * 1024, b"a")  # past the document cap: refused at it
    headers = {**chunked(web.world.requester_token), "content-type": "text/plain"}
    assert call_asgi(web.client.app, "/api/v1/documents", receive, headers) == 413
    assert receive.taken <= 10 * 1024 * 1024 * 4 // 3 + 64 * 1024 + CHUNK


DEEP = {
    "open arrays": b"[" * 100_000,
    "open objects": b'{"a":' * 50_000,
    "closed arrays": b"[" * 5_000 + b"]" * 5_000,
    "just past the cap": b'{"question":' + b"[" * 32 + b"]" * 32 + b"}",
}


@pytest.mark.parametrize("path", [*ROUTES, "/api/v1/proposals/x/approve"])
@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deeply_nested_json_is_400_on_every_json_route(web: Web, path: str, kind: str) -> None:
    answer = web.client.post(
        path,
        content=DEEP[kind],
        headers={**web.api(web.world.requester_token), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text[:300]
    assert "RESOLVEFLOW_WEB_MAX_JSON_DEPTH" in answer.json()["message"]


def test_nesting_within_the_cap_is_the_routes_own_answer(web: Web) -> None:
    body = b'{"question":' + b"[" * 30 + b"]" * 30 + b"}"
    answer = web.client.post(
        "/api/v1/ask",
        content=body,
        headers={**web.api(web.world.requester_token), "Content-Type": "application/json"},
    )
    assert answer.status_code == 422, answer.text[:300]


def test_deep_json_to_documents_is_400_not_500(web: Web) -> None:
    answer = web.client.post(
        "/api/v1/documents",
        content=b"[" * 100_000,
        headers={**web.api(web.world.requester_token), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text[:300]


UNSTORABLE = [
    ("/api/v1/ask", {"question": "why\u0000"}, "question"),
    ("/api/v1/ask", {"question": "why\ud800"}, "question"),
    ("/api/v1/runs", {"issue": "acme/widgets#1\ud83d"}, "issue"),
    (f"/api/v1/proposals/{uuid.UUID(int=7)}/edit", {"comment": "a\u0000"}, "comment"),
    (f"/api/v1/proposals/{uuid.UUID(int=7)}/edit", {"labels": ["ok", "b\udfff"]}, "labels[1]"),
    (f"/api/v1/proposals/{uuid.UUID(int=7)}/reject", {"reason": "\udc80"}, "reason"),
    ("/api/v1/mail/drafts", {"mailbox": "a@b.c", "request": "x", "facts": "a: \x00"}, "facts"),
    ("/api/v1/mail/drafts", {"mailbox": "a@b.c", "request": "x", "\x00": 1}, "key"),
]


@pytest.mark.parametrize(("path", "body", "named"), UNSTORABLE)
def test_text_the_database_cannot_hold_is_400_on_every_json_route(
    web: Web, path: str, body: dict[str, Any], named: str
) -> None:
    answer = web.client.post(
        path,
        content=json.dumps(body),  # ASCII: a lone surrogate travels as \\udXXX, as JSON allows
        headers={**web.api(web.world.requester_token), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text[:300]
    message = answer.json()["message"]
    assert named in message and ("NUL" in message or "surrogate" in message), message


def test_nul_in_a_query_is_400(web: Web) -> None:
    answer = web.client.delete(
        "/api/v1/documents?path=a%00b", headers=web.api(web.world.requester_token)
    )
    assert answer.status_code == 400, answer.text
    assert "path" in answer.json()["message"]


# --- a real server -------------------------------------------------------------------------

OFFERED = 200 * 1024 * 1024
GROWTH_CEILING = 100 * 1024 * 1024


@dataclass
class Served:
    url: str
    pid: int
    token: str

    def peak(self) -> int:
        """The server process's peak resident memory so far (VmHWM), in bytes."""
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")


def _environment(settings_values: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    for name, value in settings_values.items():
        text = json.dumps(value) if isinstance(value, dict) else str(value)
        env[f"RESOLVEFLOW_{name.upper()}"] = text
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def served(queue_ready: str, oauth_github: FakeGitHubWithOAuth) -> Iterator[Served]:
    from resolveflow.bootstrap.app import open_app

    settings = web_settings(queue_ready, oauth_github.url)
    with open_app(settings, auto_migrate=False) as app:
        token = make_world(app.db).requester_token
    port = _free_port()
    values = {"database_url": queue_ready, "github_api_url": oauth_github.url, "embedder": "fake"}
    values |= {"github_token": SERVICE_TOKEN}
    server = subprocess.Popen(
        [sys.executable, "-m", "resolveflow", "serve", "--port", str(port)],
        env=_environment(values),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not start"
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield Served(url, server.pid, token)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)


def offer(url: str, path: str, token: str | None, total: int = OFFERED) -> tuple[bytes, int]:
    """Send ``total`` bytes as a chunked body until the server answers; (answer, bytes sent)."""
    host, port = url.removeprefix("http://").split(":")
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n"
        f"Content-Type: application/json\r\n{auth}\r\n"
    ).encode()
    chunk = f"{CHUNK:x}\r\n".encode() + b"[" * CHUNK + b"\r\n"
    sent, answer = 0, b""
    deadline = time.monotonic() + 120
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(head)
        while sent < total and time.monotonic() < deadline:
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
        else:
            if sent >= total:
                sock.sendall(b"0\r\n\r\n")
        if not answer:
            answer = sock.recv(65536)
    return answer, sent


def test_200_mb_chunked_bodies_leave_a_real_server_small(served: Served) -> None:
    """Each of the four JSON routes, with and without a token: refused (413 / 401) while most of
    the body is unsent, and the server's peak memory grows by less than 100 MB in all (the old
    code grew by about 1 GB per request)."""
    for path in ROUTES:  # warm up: every route's modules imported, the pool open
        offer(served.url, path, served.token, total=CHUNK)
    before = served.peak()
    answers = []
    for path in ROUTES:
        for token, status in ((served.token, b"413"), (None, b"401")):
            answer, sent = offer(served.url, path, token)
            answers.append((path, token is not None, status, answer[:300], sent))
    growth = served.peak() - before
    print(f"\nserver peak memory: {before / 2**20:.0f} MiB, then +{growth / 2**20:.0f} MiB")
    assert growth < GROWTH_CEILING, f"the server's peak memory grew by {growth / 2**20:.0f} MiB"
    for path, signed, status, answer, sent in answers:
        assert answer.startswith(b"HTTP/1.1 " + status), (path, signed, answer)
        assert sent < 32 * 1024 * 1024, f"{path}: {sent} bytes went out before the refusal"
