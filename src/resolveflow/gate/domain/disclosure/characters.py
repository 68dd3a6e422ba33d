"""Characters that print nothing or reorder what is printed, and how to spell them out."""

from __future__ import annotations

import re
import unicodedata

from resolveflow.gate.domain.disclosure.kinds import EXCERPT_CHARS, Hidden

BIDI_CONTROLS = frozenset(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
)
_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u034f\u2800\u180b\u180c\u180d\u180e")
_JOINERS = frozenset("\u200c\u200d")  # needed inside emoji sequences and some scripts
_VARIATION = frozenset("\ufe0e\ufe0f")
_FLAG_TAGS = re.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")  # subdivision flags


def _is_variation_selector(ch: str) -> bool:
    return "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef"


def _is_invisible(ch: str) -> bool:
    """Characters that print nothing (bidirectional controls are reported on their own)."""
    if ch in BIDI_CONTROLS:
        return False
    category = unicodedata.category(ch)
    return (
        category == "Cf"
        or (category == "Cc" and ch not in "\t\n\r")
        or ch in _BLANK_LOOKING
        or _is_variation_selector(ch)
    )


def _in_a_sequence(text: str, i: int) -> bool:
    """A joiner or variation selector where writing systems and emoji need one: between two
    non-ASCII characters (a joiner) or after one (a selector), never between ASCII letters."""
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if text[i] in _JOINERS:
        return before > "\x7f" and after > "\x7f" and not before.isspace()
    if text[i] in _VARIATION:
        return before > "\x7f" or (before != "" and before in "0123456789#*")
    return False


def invisible_positions(text: str) -> list[tuple[int, Hidden]]:
    """Where ``text`` holds a character that prints nothing or reorders what is printed."""
    allowed = {i for m in _FLAG_TAGS.finditer(text) for i in range(m.start() + 1, m.end())}
    found = []
    for i, ch in enumerate(text):
        if ch in BIDI_CONTROLS:
            found.append((i, Hidden.BIDI_CONTROL))
        elif _is_invisible(ch) and i not in allowed and not _in_a_sequence(text, i):
            found.append((i, Hidden.INVISIBLE_CHARACTER))
    return found


def spell_out(ch: str) -> str:
    return f"⟨U+{ord(ch):04X}⟩"


def revealed(text: str) -> list[tuple[str, bool]]:
    """``text`` in pieces; a piece flagged True is one hidden character, to show spelled out."""
    pieces: list[tuple[str, bool]] = []
    start = 0
    for i, _ in invisible_positions(text):
        if i > start:
            pieces.append((text[start:i], False))
        pieces.append((text[i], True))
        start = i + 1
    if start < len(text):
        pieces.append((text[start:], False))
    return pieces


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    shown = "".join(spell_out(p) if hidden else p for p, hidden in revealed(text))
    shown = " ".join(shown.split())
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
