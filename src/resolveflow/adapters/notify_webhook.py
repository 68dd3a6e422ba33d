"""Posting one notification to a webhook (``notify/``): bounded in time, memory and destination.

A webhook's receiver is outside our control, and whoever sets its URL may aim it anywhere, so a
send is held to three bounds, each enforced below the HTTP library where it cannot be talked out
of them:

- **time**: one deadline for the whole delivery (resolving the name, connecting, TLS, sending,
  the answer's status line and headers). httpx's timeouts apply per read, so a receiver that
  trickles a byte every few seconds would hold a worker for ever; here every socket operation
  gets what is left of the deadline, and none once it has passed.
- **memory**: only the status line and headers are read (h11 caps them at 100 KB); the body is
  never read, and the connection is closed instead of drained.
- **destination**: the name is resolved here, every address is checked against the policy
  (``notify/domain/addresses.py``: no loopback, private, link-local or metadata address unless
  the operator allowed the host) and the connection goes to the checked address, so a name that
  resolves inwards, or differently the second time, reaches nothing inside. TLS still verifies
  the certificate against the URL's host name.

The JSON format is signed: ``X-ResolveFlow-Timestamp`` (Unix seconds) and
``X-ResolveFlow-Signature: sha256=<hex>``, the HMAC-SHA256 of ``<timestamp>.<body>`` under the
shared secret (docs/notifications.md shows the check). A failure is raised in our own words and
says only that the message was not delivered: never the URL (a Slack URL is itself a
credential), and never what answered (a status or an error type would tell whoever set the URL
what listens there). The reason is logged at debug level for the operator.

No proxy from the environment is used: the checked address is the one connected to.
"""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import hmac
import ipaddress
import logging
import socket
import ssl
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpcore
import httpx

from resolveflow.domain.network_addresses import Address, AddressPolicy, DestinationRefused
from resolveflow.errors import ProviderUnavailable

SIGNATURE_HEADER = "X-ResolveFlow-Signature"
TIMESTAMP_HEADER = "X-ResolveFlow-Timestamp"

logger = logging.getLogger(__name__)

Resolver = Callable[[str, int], list[Address]]


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def system_resolver(host: str, port: int) -> list[Address]:
    """Every address the system's resolver gives for ``host`` (it reads the numeric spellings
    too: ``127.1`` and ``2130706433`` come back as 127.0.0.1)."""
    answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[Address] = []
    for _, _, _, _, sockaddr in answers:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found


