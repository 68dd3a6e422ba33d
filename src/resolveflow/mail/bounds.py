"""Bounds on one mail message, enforced before the standard library interprets any of it.

The stdlib's ``policy.default`` header parser is costly on hostile input: its memory grows with
the square of the RFC 2047 encoded words in one header (20,000 ``=?utf-8?q?a?=`` in a Subject:
280 KB in, 2.8 GB used), it spends ~10 microseconds and keeps ~500 bytes per byte of a structured
header (Content-Type, To), and a message's Content-Type is read five or six times while it is
parsed. So ``parse_bytes`` checks the size first, then lets the stdlib's feed parser split the
message (linear work, nothing interpreted) with two hooks: each header block (the message's and
every MIME part's) is checked when it is complete, before any header in it is read, and each new
part is counted and its depth checked. The policy's header parser gets a byte budget per message,
and each distinct header is parsed once. Exceeding any bound raises ``BoundExceeded`` with a
one-line reason; ``mail_loader`` turns it into ``UnreadableMessage``.

The hooks override two methods of ``email.feedparser.FeedParser`` that are not public but have
kept their names and roles since Python 3.3; the import fails loudly if they ever go away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.feedparser import BytesFeedParser, FeedParser
from email.message import EmailMessage
from email.policy import EmailPolicy
from typing import Any

from resolveflow.errors import InvalidInput, one_line

if not all(
    callable(getattr(FeedParser, hook, None)) for hook in ("_new_message", "_parse_headers")
):
    raise RuntimeError("email.feedparser changed: the mail bounds cannot hook the parser")


@dataclass(frozen=True)
class MailBounds:
    """What one message may hold (settings ``RESOLVEFLOW_MAIL_*``, docs/email.md)."""

    message_max_bytes: int = 10 * 1024 * 1024  # the whole message, attachments included
    max_headers: int = 300  # header fields in one block (the message's, or one part's)
    max_header_bytes: int = 16 * 1024  # one field with its folded lines (To of ~1,000 addresses)
    max_encoded_words: int = 200  # RFC 2047 words ("=?") in one field
    max_header_parse_bytes: int = 128 * 1024  # header text interpreted per message, ~1.5 s worst
    mime_max_depth: int = 20  # MIME nesting (a message is depth 1)
    mime_max_parts: int = 200  # MIME parts in all, the message and nested messages included
    html_timeout_seconds: float = 10.0  # converting a large HTML body to text (in a worker process)


class UnreadableMessage(InvalidInput):
    """A message or file that cannot be read as mail; the message says why, in one line."""


class BoundExceeded(UnreadableMessage):
    """A message is over one of its ``MailBounds``: the reason, one line, without the message's
    name (``parse_message`` adds it)."""


def check_header_block(lines: list[str], bounds: MailBounds) -> None:
    """One header block as the feed parser collected it (a line each, endings kept; a line that
    starts with a blank continues the field before it). Folded lines count with their field."""
    fields = 0
    name, size, words = "", 0, 0
    for line in lines:
        if line[:1] in (" ", "\t") and fields:
            size += len(line)
            words += line.count("=?")
        else:
            fields += 1
            if fields > bounds.max_headers:
                raise BoundExceeded(f"more than {bounds.max_headers} header fields in one block")
            name, size, words = line.split(":", 1)[0], len(line), line.count("=?")
        if size > bounds.max_header_bytes:
            raise BoundExceeded(
                f"the {_shown(name)} header is over {bounds.max_header_bytes} bytes"
            )
        if words > bounds.max_encoded_words:
            raise BoundExceeded(
                f"the {_shown(name)} header has over {bounds.max_encoded_words} encoded words"
            )


def _shown(name: str) -> str:
    return repr(one_line(name.strip(), 40).encode("ascii", "backslashreplace").decode())


@dataclass
class _Budget:
    """Header text the policy may still interpret, and what it already did (by raw value)."""

    left: int
    parsed: dict[tuple[str, str], Any] = field(default_factory=dict)


class _BoundedPolicy(EmailPolicy):
    """``policy.default`` whose header parser draws on a per-message byte budget and parses
    each distinct raw header once (the stdlib parses a header again on every read)."""

    budget: _Budget | None = None

    def __init__(self, budget: _Budget, **kw: Any) -> None:
        super().__init__(**kw)
        object.__setattr__(self, "budget", budget)  # policies are frozen once made

    def header_fetch_parse(self, name: str, value: str) -> Any:
        if hasattr(value, "name") or self.budget is None:  # already parsed, or no budget
            return super().header_fetch_parse(name, value)
        key = (name.lower(), value)
        found = self.budget.parsed.get(key)
        if found is None:
            self.budget.left -= len(value)
            if self.budget.left < 0:
                raise BoundExceeded("more header text than the parser may interpret")
            found = self.budget.parsed[key] = super().header_fetch_parse(name, value)
        return found


class _BoundedParser(BytesFeedParser):
    def __init__(self, bounds: MailBounds, policy: EmailPolicy) -> None:
        super().__init__(policy=policy)
        self._bounds = bounds
        self._parts = 0

    def _new_message(self) -> None:
        self._parts += 1
        if self._parts > self._bounds.mime_max_parts:
            raise BoundExceeded(f"more than {self._bounds.mime_max_parts} MIME parts")
        if len(self._msgstack) >= self._bounds.mime_max_depth:  # type: ignore[attr-defined]
            raise BoundExceeded(f"MIME parts nested more than {self._bounds.mime_max_depth} deep")
        super()._new_message()  # type: ignore[misc]

    def _parse_headers(self, lines: list[str]) -> None:
        check_header_block(lines, self._bounds)
        super()._parse_headers(lines)  # type: ignore[misc]


def parse_bytes(data: bytes, bounds: MailBounds) -> EmailMessage:
    """``data`` parsed as ``email.message_from_bytes(data, policy=policy.default)`` would, or
    ``BoundExceeded``. The returned message keeps the budget: reading its headers and parts
    later (``get_body``, ``get_content``) draws on it too."""
    if len(data) > bounds.message_max_bytes:
        raise BoundExceeded(f"{len(data)} bytes is larger than {bounds.message_max_bytes}")
    policy = _BoundedPolicy(_Budget(bounds.max_header_parse_bytes))
    parser = _BoundedParser(bounds, policy)
    parser.feed(data)
    parsed = parser.close()
    assert isinstance(parsed, EmailMessage)
    return parsed
