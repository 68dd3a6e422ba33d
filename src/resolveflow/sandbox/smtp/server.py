"""``FakeSmtpServer``: a real SMTP server on 127.0.0.1 (aiosmtpd, in its own thread and event
loop) that records every message it accepted, so tests point the production client at it.

Faults are injected per test and apply to the next matching commands:

- ``Refuse(code, at, times)``: answer ``code`` to ``MAIL`` or ``RCPT`` ``times`` times (421 and
  451 are "try later", 550 is "no"); after that the fault has cleared;
- ``DropAfterData()``: keep the message (it was accepted), then close the connection without the
  final reply, as a server that crashed or a network that failed right after the DATA dot;
- ``Hang(at)``: answer nothing to ``MAIL`` (before anything of the message left) or after the DATA
  content (the message is kept, as a server that accepted it but whose reply was lost) until the
  client has gone or the server stops; it waits on an event, never on the clock.

``open_sessions`` counts connections that are still open, so a test can prove the client closed
every one; ``wait_idle`` waits (bounded) for the server to see the last one go.

Optionally it requires authentication (``credentials``: a user and a secret, accepted as
PLAIN/LOGIN password or XOAUTH2 bearer token; ``logins`` records who authenticated and how), and
TLS: ``starttls`` (a server SSL context: STARTTLS offered and required) or ``tls`` (implicit TLS
from the first byte, as on port 465).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import socket
import ssl
import threading
from dataclasses import dataclass
from email import message_from_bytes
from email.policy import SMTP as SMTP_POLICY
from typing import Any, Literal

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

HANG_LIMIT_SECONDS = 30.0  # a hung reply ends after this, or when the client or the server goes


@dataclass(frozen=True)
class Refuse:
    code: int
    at: Literal["MAIL", "RCPT"]
    times: int = 1
    text: str = "refused by the sandbox"


@dataclass(frozen=True)
class DropAfterData:
    """Keep the message, then cut the connection before the final reply."""


@dataclass(frozen=True)
class Hang:
    at: Literal["MAIL", "DATA"]


Fault = Refuse | DropAfterData | Hang


@dataclass(frozen=True)
class ReceivedMessage:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    raw: bytes
    message_id: str

    def headers(self) -> dict[str, str]:
        parsed = message_from_bytes(self.raw, policy=SMTP_POLICY)
        return {name: str(value) for name, value in parsed.items()}


class _Handler:
    """aiosmtpd's hooks: each one applies the faults, then records or accepts."""

    def __init__(self, owner: FakeSmtpServer) -> None:
        self.owner = owner

    async def handle_MAIL(  # aiosmtpd's hook names
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        reply = await self.owner.fault_reply("MAIL", server)
        if reply:
            return reply
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        reply = await self.owner.fault_reply("RCPT", server)
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        message_id = str(message_from_bytes(raw, policy=SMTP_POLICY).get("Message-ID", ""))
        self.owner.record(
            ReceivedMessage(str(envelope.mail_from), tuple(envelope.rcpt_tos), raw, message_id)
        )
        fault = self.owner.take_fault("DATA")
        if isinstance(fault, DropAfterData):
            assert isinstance(server.transport, asyncio.Transport)
            server.transport.abort()
        elif isinstance(fault, Hang):
            await self.owner.hang(server)
        return f"250 OK queued as {message_id}"


class _AuthHandler(_Handler):
    """The hooks plus AUTH XOAUTH2 (aiosmtpd finds ``auth_*`` methods on the handler)."""

    async def auth_XOAUTH2(self, server: SMTP, args: list[str]) -> AuthResult:
        try:
            blob = base64.b64decode(args[1], validate=True).decode()
            fields = dict(part.split("=", 1) for part in blob.split("\x01") if "=" in part)
        except (IndexError, binascii.Error, UnicodeDecodeError, ValueError):
            return AuthResult(success=False, handled=False)
        user, bearer = fields.get("user", ""), fields.get("auth", "")
        token = bearer.removeprefix("Bearer ")
        ok = self.owner.check_login("XOAUTH2", user, token)
        return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535


class _CountingSMTP(SMTP):
    def __init__(self, owner: FakeSmtpServer, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._owner = owner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.transport is None:  # not the STARTTLS upgrade of a connection already counted
            self._owner.session_opened()
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        super().connection_lost(error)
        self._owner.session_closed()


class _Controller(Controller):
    def __init__(
        self,
        owner: FakeSmtpServer,
        port: int,
        starttls: ssl.SSLContext | None,
        tls: ssl.SSLContext | None,
    ) -> None:
        auth: dict[str, Any] = {}
        if owner.credentials is not None:
            auth = {
                "authenticator": owner.authenticate,
                "auth_required": True,
                "auth_require_tls": starttls is not None,
            }
        super().__init__(
            _AuthHandler(owner) if owner.credentials is not None else _Handler(owner),
            hostname="127.0.0.1",
            port=port,
            ready_timeout=5.0,
            ssl_context=tls,
            tls_context=starttls,
            require_starttls=starttls is not None,
            **auth,
        )
        self._owner = owner

    def factory(self) -> SMTP:
        return _CountingSMTP(self._owner, self.handler, **self.SMTP_kwargs)


class FakeSmtpServer:
    def __init__(
        self,
        port: int = 0,
        *,
        credentials: tuple[str, str] | None = None,
        starttls: ssl.SSLContext | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.credentials = credentials
        self.logins: list[tuple[str, str]] = []  # (mechanism, user) of each successful AUTH
        self._lock = threading.Condition()
        self._faults: list[Fault] = []
        self._remaining: dict[int, int] = {}
        self._messages: list[ReceivedMessage] = []
        self._open = 0
        self.sessions_seen = 0
        self._stopping: asyncio.Event | None = None
        self._controller = _Controller(self, port or _free_port(), starttls, tls)

    # --- life -----------------------------------------------------------------------------

    def start(self) -> tuple[str, int]:
        self._controller.start()
        self._stopping = asyncio.Event()
        self.wait_idle()  # the controller's own readiness probe is not a client's session
        with self._lock:
            self.sessions_seen = 0
        return "127.0.0.1", int(self._controller.port)

    def stop(self) -> None:
        """Stop serving (again is a no-op); hung replies end first."""
        loop, stopping = self._controller.loop, self._stopping
        if stopping is None:
            return
        self._stopping = None
        loop.call_soon_threadsafe(stopping.set)
        self._controller.stop()

    def __enter__(self) -> FakeSmtpServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._controller.port)

    # --- faults and records ---------------------------------------------------------------

    def inject(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)
            self._remaining[id(fault)] = fault.times if isinstance(fault, Refuse) else 1

    def take_fault(self, at: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if _applies(fault, at) and self._remaining[id(fault)] > 0:
                    self._remaining[id(fault)] -= 1
                    return fault
        return None

    async def fault_reply(self, at: str, server: SMTP) -> str | None:
        fault = self.take_fault(at)
        if isinstance(fault, Refuse):
            return f"{fault.code} {fault.text}"
        if isinstance(fault, Hang):
            await self.hang(server)
        return None

    async def hang(self, server: SMTP) -> None:
        """Wait until the server stops or the limit passes; the client has given up by then."""
        stopping = self._stopping
        if stopping is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), HANG_LIMIT_SECONDS)

    def record(self, message: ReceivedMessage) -> None:
        with self._lock:
            self._messages.append(message)

    @property
    def messages(self) -> list[ReceivedMessage]:
        with self._lock:
            return list(self._messages)

    # --- authentication -------------------------------------------------------------------

    def check_login(self, mechanism: str, user: str, secret: str) -> bool:
        ok = self.credentials is not None and (user, secret) == self.credentials
        if ok:
            with self._lock:
                self.logins.append((mechanism, user))
        return ok

    def authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        """aiosmtpd's authenticator for PLAIN and LOGIN."""
        if not isinstance(data, LoginPassword):
            return AuthResult(success=False, handled=False)
        user, secret = data.login.decode(), data.password.decode()
        return AuthResult(success=self.check_login(mechanism, user, secret), handled=False)

    # --- sessions -------------------------------------------------------------------------

    def session_opened(self) -> None:
        with self._lock:
            self._open += 1
            self.sessions_seen += 1

    def session_closed(self) -> None:
        with self._lock:
            self._open -= 1
            self._lock.notify_all()

    @property
    def open_sessions(self) -> int:
        with self._lock:
            return self._open

    def wait_idle(self, timeout: float = 2.0) -> bool:
        """True once no connection is open; the server sees a close a moment after the client."""
        with self._lock:
            return self._lock.wait_for(lambda: self._open == 0, timeout)


def _free_port() -> int:
    # aiosmtpd's readiness probe connects to the port it was given, so port 0 cannot be passed on.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _applies(fault: Fault, at: str) -> bool:
    if isinstance(fault, Refuse | Hang):
        return fault.at == at
    return at == "DATA"
