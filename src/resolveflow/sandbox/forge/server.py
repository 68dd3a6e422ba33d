"""A real HTTP server on 127.0.0.1 that behaves like the slice of GitHub ResolveFlow uses.

Tests and benchmarks point the production ``GitHubKitClient`` at it, so every byte goes through
httpx and githubkit exactly as it would against api.github.com: schema validation, pagination via
``Link`` headers, rate-limit headers, keep-alive connections. Faults are injected per request to
reproduce what makes exactly-once execution hard: a write that is applied but never answered,
answered too late, answered with garbage, or refused with a rate limit.

State lives in memory behind one lock; counters (``writes_received``, ``writes_applied``,
``write_log``) let tests prove how many writes reached GitHub and how many took effect.

Layout: this module holds the server, its HTTP handler and counters, and re-exports the public
names; the faults live in ``github_fake_faults``; the in-memory records and shared look-ups in
``github_fake_model``; issues, comments, labels and accounts (seeding and REST routes) in
``github_fake_state``; pull requests, check runs and workflow runs in ``github_fake_ci``; and the
JSON shapes in ``github_fake_payloads`` and ``github_fake_payloads_ci``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NamedTuple, Self
from urllib.parse import parse_qs

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.faults import (
    Delay,
    DropAfterWrite,
    Fault,
    FaultQueue,
    HangAfterWrite,
    Malformed2xx,
    PrimaryRateLimit,
    SecondaryRateLimit,
    Status,
    TamperedBody,
    malformed_reply,
    secondary_rate_limit_reply,
    status_reply,
    tampered_reply,
)
from resolveflow.sandbox.forge.model import WRITE_METHODS, FakeReply, FakeRequest
from resolveflow.sandbox.forge.state import FakeGitHubState

__all__ = [
    "Delay",
    "DropAfterWrite",
    "FakeGitHubServer",
    "Fault",
    "HangAfterWrite",
    "Malformed2xx",
    "PrimaryRateLimit",
    "SecondaryRateLimit",
    "Status",
    "TamperedBody",
    "WriteRecord",
    "main",
]

logger = logging.getLogger(__name__)


class WriteRecord(NamedTuple):
    """One write request as the server saw it (compares equal to a plain 4-tuple)."""

    method: str
    path: str
    login: str | None
    applied: bool


class FakeGitHubServer(FakeGitHubState):
    """In-memory GitHub over real HTTP/1.1 on 127.0.0.1 (see the module docstring).

    Repositories, tokens, rate limits, seeding, inspection and routes come from
    ``FakeGitHubState``; this class adds the HTTP server, fault injection and request counters.
    """

    def __init__(
        self, port: int = 0, *, default_login: str = "resolveflow-bot", rate_limit: int = 5000
    ) -> None:
        super().__init__(default_login=default_login, rate_limit=rate_limit)  # also the lock
        self._port = port
        self._faults = FaultQueue()
        self._writes_received = 0
        self._writes_applied = 0
        self._requests = 0
        self._connections_opened = 0
        self._write_log: list[WriteRecord] = []
        self._open_sockets: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.write_accepted = threading.Event()  # set by HangAfterWrite once the write is applied

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind (port 0 = ephemeral) and serve on a daemon thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        host, port = httpd.server_address[:2]
        self._url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut every open connection, releasing hung and delayed requests."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            open_sockets = list(self._open_sockets)
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- faults and counters ---------------------------------------------------------------

    def inject(
        self, fault: Fault, *, method: str | None = "POST", path: str | None = None, times: int = 1
    ) -> None:
        """Queue ``fault`` for the next ``times`` requests matching ``method`` and ``path``.

        ``path`` is a regex searched in the request target (path plus query string); ``None``
        matches anything. Faults are consumed in the order they were injected.
        """
        with self._lock:
            self._faults.add(fault, method, path, times)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return self._faults.pending

    @property
    def writes_received(self) -> int:
        with self._lock:
            return self._writes_received

    @property
    def writes_applied(self) -> int:
        with self._lock:
            return self._writes_applied

    @property
    def write_log(self) -> list[WriteRecord]:
        with self._lock:
            return list(self._write_log)

    @property
    def requests_received(self) -> int:
        with self._lock:
            return self._requests

    @property
    def connections_opened(self) -> int:
        """TCP connections accepted so far; lets tests prove the client reuses connections."""
        with self._lock:
            return self._connections_opened

    # --- request plumbing used by _Handler -------------------------------------------------

    def _track(self, sock: socket.socket, *, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections_opened += 1
                self._open_sockets.add(sock)
            else:
                self._open_sockets.discard(sock)

    def _begin(
        self, method: str, target: str, body: bytes, authorization: str | None
    ) -> FakeRequest:
        """Count the request and resolve who is making it."""
        path, _, query = target.partition("?")
        with self._lock:
            self._requests += 1
            if method in WRITE_METHODS:
                self._writes_received += 1
            login = self._login_for(authorization)
        return FakeRequest(method, path, parse_qs(query), body, login)

    def _take_fault(self, method: str, target: str) -> Fault | None:
        with self._lock:
            return self._faults.take(method, target)

    def _execute(self, request: FakeRequest) -> FakeReply:
        """Run the route under the lock and record whether the write took effect."""
        with self._lock:
            if request.login is None:
                reply = FakeReply(401, payloads.error("Requires authentication", status=401))
            else:
                reply = self._route(request)
            applied = request.is_write and 200 <= reply.status < 300
            self._writes_applied += int(applied)
            self._log(request, applied)
            return reply

    def _skip(self, request: FakeRequest) -> None:
        """Record a write that was received but deliberately not applied."""
        with self._lock:
            self._log(request, applied=False)

    def _log(self, request: FakeRequest, applied: bool) -> None:
        if request.is_write and not request.logged:
            request.logged = True
            self._write_log.append(
                WriteRecord(request.method, request.path, request.login, applied)
            )


# --- HTTP layer ----------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    fake: FakeGitHubServer


class _Handler(BaseHTTPRequestHandler):
    """Parses HTTP, applies the next matching fault, and writes the reply."""

    protocol_version = "HTTP/1.1"  # keep-alive; every reply carries Content-Length
    disable_nagle_algorithm = True  # headers and body go out in two writes
    server: _HTTPServer

    def version_string(self) -> str:
        return "GitHub.com"

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, opened=True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, opened=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the benchmark drives ~1000 requests per second through here."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        try:
            body = self._read_body()
        except (OSError, ValueError):  # unreadable request: give up on this connection
            self.close_connection = True
            return
        request = fake._begin(method, self.path, body, self.headers.get("Authorization"))
        try:
            fault = fake._take_fault(method, self.path) if request.login is not None else None
            self._serve(fake, request, fault)
        except OSError:  # the client went away (e.g. it timed out first)
            self.close_connection = True
        except Exception:
            logger.exception("fake GitHub handler failed", extra={"fake_path": request.path})
            self._send(fake, request, FakeReply(500, payloads.error("Server Error", status=500)))
        finally:
            fake._skip(request)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self, fake: FakeGitHubServer, request: FakeRequest, fault: Fault | None) -> None:
        match fault:
            case None:
                self._send(fake, request, fake._execute(request))
            case Delay(seconds=seconds, apply_write=apply):
                stopped = fake._stopping.wait(seconds)
                if stopped or (request.is_write and not apply):
                    self._drop()
                else:
                    self._send(fake, request, fake._execute(request))
            case DropAfterWrite():
                fake._execute(request)
                self._drop()
            case HangAfterWrite():
                fake._execute(request)
                fake.write_accepted.set()
                fake._stopping.wait()
                self._drop()
            case PrimaryRateLimit(reset_in=reset_in):
                self._send_primary_rate_limit(fake, request, reset_in)
            case _:
                self._send(fake, request, self._canned(fake, request, fault))

    def _canned(
        self,
        fake: FakeGitHubServer,
        request: FakeRequest,
        fault: Status | SecondaryRateLimit | Malformed2xx | TamperedBody,
    ) -> FakeReply:
        """The reply for a fault that answers (rather than hangs or drops)."""
        match fault:
            case Status():
                if fault.apply_write:
                    fake._execute(request)
                return status_reply(fault)
            case SecondaryRateLimit():
                return secondary_rate_limit_reply(fault)
            case Malformed2xx():
                if fault.apply_write:
                    fake._execute(request)
                return malformed_reply(fault, request.method)
            case TamperedBody():
                return tampered_reply(fault, fake._execute(request))

    def _send_primary_rate_limit(
        self, fake: FakeGitHubServer, request: FakeRequest, reset_in: int
    ) -> None:
        reply = FakeReply(403, payloads.error(payloads.PRIMARY_RATE_LIMIT_MESSAGE))
        headers = fake._rate_headers(request.login)
        headers["x-ratelimit-remaining"] = "0"
        headers["x-ratelimit-used"] = headers["x-ratelimit-limit"]
        headers["x-ratelimit-reset"] = str(int(time.time()) + reset_in)
        self._write(reply, headers)

    def _send(self, fake: FakeGitHubServer, request: FakeRequest, reply: FakeReply) -> None:
        self._write(reply, fake._rate_headers(request.login))

    def _write(self, reply: FakeReply, rate_headers: dict[str, str]) -> None:
        body = reply.encoded()
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        extra = {name.lower(): value for name, value in reply.headers.items()}
        for name, value in {**rate_headers, **extra}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        """Close the connection without a response, as a crashed proxy or reset would."""
        self.close_connection = True


def main(argv: list[str] | None = None) -> None:
    """Serve a seeded fake until Ctrl-C (handy for demos: point ResolveFlow at the URL)."""
    parser = argparse.ArgumentParser(description="Run a fake GitHub API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--repo", action="append", default=[], help="owner/name (repeatable)")
    parser.add_argument("--labels", default="bug,needs-triage", help="comma-separated")
    parser.add_argument("--issues", default="1", help="comma-separated issue numbers to seed")
    args = parser.parse_args(argv)
    server = FakeGitHubServer(port=args.port)
    for full_name in args.repo or ["acme/widgets"]:
        server.add_repo(full_name, [n for n in args.labels.split(",") if n])
        for number in (int(n) for n in args.issues.split(",") if n):
            server.add_issue(full_name, number, title=f"Issue {number}")
    with server:
        print(server.url, flush=True)  # noqa: T201
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
