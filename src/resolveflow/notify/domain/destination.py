"""Where a tenant's notifications go: a webhook URL, its format and, for the json format, the
HMAC key. Pure: checked here, stored encrypted by ``notify/store/webhooks.py``, posted to by
``adapters/notify_webhook.py``.

The URL of a Slack incoming webhook is itself a credential, so a destination never shows it:
``shown`` is its scheme and host only, which is all the CLI and the logs ever print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from resolveflow.domain.network_addresses import AddressPolicy, url_port
from resolveflow.errors import InvalidInput
from resolveflow.notify.domain.message import NotifyFormat

MAX_URL_CHARS = 2048
MIN_SECRET_CHARS = 16  # an HMAC key anyone could guess signs nothing
MAX_SECRET_CHARS = 1024
# scheme://[userinfo@]host[:port] and the rest; the host is a name, an IPv4 address or [IPv6].
_URL = re.compile(
    r"^(https?)://(?:[^@/?#]*@)?(\[[0-9A-Fa-f:.]+\]|[^:/?#\[\]@]+)(:\d{1,5})?(?:[/?#].*)?$"
)


@dataclass(frozen=True)
class Destination:
    url: str = field(repr=False)
    format: NotifyFormat
    secret: str | None = field(default=None, repr=False)

    @property
    def shown(self) -> str:
        """The URL as it may be shown: scheme and host, the rest (the credential) hidden."""
        match = _URL.match(self.url)
        if match is None:  # not made by ``destination``: show nothing of it
            return "[redacted]"
        scheme, host, port = match.groups()
        return f"{scheme}://{host}{port or ''}/[redacted]"


def check_host(url: str, policy: AddressPolicy) -> None:
    """Refuse a URL that names no host, or one that is internal by its spelling alone."""
    match = _URL.match(url)
    if match is None:
        raise InvalidInput("the webhook URL must start with http:// or https:// and name a host")
    scheme, host, port = match.groups()
    policy.check_host(host, url_port(scheme, port[1:] if port else None))


def destination(
    url: str, format: NotifyFormat, secret: str | None, policy: AddressPolicy
) -> Destination:
    """A checked destination, or ``InvalidInput`` saying in one line what is wrong (never the
    URL itself: it may be a credential). A host that is internal by its spelling is refused
    here; what it resolves to is checked when a message is sent."""
    url = url.strip()
    if not url:
        raise InvalidInput("the webhook URL is empty")
    if len(url) > MAX_URL_CHARS or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise InvalidInput(
            f"the webhook URL must be one line of at most {MAX_URL_CHARS} characters, no spaces"
        )
    check_host(url, policy)
    if secret is not None and not secret.strip():
        secret = None  # an empty key is no key
    if secret is not None:
        secret = secret.strip("\r\n")
        if "\n" in secret or "\r" in secret or "\x00" in secret:
            raise InvalidInput("the webhook's HMAC key is one line")
        if not MIN_SECRET_CHARS <= len(secret) <= MAX_SECRET_CHARS:
            raise InvalidInput(
                f"the webhook's HMAC key is {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters"
            )
    if format is NotifyFormat.JSON and not secret:
        raise InvalidInput("the json format is signed: give its HMAC key on the second line")
    return Destination(url, format, secret or None)
