"""Reading mail: one ``.eml`` file, a folder of them, an mbox file or a Maildir, into
``mail.domain.message.MailMessage`` (stdlib ``email`` with ``policy.default``, within ``MailBounds``).

A message that cannot be used (no Message-ID, unparseable, over a bound) is skipped with its
reason; the rest go on. Messages are untrusted data: their text is stored and searched, never
obeyed. Files are read by ``mail_files`` (no symbolic links, no devices, at most the size bound).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage, Message
from email.utils import getaddresses, parseaddr, parsedate_to_datetime
from pathlib import Path

from resolveflow.errors import InvalidInput, Unavailable
from resolveflow.mail.bounds import BoundExceeded, MailBounds, UnreadableMessage, parse_bytes
from resolveflow.mail.domain.message import MailMessage
from resolveflow.mail.files import raw_messages
from resolveflow.retrieval.extraction import ExtractionLimits, extract
from resolveflow.retrieval.loaders import HTML, UnreadableDocument, load_document

MAX_TEXT_CHARS = 100_000  # the readable body kept (the chunker indexes ~75 kB)
# A larger HTML body is converted in an extraction worker (a deadline): 64 KB of dense tags
# takes ~1 s in process, and most mail's HTML is smaller.
INLINE_HTML_BYTES = 64 * 1024
MAX_MESSAGE_ID_CHARS = 300  # what a document's external id holds

_ANGLE_ID = re.compile(r"<([^<>\s]+)>")
_ON_WROTE = re.compile(r"^\s*On\b.*\bwrote:\s*$", re.IGNORECASE)
_ORIGINAL = re.compile(r"^\s*-{2,}\s*(Original Message|Forwarded message)\s*-{2,}\s*$", re.I)


@dataclass
class MailSource:
    """The messages at ``path`` (read lazily); ``skipped`` gathers (name, reason) as it goes."""

    path: Path
    bounds: MailBounds = field(default_factory=MailBounds)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.path.exists():
            raise InvalidInput(f"no such file or folder: {self.path}")
        if not (self.path.is_file() or self.path.is_dir()):
            raise InvalidInput(f"not a file or folder: {self.path}")

    @property
    def form(self) -> str:
        if self.path.is_dir():
            is_maildir = all((self.path / sub).is_dir() for sub in ("cur", "new"))
            return "maildir" if is_maildir else "eml-folder"
        with self.path.open("rb") as handle:
            return "mbox" if handle.read(5) == b"From " else "eml"

    def __iter__(self) -> Iterator[MailMessage]:
        limit = self.bounds.message_max_bytes
        for name, data in raw_messages(self.path, self.form, limit, self.skipped):
            try:
                yield parse_message(data, name, self.bounds)
            except UnreadableMessage as exc:
                self.skipped.append((name, str(exc)))


def parse_message(data: bytes, name: str, bounds: MailBounds | None = None) -> MailMessage:
    """One message's bytes as a ``MailMessage``; ``UnreadableMessage`` says why not."""
    bounds = bounds or MailBounds()
    limit = bounds.message_max_bytes
    if len(data) > limit:  # before anything copies or scans it
        raise UnreadableMessage(f"{name}: {len(data)} bytes is larger than {limit}")
    if not data.strip():
        raise UnreadableMessage(f"{name}: empty")
    try:
        return _message(parse_bytes(data, bounds), name, bounds)
    except BoundExceeded as exc:
        raise UnreadableMessage(f"{name}: {exc}") from None
    except UnreadableMessage:
        raise
    except Unavailable:  # no extractor free for an HTML body: try again later, not bad input
        raise
    except Exception as exc:  # whatever a broken message makes the parser raise
        raise UnreadableMessage(f"{name}: not a readable message ({type(exc).__name__})") from None