class _Deadline:
    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._at = clock() + seconds

    def left(self, asked: float | None = None) -> float:
        """What remains (at most ``asked``); raises a timeout once nothing does."""
        left = self._at - self._clock()
        if left <= 0:
            raise httpcore.TimeoutException("the delivery's deadline passed")
        return left if asked is None else min(asked, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every operation ends by the delivery's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, self._deadline.left(timeout))
        return _DeadlineStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the policy allows, within the deadline."""

    def __init__(
        self,
        policy: AddressPolicy,
        resolver: Resolver,
        deadline: _Deadline,
        resolving: concurrent.futures.Executor,
    ) -> None:
        self._policy = policy
        self._resolver = resolver
        self._deadline = deadline
        self._resolving = resolving
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._resolve(host, port)
        self._policy.check_resolved(host, port, addresses)
        stream = self._inner.connect_tcp(
            str(addresses[0]), port, self._deadline.left(timeout), local_address, socket_options
        )
        return _DeadlineStream(stream, self._deadline)

    def _resolve(self, host: str, port: int) -> list[Address]:
        # getaddrinfo takes no timeout: it runs on a thread and is waited for until the deadline
        # (a resolver that hangs costs a thread until its own timeout, never the delivery).
        pending = self._resolving.submit(self._resolver, host, port)
        try:
            return pending.result(timeout=self._deadline.left())
        except concurrent.futures.TimeoutError as exc:
            raise httpcore.ConnectTimeout("the name did not resolve in time") from exc
        except OSError as exc:
            raise httpcore.ConnectError("the name did not resolve") from exc

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("a webhook is reached over TCP only")


class NotDelivered(ProviderUnavailable):
    """The receiver did not take the message: no 2xx answer by the deadline."""


class WebhookSender:
    """POSTs bodies to one URL; ``secret`` set: each is signed. Safe to share between threads:
    each send has its own connection and deadline."""

    def __init__(
        self,
        url: str,
        *,
        timeout_seconds: float,
        policy: AddressPolicy,
        secret: bytes | None = None,
        clock: Callable[[], float] = time.time,
        resolver: Resolver = system_resolver,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = url
        self._timeout = timeout_seconds
        self._policy = policy
        self._secret = secret
        self._clock = clock
        self._resolver = resolver
        self._monotonic = monotonic
        self._resolving = concurrent.futures.ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="notify-resolve"
        )
        self._ssl = ssl.create_default_context()

    def send(self, body: bytes) -> None:
        """Deliver ``body``; raises ``NotDelivered`` (or ``DestinationRefused``) when it did not
        arrive. Returns once a 2xx status line is read, whatever the body that follows."""
        try:
            status = self._post(body)
        except DestinationRefused:
            raise
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as exc:
            logger.debug("notification not delivered: %s", type(exc).__name__)
            raise self._not_delivered() from None
        except (httpcore.UnsupportedProtocol, httpx.InvalidURL, ValueError) as exc:
            logger.debug("notification not delivered: %s", type(exc).__name__)
            raise self._not_delivered() from None
        if not 200 <= status < 300:
            logger.debug("notification not delivered: HTTP %s", status)
            raise self._not_delivered()

    def _not_delivered(self) -> NotDelivered:
        return NotDelivered(
            f"the notification was not delivered (no 2xx answer within {self._timeout:g} s)"
        )

    def _post(self, body: bytes) -> int:
        deadline = _Deadline(self._timeout, self._monotonic)
        backend = _GuardedBackend(self._policy, self._resolver, deadline, self._resolving)
        url = httpx.URL(self._url)
        target = httpcore.URL(
            scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
        )
        timeouts = dict.fromkeys(("connect", "read", "write", "pool"), self._timeout)
        with (
            httpcore.ConnectionPool(
                ssl_context=self._ssl, network_backend=backend, max_connections=1, retries=0
            ) as pool,
            pool.stream(
                "POST",
                target,
                headers=self._headers(body, url),
                content=body,
                extensions={"timeout": timeouts},
            ) as response,
        ):
            return response.status  # the body is left unread: closing drops the connection

    def _headers(self, body: bytes, url: httpx.URL) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"Host", url.netloc),
            (b"Content-Type", b"application/json"),
            (b"User-Agent", b"ResolveFlow-notify"),
            (b"Connection", b"close"),
        ]
        if url.userinfo:  # user:password@ in the URL: sent as Basic auth, as httpx would
            pair = f"{url.username}:{url.password}".encode()
            headers.append((b"Authorization", b"Basic " + base64.b64encode(pair)))
        if self._secret is not None:
            stamp = int(self._clock())
            headers.append((TIMESTAMP_HEADER.encode(), str(stamp).encode()))
            headers.append(
                (SIGNATURE_HEADER.encode(), signature(self._secret, stamp, body).encode())
            )
        return headers

    def close(self) -> None:
        self._resolving.shutdown(wait=False, cancel_futures=True)


def refuse_inward(
    url: str, policy: AddressPolicy, timeout_seconds: float, resolver: Resolver = system_resolver
) -> None:
    """When a webhook is set: refuse a name that resolves inward now (``DestinationRefused``).
    A name that does not resolve is let through: it is checked again at every send."""
    parsed = httpx.URL(url)
    host, port = parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80)
    if policy.admits_host(host, port):
        return
    resolving = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        addresses = resolving.submit(resolver, host, port).result(timeout=timeout_seconds)
    except (concurrent.futures.TimeoutError, OSError, UnicodeError):
        return
    finally:
        resolving.shutdown(wait=False, cancel_futures=True)
    policy.check_resolved(host, port, addresses)
