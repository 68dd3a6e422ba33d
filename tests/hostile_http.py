"""A hostile HTTP receiver on 127.0.0.1, written on raw sockets so it can misbehave in ways a
real server framework would not let it: answer 200 and then stream a body of any size, trickle
the status line a byte at a time, accept and never answer, answer in something that is not HTTP.

Each behaviour is bounded (a byte budget, a time limit), so a test against code that does not
defend itself fails by a figure instead of hanging CI. The receiver counts connections, requests
read and bytes it sent, for the tests to assert on.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

Behaviour = Callable[[socket.socket, "HostileReceiver"], None]


@dataclass(eq=False)
class HostileReceiver:
    behaviour: Behaviour
    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    bytes_sent: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _server: socket.socket | None = None
    _threads: list[threading.Thread] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def sent(self, count: int) -> None:
        with self._lock:
            self.bytes_sent += count

    def __enter__(self) -> Self:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        server.settimeout(0.2)
        self._server, self.port = server, server.getsockname()[1]
        accepting = threading.Thread(target=self._accept, daemon=True)
        accepting.start()
        self._threads.append(accepting)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        if self._server is not None:
            self._server.close()

    def _accept(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            worker.start()
            self._threads.append(worker)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                request = _read_request(conn)
                with self._lock:
                    self.requests.append(request)
                self.behaviour(conn, self)
            except OSError:
                return  # the client went away: what a defended client does


def _read_request(conn: socket.socket) -> bytes:
    """The request's head and its Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def flood(total_bytes: int) -> Behaviour:
    """200 at once, then a chunked body of ``total_bytes``, as fast as the client reads."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * (1 << 20)
        frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        while receiver.bytes_sent < total_bytes and not receiver.stopping:
            conn.sendall(frame)
            receiver.sent(len(frame))
        conn.sendall(b"0\r\n\r\n")

    return behave


def trickle_status(every_seconds: float, for_seconds: float) -> Behaviour:
    """The status line and headers a byte every ``every_seconds``, for at most ``for_seconds``:
    each read gets a byte well within any per-read timeout, and the answer never completes."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        head = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000
        ends = time.monotonic() + for_seconds
        for byte in head:
            if time.monotonic() >= ends or receiver.stopping:
                return
            conn.sendall(bytes([byte]))
            receiver.sent(1)
            time.sleep(every_seconds)

    return behave


def trickle_body(every_seconds: float, for_seconds: float) -> Behaviour:
    """200 with a Content-Length at once, then the body a byte at a time."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        ends = time.monotonic() + for_seconds
        while time.monotonic() < ends and not receiver.stopping:
            conn.sendall(b"x")
            receiver.sent(1)
            time.sleep(every_seconds)

    return behave


def silent(for_seconds: float) -> Behaviour:
    """Reads the request, answers nothing, holds the connection open."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        ends = time.monotonic() + for_seconds
        while time.monotonic() < ends and not receiver.stopping:
            time.sleep(0.05)

    return behave


def status(code: int, delay_seconds: float = 0.0) -> Behaviour:
    """An ordinary answer with ``code``, after ``delay_seconds``."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        time.sleep(delay_seconds)
        conn.sendall(b"HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % code)

    return behave


def not_http(conn: socket.socket, receiver: HostileReceiver) -> None:
    """Something that listens but speaks another protocol (a database, a cache)."""
    conn.sendall(b"-ERR unknown command 'POST'\r\n")
