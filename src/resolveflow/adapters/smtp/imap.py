"""Looking for one Message-ID in a mailbox's Sent folder over IMAP (the standard library's
``imaplib``, every operation bounded by a timeout). A read: reconciliation asks it whether a
message whose outcome was unknown did leave; it never sends anything.
"""

from __future__ import annotations

import imaplib
import ssl
from dataclasses import dataclass, field
from typing import Literal

from resolveflow.errors import ProviderUnavailable


@dataclass(frozen=True)
class ImapEndpoint:
    host: str
    port: int
    folder: str
    username: str
    secret: str = field(repr=False)
    auth: Literal["password", "xoauth2"] = "password"
    tls: bool = True  # False: loopback only (the sandbox), as an SMTP endpoint's "plain"
    timeout_seconds: float = 30.0
    ca_file: str | None = None


def sent_folder_has(
    endpoint: ImapEndpoint, message_id: str, *, tls_context: ssl.SSLContext | None = None
) -> bool:
    """Whether the Sent folder holds a message with this Message-ID header."""
    try:
        client = _connect(endpoint, tls_context)
    except (imaplib.IMAP4.error, OSError, ssl.SSLError) as exc:
        raise ProviderUnavailable(f"imap: cannot reach {endpoint.host}: {exc}") from None
    try:
        _login(client, endpoint)
        status, _ = client.select(_quoted(endpoint.folder), readonly=True)
        if status != "OK":
            raise ProviderUnavailable(f"imap: no folder {endpoint.folder!r}")
        status, found = client.search(None, "HEADER", "Message-ID", _quoted(message_id))
        if status != "OK":
            raise ProviderUnavailable("imap: the search failed")
        return bool(found and found[0] and found[0].split())
    except (imaplib.IMAP4.error, OSError) as exc:
        raise ProviderUnavailable(f"imap: {type(exc).__name__}: {exc}") from None
    finally:
        try:
            client.logout()
        except (imaplib.IMAP4.error, OSError):
            client.shutdown()


def _connect(endpoint: ImapEndpoint, tls_context: ssl.SSLContext | None) -> imaplib.IMAP4:
    timeout = endpoint.timeout_seconds
    if not endpoint.tls:
        return imaplib.IMAP4(endpoint.host, endpoint.port, timeout=timeout)
    context = tls_context or ssl.create_default_context(cafile=endpoint.ca_file)
    return imaplib.IMAP4_SSL(endpoint.host, endpoint.port, ssl_context=context, timeout=timeout)


def _login(client: imaplib.IMAP4, endpoint: ImapEndpoint) -> None:
    if endpoint.auth == "xoauth2":
        blob = f"user={endpoint.username}\x01auth=Bearer {endpoint.secret}\x01\x01".encode()
        client.authenticate("XOAUTH2", lambda _challenge: blob)
    else:
        client.login(endpoint.username, endpoint.secret)


def _quoted(text: str) -> str:
    # A folder name or Message-ID as one IMAP quoted string (both were validated: no CR or LF).
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
