"""The fake notification webhook: a real HTTP server on 127.0.0.1 that takes ``POST /hook``.

It records every delivery (the body as JSON, the signature headers), checks the HMAC itself when
given the shared secret (its own code, not ResolveFlow's: the check a team's receiver would
write), and refuses a signature whose timestamp is too old (a replay). It can be told to answer
the next deliveries with an error (``fail_next``) or to hang until the client gives up
(``hang_next``), so tests see retries and timeouts over the wire. A delivery it answers with an
error or drops is still recorded, with ``answered`` saying what it got.

``python -m resolveflow.sandbox.notify_receiver [--port P]`` runs one to try notifications by
hand: it prints its URL, then each delivery as a line of JSON, until Ctrl-C or SIGTERM; the key to
check signatures with is read from ``RESOLVEFLOW_NOTIFY_SECRET``, as the product reads it.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from resolveflow.sandbox.loopback import Exchange, LoopbackServer, Reply

SIGNATURE_HEADER = "X-ResolveFlow-Signature"
TIMESTAMP_HEADER = "X-ResolveFlow-Timestamp"
REPLAY_WINDOW_SECONDS = 300
HANG_LIMIT_SECONDS = 60.0  # a hung reply waits at most this long (or until stop())


@dataclass(frozen=True)
class Delivery:
    body: Any  # the parsed JSON (None when the body was not JSON)
    raw: bytes
    signature: str | None
    timestamp: str | None
    verified: bool | None  # None: no secret to check with
    answered: int | None  # the status sent back; None: hung, then dropped


@dataclass(eq=False)
class ReceiverState:
    secret: bytes | None
    clock: Callable[[], float]
    lock: threading.Lock = field(default_factory=threading.Lock)
    deliveries: list[Delivery] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)  # statuses for the next deliveries
    hangs: int = 0

    def verify(self, raw: bytes, signature: str | None, timestamp: str | None) -> bool | None:
        if self.secret is None:
            return None
        if not signature or not timestamp or not timestamp.isdigit():
            return False
        if abs(self.clock() - int(timestamp)) > REPLAY_WINDOW_SECONDS:
            return False
        expected = hmac.new(self.secret, timestamp.encode() + b"." + raw, hashlib.sha256)
        return hmac.compare_digest(signature, "sha256=" + expected.hexdigest())

    def next_answer(self) -> int | None:
        """The status to answer with (None: hang); 200 unless told otherwise."""
        with self.lock:
            if self.hangs:
                self.hangs -= 1
                return None
            return self.failures.pop(0) if self.failures else 200


class NotifyReceiver:
    """``ReceiverState`` served on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        secret: bytes | None = None,
        clock: Callable[[], float] = time.time,
        *,
        port: int = 0,
        on_delivery: Callable[[Delivery], None] | None = None,
    ) -> None:
        self.state = ReceiverState(secret, clock)
        self._on_delivery = on_delivery
        self._server = LoopbackServer(self._serve, port=port, server_name="sandbox-notify")

    @property
    def url(self) -> str:
        """The hook's URL once started, else ``""``."""
        return f"{self._server.url}/hook" if self._server.url else ""

    @property
    def deliveries(self) -> list[Delivery]:
        with self.state.lock:
            return list(self.state.deliveries)

    def fail_next(self, count: int, status: int = 500) -> None:
        with self.state.lock:
            self.state.failures.extend([status] * count)

    def hang_next(self, count: int = 1) -> None:
        with self.state.lock:
            self.state.hangs += count

    def wait(self) -> None:
        """Until ``stop()`` (or a signal's exception)."""
        self._server.stopping.wait()

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

    def _serve(self, exchange: Exchange) -> None:
        if exchange.method != "POST" or exchange.path != "/hook":
            exchange.send(Reply(404, {"message": "not found"}))
            return
        raw = exchange.body or b""
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = None
        signature, timestamp = exchange.header(SIGNATURE_HEADER), exchange.header(TIMESTAMP_HEADER)
        verified = self.state.verify(raw, signature, timestamp)
        status = self.state.next_answer()
        if status is None:
            self._record(Delivery(body, raw, signature, timestamp, verified, None))
            self._server.stopping.wait(HANG_LIMIT_SECONDS)  # the client times out first
            exchange.drop()
            return
        if verified is False:
            status = 401
        self._record(Delivery(body, raw, signature, timestamp, verified, status))
        exchange.send(Reply(status, {"ok": status < 300}))

    def _record(self, delivery: Delivery) -> None:
        with self.state.lock:
            self.state.deliveries.append(delivery)
        if self._on_delivery is not None:
            self._on_delivery(delivery)


def _line(value: object) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def _print(delivery: Delivery) -> None:
    _line({"answered": delivery.answered, "verified": delivery.verified, "body": delivery.body})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A notification webhook that prints deliveries.")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    secret = os.environ.get("RESOLVEFLOW_NOTIFY_SECRET")
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    receiver = NotifyReceiver(
        secret.encode() if secret else None, port=args.port, on_delivery=_print
    )
    with receiver:
        _line({"url": receiver.url})
        try:
            receiver.wait()
        except KeyboardInterrupt:
            return


if __name__ == "__main__":
    main(sys.argv[1:])
