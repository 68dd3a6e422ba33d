"""Posting one notification to the configured webhook (``notify/``), over httpx with a timeout.

The JSON format is signed: ``X-ResolveFlow-Timestamp`` (Unix seconds) and
``X-ResolveFlow-Signature: sha256=<hex>``, the HMAC-SHA256 of ``<timestamp>.<body>`` under the
shared secret, so a receiver can check who sent it and refuse an old one replayed (docs/
notifications.md shows the check). A failure is raised in our own words: the webhook's URL (a
Slack URL is itself a credential) and its answer's body are never in a message or a log.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Callable

import httpx

from resolveflow.errors import ProviderUnavailable

SIGNATURE_HEADER = "X-ResolveFlow-Signature"
TIMESTAMP_HEADER = "X-ResolveFlow-Timestamp"


class _RedactUrl(logging.Filter):
    """httpx logs each request's full URL (at INFO, which logging_setup keeps quiet unless the
    level is lowered): the hook's URL is a credential, so its lines name the host only."""

    def __init__(self, url: str) -> None:
        super().__init__()
        parsed = httpx.URL(url)
        self.urls = {url, str(parsed)}  # as given, and as httpx writes it
        self.shown = f"{parsed.scheme}://{parsed.netloc.decode()}/[redacted]"

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(url in message for url in self.urls):
            for url in self.urls:
                message = message.replace(url, self.shown)
            record.msg, record.args = message, ()
        return True


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


class WebhookSender:
    """POSTs bodies to one URL; ``secret`` set: each is signed."""

    def __init__(
        self,
        url: str,
        *,
        timeout_seconds: float,
        secret: bytes | None = None,
        clock: Callable[[], float] = time.time,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._url = url
        self._redact = _RedactUrl(url)
        logging.getLogger("httpx").addFilter(self._redact)
        self._secret = secret
        self._clock = clock
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_seconds), follow_redirects=False, transport=transport
        )

    def send(self, body: bytes) -> None:
        """Deliver ``body``; raises ``ProviderUnavailable`` saying why it did not arrive."""
        headers = {"Content-Type": "application/json", "User-Agent": "ResolveFlow-notify"}
        if self._secret is not None:
            stamp = int(self._clock())
            headers[TIMESTAMP_HEADER] = str(stamp)
            headers[SIGNATURE_HEADER] = signature(self._secret, stamp, body)
        try:
            response = self._client.post(self._url, content=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise ProviderUnavailable("the notification webhook did not answer in time") from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ProviderUnavailable(
                f"the notification webhook could not be reached ({type(exc).__name__})"
            ) from exc
        if not 200 <= response.status_code < 300:
            raise ProviderUnavailable(
                f"the notification webhook answered HTTP {response.status_code}"
            )

    def close(self) -> None:
        logging.getLogger("httpx").removeFilter(self._redact)
        self._client.close()
