"""Which lines of a Markdown text are code, raw HTML or Markdown (CommonMark's block rules,
as far as they decide whether something is shown), and inline code spans and escapes masked."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
# Block quote and list markers, taken loosely (tabs too): seeing HTML where CommonMark would
# not only means fewer lines taken for code.
_CONTAINER = re.compile(r"^(?:[ \t]*>[ \t]?|[ \t]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))*")
_TAG_NAME = r"[A-Za-z][A-Za-z0-9-]*"
ATTRIBUTE = r"""(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)"""
OPEN_TAG = rf"<(?P<name>{_TAG_NAME})(?P<attrs>{ATTRIBUTE}*)\s*/?>"
_CLOSE_TAG = rf"</{_TAG_NAME}\s*>"
DROPPED_MARKUP = (
    r"<!--.*?(?:-->|\Z)|<\?.*?(?:\?>|\Z)|<![A-Za-z][^>]*(?:>|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)"
)
_INLINE_HTML = re.compile(
    rf"{DROPPED_MARKUP}|{OPEN_TAG}|{_CLOSE_TAG}|<[A-Za-z][A-Za-z0-9+.-]{{1,31}}:[^\s<>]*>",
    re.DOTALL,
)
_HTML_BLOCK_ENDS = (
    (
        re.compile(r"<(?:pre|script|style|textarea)(?:\s|>|$)", re.I),
        "</(?:pre|script|style|textarea)>",
    ),
    (re.compile(r"<!--"), "-->"),
    (re.compile(r"<\?"), r"\?>"),
    (re.compile(r"<![A-Za-z]"), ">"),
    (re.compile(r"<!\[CDATA\["), r"\]\]>"),
    # Types 6 and 7 (block tags, then any complete tag alone on its line) end at a blank line.
    # Type 7 may not interrupt a paragraph; it is taken anyway: a longer HTML block only means
    # fewer lines taken for code, so more is scanned.
    (re.compile(rf"(?:{OPEN_TAG}|{_CLOSE_TAG})\s*$|</?[A-Za-z][A-Za-z0-9-]*(?:\s|/?>|$)"), None),
)


@dataclass
class Segment:
    kind: str  # "code", "html" or "text"
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class _Blocks:
    """The block state, line by line. A fence counts only at 0-3 spaces, outside a block quote
    and outside an HTML block; it ends at its closing fence or at a non-blank line indented less
    than it (where a list item holding it would end)."""

    def __init__(self) -> None:
        self.fence: tuple[str, int, int] | None = None  # character, length, indent
        self.in_html = False
        self.html_end: str | None = None  # None: the HTML block ends at a blank line

    def classify(self, line: str) -> str:
        if self.fence is not None:
            char, length, indent = self.fence
            if re.match(rf"^ {{0,3}}{re.escape(char)}{{{length},}}\s*$", line):
                self.fence = None
                return "code"
            if not line.strip() or len(line) - len(line.lstrip(" ")) >= indent:
                return "code"
            self.fence = None
        if self.in_html:
            return self._html(line)
        opened = _FENCE.match(line)
        if opened and not (opened.group(2)[0] == "`" and "`" in opened.group(3)):
            self.fence = (opened.group(2)[0], len(opened.group(2)), len(opened.group(1)))
            return "code"
        return self._html(line) if self._opens_html(line) else "text"

    def _opens_html(self, line: str) -> bool:
        content = _CONTAINER.sub("", line, count=1).lstrip(" \t")
        for start, end in _HTML_BLOCK_ENDS:
            if start.match(content):
                self.in_html, self.html_end = True, end
                return True
        return False

    def _html(self, line: str) -> str:
        if self.html_end is None:
            self.in_html = bool(line.strip())  # types 6 and 7 end at a blank line
        elif re.search(self.html_end, line, re.IGNORECASE):
            self.in_html = False
            # The start was taken loosely (an indented "<pre>" is code to CommonMark), so the
            # line that ends it may itself open a block there ("</pre>" alone is type 7): take
            # it as opening one, so what follows is scanned rather than taken for code.
            self._opens_html(line)
        return "html"


def segments(text: str) -> list[Segment]:
    """Consecutive lines of one kind."""
    state = _Blocks()
    found: list[Segment] = []
    for line in text.split("\n"):
        kind = state.classify(line)
        if found and found[-1].kind == kind:
            found[-1].lines.append(line)
        else:
            found.append(Segment(kind, [line]))
    return found


# --- inline: backslash escapes are masked, then markup is looked for -------------------------

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def masked(text: str) -> str:
    """``text`` with backslash escapes blanked (same length), outside raw HTML and autolinks,
    where a backslash is a backslash.

    Inline code spans are left as they are, so scanned: where one begins depends on the whole
    inline grammar (an earlier link destination, tag or table cell can take its backtick), and
    a wrong guess would mask a real comment. A comment inside inline code is rare; reporting it
    only costs the approver a look."""
    out = list(text)
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in _PUNCTUATION:
            out[i] = out[i + 1] = " "
            i += 2
        elif text[i] == "<" and (tag := _INLINE_HTML.match(text, i)):
            i = tag.end()
        else:
            i += 1
    return "".join(out)
