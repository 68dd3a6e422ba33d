"""``AioSmtpMailer``: the ``Mailer`` protocol over aiosmtplib, one connection per attempt.

The session is driven command by command (MAIL, each RCPT, DATA) rather than through
``sendmail``, because what a failure means depends on where it happened:

- before the DATA content was sent, nothing was delivered: a 5xx is a definite refusal
  (``ProviderRejected``); a 4xx (421, 450, 451, 452: "try later", to the greeting, MAIL or a
  RCPT) is tried again on a new
  connection, ``retries`` times, ``retry_delay_seconds`` apart, and after that it is a refusal
  too (nothing was sent, so it is definite); a refused connection, a failed TLS handshake, a
  dropped connection or a timeout is ``ProviderUnavailable`` (nothing was sent; the gate may try
  again later). One refused recipient refuses the whole message: a message that reaches only some
  of the approved recipients is not the approved message.
- once the DATA content may have left, a 5xx final reply is a refusal (the server did not take
  the message), and anything else (a 4xx, a dropped connection, a timeout) is
  ``ProviderOutcomeUnknown``: the server may have queued it, so it is never sent again here.
  aiosmtplib sends the DATA command and the content in one call, so a 4xx to the DATA command
  itself is reported unknown too (rare, and a person or the Sent folder settles it).

Every connection is bounded as a whole by ``deadline_seconds`` (``asyncio.timeout``), and each
reply by ``timeout_seconds``; the connection is closed on every path. ``send_message`` runs its own event
loop, as the executor is synchronous: call it from a thread without a running loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from enum import Enum

import aiosmtplib

from resolveflow.adapters.base import writes
from resolveflow.adapters.smtp.protocol import (
    OutgoingMessage,
    Security,
    SendReceipt,
    SmtpEndpoint,
)
from resolveflow.errors import (
    ProviderError,
    ProviderOutcomeUnknown,
    ProviderRejected,
    ProviderUnavailable,
)
from resolveflow.telemetry import span

QUIT_TIMEOUT_SECONDS = 2.0  # after the final reply the outcome is known; QUIT is a courtesy


class Phase(Enum):
    CONNECT = "connecting"
    ENVELOPE = "before the message was sent"
    DATA = "after the message may have been sent"


class TryLater(ProviderError):
    """A 4xx before DATA: nothing was sent, and the server asked to be asked again. Caught
    inside this adapter (it retries, then refuses); in the tree so that nothing escapes it."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"{code} {text}")
        self.code = code
        self.text = text


Sleep = Callable[[float], Awaitable[None]]


class AioSmtpMailer:
    def __init__(
        self,
        endpoint: SmtpEndpoint,
        *,
        tls_context: ssl.SSLContext | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._endpoint = endpoint
        self._tls_context = tls_context
        self._sleep = sleep

    @writes
    def send_message(self, message: OutgoingMessage) -> SendReceipt:
        with span("smtp.send", recipients=len(message.envelope_to)):
            return asyncio.run(self._send(message))

    async def _send(self, message: OutgoingMessage) -> SendReceipt:
        tries = self._endpoint.retries + 1
        for number in range(1, tries + 1):
            try:
                return await self._attempt(message)
            except TryLater as later:
                if number == tries:
                    raise ProviderRejected(
                        f"smtp: the server still answered {later} after {tries} tries; "
                        "nothing was sent.",
                        status=later.code,
                    ) from None
                await self._sleep(self._endpoint.retry_delay_seconds)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, message: OutgoingMessage) -> SendReceipt:
        client = self._client()
        phase = Phase.CONNECT
        try:
            async with asyncio.timeout(self._endpoint.deadline_seconds):
                await client.connect()
                phase = Phase.ENVELOPE
                await self._envelope(client, message)
                phase = Phase.DATA
                reply = await client.data(message.raw)
            await _quit(client)
            return SendReceipt(code=reply.code, text=reply.message, message_id=message.message_id)
        except aiosmtplib.SMTPResponseException as exc:
            raise _refused(phase, exc.code, exc.message) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            raise _lost(phase, exc) from None
        finally:
            client.close()

    async def _envelope(self, client: aiosmtplib.SMTP, message: OutgoingMessage) -> None:
        endpoint = self._endpoint
        if endpoint.username is not None and endpoint.password is not None:
            if endpoint.auth == "xoauth2":
                await client.auth_xoauth2(endpoint.username, endpoint.password)
            else:
                await client.login(endpoint.username, endpoint.password)
        await client.mail(message.envelope_from)
        for recipient in message.envelope_to:
            await client.rcpt(recipient)

    def _client(self) -> aiosmtplib.SMTP:
        endpoint = self._endpoint
        return aiosmtplib.SMTP(
            hostname=endpoint.host,
            port=endpoint.port,
            local_hostname=endpoint.helo_name,
            timeout=endpoint.timeout_seconds,
            use_tls=endpoint.security is Security.TLS,
            start_tls=endpoint.security is Security.STARTTLS,
            tls_context=self._tls_context or _ca_context(endpoint.ca_file),
        )


def _ca_context(ca_file: str | None) -> ssl.SSLContext | None:
    """Verification against ``ca_file`` (hostname checked too); None: the system's CAs."""
    if ca_file is None:
        return None
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ProviderUnavailable(f"smtp: cannot read the CA file {ca_file}: {exc}") from None


async def _quit(client: aiosmtplib.SMTP) -> None:
    with contextlib.suppress(aiosmtplib.SMTPException, OSError, TimeoutError):
        async with asyncio.timeout(QUIT_TIMEOUT_SECONDS):
            await client.quit()


def _refused(phase: Phase, code: int, text: str) -> ProviderError | TryLater:
    """An SMTP reply other than the one expected, by where it came."""
    words = f"{code} {_one_line(text)}"
    if code >= 500:
        where = "" if phase is not Phase.DATA else " the message"
        return ProviderRejected(
            f"smtp: the server refused{where} ({words}); nothing was sent.", status=code
        )
    if phase is Phase.DATA:
        return ProviderOutcomeUnknown(
            f"smtp: the server answered {words} {phase.value}; it may have been accepted."
        )
    return TryLater(code, _one_line(text))  # a 4xx (or a stray code) before DATA: ask again


def _lost(phase: Phase, exc: BaseException) -> ProviderError:
    what = "no answer in time" if isinstance(exc, TimeoutError) else "the connection failed"
    if phase is Phase.DATA:
        return ProviderOutcomeUnknown(f"smtp: {what} {phase.value}; it may have been accepted.")
    return ProviderUnavailable(f"smtp: {what} {phase.value}; nothing was sent.")


def _one_line(text: str) -> str:
    """A server's reply text as one short line for a message (it may hold anything)."""
    flat = " ".join(text.split())
    return flat[:200]
