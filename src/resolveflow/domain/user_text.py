"""Text a person sent, checked before it is stored: Postgres ``text`` and ``jsonb`` cannot hold
U+0000, and a lone surrogate (``\\ud800`` is valid JSON text, and a command-line argument with
undecodable bytes becomes one) cannot be encoded as UTF-8. Both would otherwise fail deep in the
database driver as a server error; here they are one line naming the field."""

from __future__ import annotations

import re
from collections.abc import Iterable

from resolveflow.errors import InvalidInput

# A Python str holds a surrogate pair as one code point, so any code point in this range is lone.
_SURROGATE = re.compile("[\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    if "\x00" in text:
        return "may not contain NUL characters (U+0000)"
    found = _SURROGATE.search(text)
    if found is not None:
        return f"is not valid Unicode text (a lone surrogate, U+{ord(found.group()):04X})"
    return None


def check_text(field: str, text: str | None) -> None:
    """Raise ``InvalidInput`` naming ``field`` if ``text`` cannot be stored."""
    reason = unstorable(text) if text is not None else None
    if reason is not None:
        raise InvalidInput(f"{field} {reason}")


def check_texts(field: str, texts: Iterable[str] | None) -> None:
    """``check_text`` for each of a list's items (``to[0]``, ``to[1]``...)."""
    for index, text in enumerate(texts or ()):
        check_text(f"{field}[{index}]", text)


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (for text read from a file, which
    is kept rather than refused)."""
    return _SURROGATE.sub("\ufffd", text)