def _message(parsed: EmailMessage, name: str, bounds: MailBounds) -> MailMessage:
    message_id = _first_id(_header(parsed, "Message-ID"))
    if message_id is None:
        raise UnreadableMessage(f"{name}: no Message-ID")
    if len(message_id) > MAX_MESSAGE_ID_CHARS:
        raise UnreadableMessage(f"{name}: Message-ID longer than {MAX_MESSAGE_ID_CHARS} characters")
    from_name, from_address = parseaddr(_header(parsed, "From"))
    if "@" not in from_address:
        raise UnreadableMessage(f"{name}: no From address")
    references = _ids(_header(parsed, "References"))
    return MailMessage(
        message_id=message_id,
        from_address=from_address.strip().lower(),
        from_name=_clean(from_name).strip() or None,
        to=_addresses(parsed, "To"),
        cc=_addresses(parsed, "Cc"),
        subject=" ".join(_clean(_header(parsed, "Subject")).split()),
        date=_date(_header(parsed, "Date")),
        text=_body(parsed, name, bounds),
        in_reply_to=_first_id(_header(parsed, "In-Reply-To")),
        references=references,
    )


def _header(parsed: EmailMessage, name: str) -> str:
    try:
        value = parsed.get(name)
    except BoundExceeded:
        raise
    except Exception:  # a header the policy cannot parse counts as absent
        return ""
    return str(value) if value is not None else ""


def _first_id(value: str) -> str | None:
    found = _ids(value)
    if found:
        return found[0]
    bare = value.strip()
    return f"<{bare}>" if bare and "@" in bare and not any(c.isspace() for c in bare) else None


def _ids(value: str) -> tuple[str, ...]:
    """Message-IDs in order, each once, with their angle brackets."""
    return tuple(dict.fromkeys(f"<{m}>" for m in _ANGLE_ID.findall(value)))


def _addresses(parsed: EmailMessage, name: str) -> tuple[str, ...]:
    try:
        values = [str(v) for v in parsed.get_all(name, [])]
    except BoundExceeded:
        raise
    except Exception:
        return ()
    # A header repeated word for word is read once (each copy costs the address parser again).
    found = (a.strip().lower() for _, a in getaddresses(list(dict.fromkeys(values))))
    return tuple(dict.fromkeys(a for a in found if "@" in a))


def _date(value: str) -> datetime | None:
    if not value:
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _body(parsed: EmailMessage, name: str, bounds: MailBounds) -> str:
    """The text part, else the HTML part as text (the docs loader's conversion)."""
    part = parsed.get_body(preferencelist=("plain",))
    if part is not None:
        return _clean(_content(part))[:MAX_TEXT_CHARS]
    part = parsed.get_body(preferencelist=("html",))
    if part is None:
        return ""
    data = _content(part).encode("utf-8", "replace")  # a lone surrogate from a bad charset
    try:
        if len(data) <= INLINE_HTML_BYTES:
            loaded = load_document(name, data, HTML, max_bytes=bounds.message_max_bytes)
        else:  # BeautifulSoup spends ~25 s on 1 MB of dense tags: a worker with a deadline
            limits = ExtractionLimits(
                max_bytes=bounds.message_max_bytes, timeout_seconds=bounds.html_timeout_seconds
            )
            loaded = extract(name, data, HTML, limits)
    except UnreadableDocument:  # markup without text
        return ""
    except InvalidInput as exc:  # past the deadline or the worker's memory ceiling
        # the extractor's reason, without the name again or its own settings' names
        reason = str(exc).removeprefix(f"{name}: ").split(" (RESOLVEFLOW_")[0]
        raise UnreadableMessage(f"{name}: the HTML body: {reason}") from None
    return _clean(loaded.body)[:MAX_TEXT_CHARS]


def _content(part: Message) -> str:
    try:
        content = part.get_content()  # type: ignore[attr-defined]
    except (LookupError, UnicodeError, ValueError):  # an unknown or wrong charset
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    return content if isinstance(content, str) else ""


def _clean(text: str) -> str:
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def own_words(text: str) -> str:
    """A sent reply without the message it quotes ("On ... wrote:", "-----Original Message-----"
    and what follows, "> " lines) and without its "-- " signature: the team's own words."""
    kept: list[str] = []
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line in ("-- ", "--") or _ORIGINAL.match(line) or _ON_WROTE.match(line):
            break
        # "On Mon, 3 Jun 2024, Ann <ann@example.org>\nwrote:" wraps over two lines.
        nxt = lines[index + 1] if index + 1 < len(lines) else ""
        if line.lstrip().startswith("On ") and nxt.strip().endswith("wrote:"):
            break
        if line.lstrip().startswith(">"):
            continue
        kept.append(line)
    return "\n".join(kept).strip()
