"""The parts of an ``email.send`` action: addresses, Message-IDs, attachments.

Addresses are bare ``local@domain`` addr-specs, parsed by the standard library's RFC 5322 parser
(``email.headerregistry.Address``) and then held to a stricter rule than it: no display name, no
quoted local part, no domain literal, ASCII only (SMTPUTF8 is not supported yet). A display name
is where a forged "Support <attacker@evil.example>" hides, and a quoted local part or a CR/LF is
where a header gets injected, so none of them reach a header. The domain is lower-cased (DNS is
case-insensitive); the local part is kept as written (RFC 5321 lets the receiving server decide).
"""

from __future__ import annotations

import re
from email.errors import HeaderParseError, MessageError
from email.headerregistry import Address

from pydantic import BaseModel, ConfigDict, Field, field_validator

from resolveflow.gate.domain.actions.text import normalize_text

MAX_ADDRESS_CHARS = 254  # RFC 5321's path limit, less the angle brackets
MAX_MESSAGE_ID_CHARS = 250
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024  # what common providers accept in one message
_DOT_ATOM = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
_HOST_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"^{_HOST_LABEL}(?:\.{_HOST_LABEL})+$")
# RFC 5322 msg-id: "<" id-left "@" id-right ">", both dot-atom text (no-fold-literal not taken).
_MESSAGE_ID = re.compile(
    r"^<[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9!#$%&'*+/=?^_`{|}~.\[\]-]+>$"
)
_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f/\\\"]")
_EXECUTION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")


def mail_address(value: str) -> str:
    """``value`` as one canonical bare address, or ValueError saying what is wrong with it."""
    if not isinstance(value, str) or any(ch in value for ch in "\r\n"):
        raise ValueError("an address is one line")
    value = value.strip()
    if not value.isascii():
        raise ValueError(f"only ASCII addresses are supported, got {value!r}")
    if len(value) > MAX_ADDRESS_CHARS:
        raise ValueError(f"an address is at most {MAX_ADDRESS_CHARS} characters")
    try:
        parsed = Address(addr_spec=value)
    except (HeaderParseError, MessageError, ValueError, IndexError):
        # IndexError: the parser's answer to "name@" with nothing after it
        raise ValueError(
            f"not an e-mail address (local@domain, no display name): {value!r}"
        ) from None
    domain = parsed.domain.lower()
    if not parsed.username or not _DOT_ATOM.match(parsed.username):
        raise ValueError(f"the part before @ must be plain (no quotes or spaces): {value!r}")
    if not _HOSTNAME.match(domain):
        raise ValueError(f"the part after @ must be a domain name such as example.org: {value!r}")
    return f"{parsed.username}@{domain}"


def address_list(value: tuple[str, ...]) -> tuple[str, ...]:
    """Canonical addresses, repeats collapsed, sorted: the order of a To line carries no meaning
    the recipient can act on, so two orders are one action (one digest)."""
    return tuple(sorted({mail_address(address) for address in value}))


def refuse_repeats(lists: dict[str, tuple[str, ...]]) -> None:
    """An address in two of To/Cc/Bcc (ignoring case) would hide a Bcc behind a To, or send twice."""
    seen: dict[str, str] = {}
    for field, addresses in lists.items():
        for address in addresses:
            key = address.casefold()
            if key in seen:
                raise ValueError(f"{address} appears in both {seen[key]} and {field}")
            seen[key] = field


def message_id_value(value: str) -> str:
    value = value.strip()
    if len(value) > MAX_MESSAGE_ID_CHARS or not _MESSAGE_ID.match(value):
        raise ValueError(f"a Message-ID looks like <left@right>, got {value[:80]!r}")
    return value


def mailbox_domain(mailbox: str) -> str:
    return mail_address(mailbox).rsplit("@", 1)[1]


def execution_message_id(execution_id: str, mailbox: str) -> str:
    """The marker of an ``email.send`` execution: the Message-ID header it is sent with."""
    if not _EXECUTION_ID.match(execution_id):
        raise ValueError(f"not an execution id: {execution_id!r}")
    return f"<resolveflow.{execution_id}@{mailbox_domain(mailbox)}>"


class EmailAttachment(BaseModel):
    """What the approver sees of a file: its bytes are stored by digest elsewhere, and the adapter
    checks they still hash to ``sha256`` before sending."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    media_type: str
    size: int = Field(ge=0, le=MAX_ATTACHMENT_BYTES)
    sha256: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = normalize_text(value).strip()
        if not value or len(value) > 255 or _UNSAFE_NAME.search(value) or value in {".", ".."}:
            raise ValueError(f"an attachment name is one plain file name, got {value[:80]!r}")
        return value

    @field_validator("media_type")
    @classmethod
    def _media_type(cls, value: str) -> str:
        value = value.strip().lower()
        if not _MEDIA_TYPE.match(value):
            raise ValueError(f"a media type looks like type/subtype, got {value[:80]!r}")
        return value

    @field_validator("sha256")
    @classmethod
    def _sha256(cls, value: str) -> str:
        value = value.strip().lower()
        if not _SHA256.match(value):
            raise ValueError("an attachment's sha256 is 64 hexadecimal characters")
        return value
