"""The forge's HTTP front end: counters, rate limits and injected faults around the route table.

``Frontend`` serves a ``LoopbackServer``. For every API request it counts it, works out who is
making it (``identify``: the Authorization header to a login), takes the next matching injected
fault, and runs the route (``routing.find``), or answers 401 without a token and 404 for an
unknown path. Public routes (the OAuth pages) skip all of that. It never looks inside the state:
the routes do.

Counters (``writes_received``, ``writes_applied``, ``write_log``) let tests prove how many writes
reached the forge and how many took effect. A route and the count of its effect happen under one
lock, so a test never sees a write applied but not counted. The faults are in ``faults``; this
module decides how to act on each (drop, hang, wait, answer instead, damage the answer, or send
it slowly).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.faults import (
    Delay,
    DropAfterWrite,
    Fault,
    FaultQueue,
    HangAfterWrite,
    Hold,
    Malformed2xx,
    PrimaryRateLimit,
    SecondaryRateLimit,
    Status,
    TamperedBody,
    Trickle,
    malformed_reply,
    secondary_rate_limit_reply,
    status_reply,
    tampered_reply,
)
from resolveflow.sandbox.forge.model import FakeRequest
from resolveflow.sandbox.forge.routing import BoundRoute, find
from resolveflow.sandbox.loopback import Exchange, LoopbackServer, Reply

RATE_LIMIT_WINDOW_SECONDS = 3600


class WriteRecord(NamedTuple):
    """One write request as the server saw it (compares equal to a plain 4-tuple)."""

    method: str
    path: str
    login: str | None
    applied: bool


class Frontend:
    """Faults, counters and dispatch for one forge (see the module docstring)."""

    def __init__(
        self,
        routes: Sequence[BoundRoute],
        identify: Callable[[str | None], str | None],
        *,
        port: int = 0,
        rate_limit: int = 5000,
    ) -> None:
        self.routes = list(routes)
        self._identify = identify
        self._rate_limit = rate_limit
        self._lock = threading.Lock()
        self._faults = FaultQueue()
        self._writes_received = 0
        self._writes_applied = 0
        self._requests = 0
        self._write_log: list[WriteRecord] = []
        self._write_times: list[tuple[float, str | None]] = []  # (monotonic, login) per write
        self._used: dict[str, int] = {}
        self._window_reset = int(time.time()) + RATE_LIMIT_WINDOW_SECONDS
        self.write_accepted = threading.Event()  # set by HangAfterWrite once the write is applied
        self.loopback = LoopbackServer(
            self.serve,
            port=port,
            server_name="GitHub.com",
            error_reply=lambda: Reply(500, payloads.error("Server Error", status=500)),
        )

    # --- faults and counters ---------------------------------------------------------------

    def inject(self, fault: Fault, *, method: str | None, path: str | None, times: int) -> None:
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
    def write_times(self) -> list[tuple[float, str | None]]:
        """When each write arrived (monotonic) and whose it was: pacing tests read the gaps."""
        with self._lock:
            return list(self._write_times)

    @property
    def requests_received(self) -> int:
        with self._lock:
            return self._requests

    # --- serving ---------------------------------------------------------------------------

    def serve(self, exchange: Exchange) -> None:
        found = find(self.routes, exchange.method, exchange.path)
        route, params = found if found is not None else (None, ())
        if route is not None and route.public:
            request = FakeRequest(
                exchange.method, exchange.path, exchange.query, exchange.body, None
            )
            request.params = params
            exchange.send(route.call(request))
            return
        request = self._begin(exchange)
        request.params = params
        try:
            fault = self._take_fault(exchange) if request.login is not None else None
            self._serve(exchange, request, route, fault)
        finally:
            self._log_unapplied(request)

    def _begin(self, exchange: Exchange) -> FakeRequest:
        """Count the request and resolve who is making it."""
        login = self._identify(exchange.header("Authorization"))
        request = FakeRequest(exchange.method, exchange.path, exchange.query, exchange.body, login)
        request.if_match = exchange.header("If-Match")
        with self._lock:
            self._requests += 1
            self._writes_received += int(request.is_write)
        return request

    def _take_fault(self, exchange: Exchange) -> Fault | None:
        with self._lock:
            fault = self._faults.take(exchange.method, exchange.target)
        if isinstance(fault, Hold):  # held until released, then served as usual
            fault.arrived.set()
            while not (fault.release.wait(0.05) or self.loopback.stopping.is_set()):
                pass
            return None
        return fault

    def _serve(
        self,
        exchange: Exchange,
        request: FakeRequest,
        route: BoundRoute | None,
        fault: Fault | None,
    ) -> None:
        match fault:
            case None:
                self._send(exchange, request, self._execute(request, route))
            case Delay(seconds=seconds, apply_write=apply):
                stopped = self.loopback.stopping.wait(seconds)
                if stopped or (request.is_write and not apply):
                    exchange.drop()
                else:
                    self._send(exchange, request, self._execute(request, route))
            case DropAfterWrite():
                self._execute(request, route)
                exchange.drop()
            case HangAfterWrite():
                self._execute(request, route)
                self.write_accepted.set()
                self.loopback.stopping.wait()
                exchange.drop()
            case PrimaryRateLimit(reset_in=reset_in):
                self._send_primary_rate_limit(exchange, request, reset_in)
            case Trickle(interval=interval, apply_write=apply):
                if request.is_write and not apply:
                    reply = Reply(502, payloads.error("Bad Gateway", status=502))
                else:
                    reply = self._execute(request, route)
                self._send(exchange, request, reply, byte_interval=interval)
            case Status() | SecondaryRateLimit() | Malformed2xx() | TamperedBody():
                self._send(exchange, request, self._canned(request, route, fault))
            # Hold never gets here: _take_fault waits it out and serves the request as usual.

    def _canned(
        self,
        request: FakeRequest,
        route: BoundRoute | None,
        fault: Status | SecondaryRateLimit | Malformed2xx | TamperedBody,
    ) -> Reply:
        """The reply for a fault that answers (rather than hangs or drops)."""
        match fault:
            case Status():
                if fault.apply_write:
                    self._execute(request, route)
                return status_reply(fault)
            case SecondaryRateLimit():
                return secondary_rate_limit_reply(fault)
            case Malformed2xx():
                if fault.apply_write:
                    self._execute(request, route)
                return malformed_reply(fault, request.method)
            case TamperedBody():
                return tampered_reply(fault, self._execute(request, route))

    def _execute(self, request: FakeRequest, route: BoundRoute | None) -> Reply:
        """Run the route and record whether the write took effect, as one step."""
        with self._lock:
            if request.login is None:
                reply = Reply(401, payloads.error("Requires authentication", status=401))
            elif route is None:
                reply = Reply(404, payloads.not_found())
            else:
                reply = route.call(request)
            applied = request.is_write and 200 <= reply.status < 300
            self._writes_applied += int(applied)
            self._log(request, applied)
            return reply

    def _log_unapplied(self, request: FakeRequest) -> None:
        """Record a write that was received but never applied (a fault, or the client left)."""
        with self._lock:
            self._log(request, applied=False)

    def _log(self, request: FakeRequest, applied: bool) -> None:
        if request.is_write and not request.logged:
            request.logged = True
            self._write_log.append(
                WriteRecord(request.method, request.path, request.login, applied)
            )
            self._write_times.append((time.monotonic(), request.login))

    # --- rate limits -----------------------------------------------------------------------

    def _send(
        self,
        exchange: Exchange,
        request: FakeRequest,
        reply: Reply,
        *,
        byte_interval: float | None = None,
    ) -> None:
        # A write not applied is logged before its answer leaves: a client that has read the
        # answer must find it in the log (an applied one was logged with its effect).
        self._log_unapplied(request)
        exchange.send(reply, self._rate_headers(request.login), byte_interval=byte_interval)

    def _send_primary_rate_limit(
        self, exchange: Exchange, request: FakeRequest, reset_in: int
    ) -> None:
        reply = Reply(403, payloads.error(payloads.PRIMARY_RATE_LIMIT_MESSAGE))
        headers = self._rate_headers(request.login)
        headers["x-ratelimit-remaining"] = "0"
        headers["x-ratelimit-used"] = headers["x-ratelimit-limit"]
        headers["x-ratelimit-reset"] = str(int(time.time()) + reset_in)
        self._log_unapplied(request)
        exchange.send(reply, headers)

    def _rate_headers(self, login: str | None) -> dict[str, str]:
        """GitHub's rate-limit headers; every answered request uses one call of its login's
        hourly budget (the fake never refuses on its own: inject ``PrimaryRateLimit`` for that)."""
        with self._lock:
            now = int(time.time())
            if now >= self._window_reset:
                self._used.clear()
                self._window_reset = now + RATE_LIMIT_WINDOW_SECONDS
            key = login or ""
            used = self._used[key] = self._used.get(key, 0) + 1
            return {
                "x-ratelimit-limit": str(self._rate_limit),
                "x-ratelimit-remaining": str(max(0, self._rate_limit - used)),
                "x-ratelimit-reset": str(self._window_reset),
                "x-ratelimit-used": str(used),
                "x-ratelimit-resource": "core",
                "x-github-media-type": "github.v3; format=json",
            }
