"""The socket side of every sandbox fake: an HTTP/1.1 server on 127.0.0.1 that knows nothing else.

A fake hands ``LoopbackServer`` one function, ``serve(exchange)``, which reads the request from the
``Exchange`` and either answers it (``exchange.send``) or drops the connection
(``exchange.drop``). This module owns binding, the serving thread, keep-alive, connection tracking
and shutdown; what a request means (routes, faults, counters) belongs to the fake. ``stop()`` cuts
every open connection and sets ``stopping``, so a fake that waits (a delayed or hung reply) should
wait on ``stopping`` rather than sleep (``Exchange.send`` does, when it trickles a body).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

logger = logging.getLogger(__name__)

STOP_DRAIN_SECONDS = 5.0  # how long stop() waits for released handlers to finish


@dataclass
class Reply:
    """What to answer: a JSON ``payload`` or ``raw`` bytes, plus extra headers."""

    status: int
    payload: Any = None
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        return self.raw if self.raw is not None else json.dumps(self.payload).encode()


class Exchange:
    """One request as read off the wire, and the means to answer it once."""

    def __init__(self, handler: _Handler, method: str, body: bytes) -> None:
        self._handler = handler
        self.method = method
        self.target = handler.path  # path plus query string, as sent
        self.path, _, query = self.target.partition("?")
        self.query = parse_qs(query)
        self.body = body

    def header(self, name: str) -> str | None:
        return self._handler.headers.get(name)

    def send(
        self,
        reply: Reply,
        extra_headers: Mapping[str, str] | None = None,
        *,
        byte_interval: float | None = None,
    ) -> None:
        """Write ``reply``; its own headers win over ``extra_headers`` (case-insensitively).

        With ``byte_interval`` the status line and headers go out at once and the body one byte
        at a time, that many seconds before each; if the server stops meanwhile, the rest is
        never sent and the connection is closed.
        """
        body = reply.encoded()
        handler = self._handler
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.content_type)
        handler.send_header("Content-Length", str(len(body)))  # keep-alive needs it
        own = {name.lower(): value for name, value in reply.headers.items()}
        extra = {name.lower(): value for name, value in (extra_headers or {}).items()}
        for name, value in {**extra, **own}.items():
            handler.send_header(name, value)
        handler.end_headers()
        if byte_interval is None:
            handler.wfile.write(body)
            return
        stopping = handler.server.owner.stopping
        for index in range(len(body)):
            if stopping.wait(byte_interval):  # stop() must not wait for the rest of the body
                handler.close_connection = True
                return
            handler.wfile.write(body[index : index + 1])

    def drop(self) -> None:
        """Close the connection without a response, as a crashed proxy or reset would."""
        self._handler.close_connection = True


Serve = Callable[[Exchange], None]


class LoopbackServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 that passes every request to ``serve``.

    ``server_name`` is the ``Server`` header; ``error_reply`` is what a request gets when
    ``serve`` raises (the exception is logged).
    """

    def __init__(
        self,
        serve: Serve,
        *,
        port: int = 0,
        server_name: str = "sandbox",
        error_reply: Callable[[], Reply] = lambda: Reply(500, {"message": "Server Error"}),
    ) -> None:
        self.serve = serve
        self.server_name = server_name
        self.error_reply = error_reply
        self.stopping = threading.Event()
        self._port = port
        self._lock = threading.Lock()
        # Signalled when a connection's handler finishes: stop() waits for them to drain.
        self._closed = threading.Condition(self._lock)
        self._open_sockets: set[socket.socket] = set()
        self._connections_opened = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    @property
    def url(self) -> str | None:
        """``http://127.0.0.1:{port}`` once started (kept after ``stop()``), else ``None``."""
        return self._url

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def connections_opened(self) -> int:
        with self._lock:
            return self._connections_opened

    def start(self) -> str:
        """Bind (port 0 = ephemeral), serve on a daemon thread, and return the base URL."""
        if self._httpd is not None and self._url is not None:
            return self._url
        self.stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        host, port = httpd.server_address[:2]
        self._url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self._url

    def stop(self) -> None:
        """Stop serving and cut every open connection, releasing anything that waits."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.stopping.set()
        httpd.shutdown()
        with self._lock:
            open_sockets = list(self._open_sockets)
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        # Handler threads are daemons (a hung one must not hold the process): wait, bounded, for
        # those just released to finish, so that what they record is there once stop() returns.
        with self._closed:
            self._closed.wait_for(lambda: not self._open_sockets, timeout=STOP_DRAIN_SECONDS)

    def _track(self, sock: socket.socket, *, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections_opened += 1
                self._open_sockets.add(sock)
            else:
                self._open_sockets.discard(sock)
                self._closed.notify_all()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    owner: LoopbackServer


class _Handler(BaseHTTPRequestHandler):
    """Reads each request into an ``Exchange`` and hands it to the owner's ``serve``."""

    protocol_version = "HTTP/1.1"  # keep-alive; every reply carries Content-Length
    disable_nagle_algorithm = True  # headers and body go out in two writes
    server: _HTTPServer

    def version_string(self) -> str:
        return self.server.owner.server_name

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, opened=True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, opened=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the benchmarks drive ~1000 requests per second through here."""

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
        owner = self.server.owner
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
        except (OSError, ValueError):  # unreadable request: give up on this connection
            self.close_connection = True
            return
        exchange = Exchange(self, method, body)
        try:
            owner.serve(exchange)
        except OSError:  # the client went away (e.g. it timed out first)
            self.close_connection = True
        except Exception:
            logger.exception("sandbox handler failed", extra={"sandbox_path": exchange.path})
            with contextlib.suppress(OSError):
                exchange.send(owner.error_reply())
