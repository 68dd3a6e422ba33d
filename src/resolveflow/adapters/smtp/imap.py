"""Looking for one Message-ID in a mailbox's Sent folder over IMAP (the standard library's
``imaplib``, every operation bounded by a timeout). A read: reconciliation asks it whether a
message whose outcome was unknown did leave; it never sends anything.
"""

from __future__ import annotations

import imaplib
import ssl
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import Literal

from resolveflow.errors import ConfigurationError, ProviderUnavailable

# The newest hits read back when a search matches many (a marker is unique: more than a few hits
# are messages that merely contain it, and reading thousands would not end in time).
MAX_HITS_READ = 50


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
    for text in (endpoint.folder, message_id):
        _check_quotable(text)
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
        numbers = (found[0] or b"").split() if found else []
        return _exactly(client, numbers[-MAX_HITS_READ:], message_id)
    except (imaplib.IMAP4.error, OSError) as exc:
        raise ProviderUnavailable(f"imap: {type(exc).__name__}: {exc}") from None
    finally:
        try:
            client.logout()
        except (imaplib.IMAP4.error, OSError):
            client.shutdown()


def _exactly(client: imaplib.IMAP4, numbers: list[bytes], message_id: str) -> bool:
    """SEARCH HEADER matches a substring (RFC 3501 6.4.4): "<x" + our marker would be a hit, so
    each hit's Message-ID is read back and compared whole."""
    if not numbers:
        return False
    wanted = "(BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"
    status, data = client.fetch(b",".join(numbers).decode(), wanted)
    if status != "OK":
        raise ProviderUnavailable("imap: the search's hits could not be read")
    for item in data:
        if isinstance(item, tuple) and len(item) == 2:
            # compat32 keeps the value as written (the default policy would reparse an odd one)
            header = BytesHeaderParser(policy=compat32).parsebytes(item[1])
            value = str(header.get("Message-ID", "")).replace("\r\n", "").replace("\n", "")
            if value.strip() == message_id:
                return True
    return False


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


def _check_quotable(text: str) -> None:
    # imaplib sends arguments as they are: a line break would end the command and start another
    # (tested against dovecot: "CREATE" ran), and non-ASCII would need modified UTF-7.
    if not text.isascii() or any(c in text for c in "\r\n\0"):
        raise ConfigurationError(
            f"imap: {text!r} cannot be searched (a line break, NUL or non-ASCII character)"
        )


def _quoted(text: str) -> str:
    # A folder name or Message-ID as one IMAP quoted string (_check_quotable passed it).
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
