"""Which lines of a Markdown text are code, raw HTML or Markdown (CommonMark's block rules,
as far as they decide whether something is shown), and inline code spans and escapes masked."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_CONTAINER = re.compile(r"^(?: {0,3}>[ \t]?| {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))*")
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
        content = _CONTAINER.sub("", line, count=1).lstrip(" ")
        for start, end in _HTML_BLOCK_ENDS:
            if start.match(content):
                self.in_html, self.html_end = True, end
                return self._html(line)
        return "text"

    def _html(self, line: str) -> str:
        if self.html_end is None:
            self.in_html = bool(line.strip())  # types 6 and 7 end at a blank line
        elif re.search(self.html_end, line, re.IGNORECASE):
            self.in_html = False
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


# --- inline: code spans and escapes are masked, then markup is looked for --------------------

# A code span stays inside its paragraph; a line that may start another block (a blank line, a
# list item, a quote, a heading, a fence, HTML, a table row) ends it, so its backticks are text.
_NEW_BLOCK = re.compile(r"\n[ \t]*(?:$|[-+*>#=|<]|\d{1,9}[.)]|`{3}|~{3})", re.MULTILINE)
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def masked(text: str) -> str:
    """``text`` with code spans and backslash escapes blanked (same length, same newlines), so
    what is left is Markdown and raw HTML. HTML tags and autolinks win over a backtick that
    starts inside them, as in CommonMark. Where unsure, a span is left unmasked: scanned."""
    out = list(text)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in _PUNCTUATION:
            out[i] = out[i + 1] = " "
            i += 2
        elif ch == "`":
            run = 1
            while i + run < len(text) and text[i + run] == "`":
                run += 1
            close = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(text, i + run)
            if close is None or _NEW_BLOCK.search(text, i, close.start()):
                i += run
                continue
            for j in range(i, close.end()):
                out[j] = out[j] if text[j] == "\n" else " "
            i = close.end()
        elif ch == "<" and (tag := _INLINE_HTML.match(text, i)):
            i = tag.end()
        else:
            i += 1
    return "".join(out)
