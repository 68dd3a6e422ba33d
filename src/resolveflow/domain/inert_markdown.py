"""Untrusted text placed in Markdown that a forge renders: made inert, so that it renders as
itself. Pure.

Prose goes through ``inert``: HTML, link and image syntax, emphasis and table characters become
numeric entities; URLs are defanged so nothing autolinks; ``@`` is followed by a zero-width joiner
so nobody is mentioned. Paths, names and hashes go through ``code``: a code span whose backtick
run is longer than any inside it, so it cannot be closed early and no fence can open. Refine's
enrichment and Ask's coverage-gap issue use both; ``cli/terminal_text.py`` undoes the marks for a
terminal.
"""

from __future__ import annotations

import re

from resolveflow.errors import one_line

ZWJ = "\u200d"

_UNSAFE = re.compile(r"[\[\]<>`|\\*_#!~&]")  # no "(": without "]" it links nothing
_SCHEME = re.compile(r"\b([a-z][a-z0-9+.-]{1,15}):(?=//)", re.IGNORECASE)
_WWW = re.compile(r"\bwww\.", re.IGNORECASE)
_TICKS = re.compile(r"`+")


def inert(text: str, limit: int) -> str:
    """Untrusted text as one line of plain Markdown text that renders as itself."""
    line = _UNSAFE.sub(lambda m: f"&#{ord(m.group())};", one_line(text, limit))
    line = _WWW.sub("www[.]", _SCHEME.sub(r"\1[:]", line))
    return line.replace("@", "@" + ZWJ)


def backtick_run(text: str) -> int:
    """The longest run of backticks in ``text``: a code span or fence around it needs one more."""
    return max((len(m.group()) for m in _TICKS.finditer(text)), default=0)


def code(text: str, limit: int = 200) -> str:
    """Untrusted text as one code span that nothing inside can close."""
    line = one_line(text, limit).replace("@", "@" + ZWJ)
    run = backtick_run(line)
    ticks = "`" * (run + 1)
    return f"{ticks} {line} {ticks}" if run else f"{ticks}{line}{ticks}"
