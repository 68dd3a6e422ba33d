"""Untrusted text placed in Markdown that a forge renders: made inert, so that it renders as
itself. Pure.

Everything a product posts goes through this module; there is no other escaping. Prose goes
through ``inert``: HTML, link and image syntax, emphasis, strike-through, entity and table
characters become numeric entities; URLs are defanged so nothing autolinks; ``@`` is followed by
a zero-width joiner so nobody is mentioned (an entity would not do: GitHub finds mentions in the
rendered text, where ``&#64;`` is an ``@`` again). A title goes through ``inert_title``: the same,
with its code names set as code spans. Paths, names and hashes go through ``code``: a code span
whose backtick run is longer than any inside it, so it cannot be closed early and no fence can
open. A link's target is only ever a URL ``safe_url`` lets through (from our own index or a
forge's API, never from a model). Triage's comments, Refine's enrichment, Ask's coverage-gap issue
and prefilled issue use them; ``cli/terminal_text.py`` undoes the marks for a terminal.
"""

from __future__ import annotations

import re

from resolveflow.errors import one_line

ZWJ = "\u200d"

_UNSAFE = re.compile(r"[\[\]<>`|\\*_#!~&]")  # no "(": without "]" it links nothing
_SCHEME = re.compile(r"\b([a-z][a-z0-9+.-]{1,15}):(?=//)", re.IGNORECASE)
_WWW = re.compile(r"\bwww\.", re.IGNORECASE)
_TICKS = re.compile(r"`+")
_SPACE_RUN = re.compile(r"\s+")
_SAFE_URL = re.compile(r"https?://[^\s<>()\"'\[\]`]+")
# A name from code (``test_render_timeout``, ``load_dataset``): letters, digits and underscores
# only, so it is safe inside a code span.
_CODE_NAME = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]\b")


def inert(text: str, limit: int) -> str:
    """Untrusted text as one line of plain Markdown text that renders as itself."""
    return _inert(one_line(text, limit))


def _inert(line: str) -> str:
    line = _UNSAFE.sub(lambda m: f"&#{ord(m.group())};", line)
    line = _WWW.sub("www[.]", _SCHEME.sub(r"\1[:]", line))
    return line.replace("@", "@" + ZWJ)


def inert_title(text: str, limit: int) -> str:
    """An untrusted title made inert like ``inert``, its code names (``load_dataset``) set as
    code spans, where they read as code instead of as escaped prose."""
    cleaned = one_line(text, limit)
    pieces: list[str] = []
    last = 0
    for name in _CODE_NAME.finditer(cleaned):
        pieces.append(_inert(cleaned[last : name.start()]))
        pieces.append(f"`{name.group()}`")
        last = name.end()
    pieces.append(_inert(cleaned[last:]))
    return "".join(pieces)


def inert_spans(pieces: list[tuple[str, bool]], limit: int) -> str:
    """Untrusted text in pieces (``reading_text.code_spans``: text, and whether it is a code
    span's content) as one line: each code span through ``code``, the rest made inert, at most
    ``limit`` characters of text in all."""
    out: list[str] = []
    left = limit
    for text, is_code in pieces:
        if left <= 0:
            break
        piece = " ".join(text.split()) if is_code else _SPACE_RUN.sub(" ", text)
        if len(piece) > left:
            piece = piece[: left - 1] + "…"
        left -= len(piece)
        out.append(code(piece, limit) if is_code and piece else _inert(piece))
    return "".join(out).strip()


def safe_url(url: str | None) -> str | None:
    """``url`` when it may be a link's target: http(s), nothing that could end the link early or
    open markup (spaces, quotes, brackets, parentheses, angle brackets, backticks)."""
    return url if url and _SAFE_URL.fullmatch(url) else None


def link(text: str, url: str | None) -> str:
    """``[text](url)`` when the URL is safe, else ``text`` alone (``text`` is already inert)."""
    safe = safe_url(url)
    return f"[{text}]({safe})" if safe else text


def backtick_run(text: str) -> int:
    """The longest run of backticks in ``text``: a code span or fence around it needs one more."""
    return max((len(m.group()) for m in _TICKS.finditer(text)), default=0)


def code(text: str, limit: int = 200) -> str:
    """Untrusted text as one code span that nothing inside can close."""
    line = one_line(text, limit).replace("@", "@" + ZWJ)
    run = backtick_run(line)
    ticks = "`" * (run + 1)
    return f"{ticks} {line} {ticks}" if run else f"{ticks}{line}{ticks}"
