"""What a rendering hides from the person who approves it: a pure scan of an action's texts.

The approver reads a rendering, GitHub posts the source. Whatever the source holds that the
rendering does not show (HTML comments, a collapsed ``<details>``, a link whose text names another
address than its target, bidirectional controls, zero-width characters, ...) is reported here as a
``Finding``: its kind, the field it is in and a short excerpt, invisible characters spelled out.

The scanner follows CommonMark where it matters (fenced code, HTML blocks, code spans, backslash
escapes) and errs towards reporting: an HTML comment inside a fenced code block is shown as text
by GitHub and is not reported, but one in an indented code block, or in code inside a block quote
or a deeply indented list item, is (those are rare; a missed hidden comment would not be).
Invisible characters are reported wherever they are, code included.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

from resolveflow.domain.actions import AnyAction, GitHubIssueAction


class Hidden(StrEnum):
    HTML_COMMENT = "html_comment"
    COLLAPSED_DETAILS = "collapsed_details"
    MISLEADING_LINK = "misleading_link"
    BIDI_CONTROL = "bidi_control"
    INVISIBLE_CHARACTER = "invisible_character"
    DROPPED_HTML = "dropped_html"
    UNUSED_REFERENCE = "unused_reference"
    IMAGE = "image"

    @property
    def explanation(self) -> str:
        return _EXPLANATIONS[self]


_EXPLANATIONS = {
    Hidden.HTML_COMMENT: "an HTML comment (or other markup GitHub drops): posted, shown to nobody",
    Hidden.COLLAPSED_DETAILS: "a collapsed <details> section: GitHub shows only its summary "
    "until someone clicks it (this page opens it)",
    Hidden.MISLEADING_LINK: "a link whose text shows one address while it leads to another",
    Hidden.BIDI_CONTROL: "bidirectional control characters: the text can display in another "
    "order than the one it is stored and posted in",
    Hidden.INVISIBLE_CHARACTER: "zero-width or other invisible characters",
    Hidden.DROPPED_HTML: "HTML whose content is not displayed (script, style, svg, math, "
    "template)",
    Hidden.UNUSED_REFERENCE: "a link reference definition nothing uses: posted, never shown "
    "(a known way to hide a comment)",
    Hidden.IMAGE: "an image this page does not load (GitHub will show it): its content was not "
    "reviewed here",
}


@dataclass(frozen=True)
class Finding:
    kind: Hidden
    field: str  # comment, title, body, labels, assignees
    excerpt: str


MAX_PER_KIND = 10  # per field: enough to act on, bounded for a hostile text
EXCERPT_CHARS = 80

# --- invisible characters --------------------------------------------------------------------

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
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


def _excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    shown = "".join(spell_out(p) if hidden else p for p, hidden in revealed(text))
    shown = " ".join(shown.split())
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


# --- blocks: which lines are code, raw HTML or Markdown text ---------------------------------

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_CONTAINER = re.compile(r"^(?: {0,3}>[ \t]?| {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))*")
_TAG_NAME = r"[A-Za-z][A-Za-z0-9-]*"
_ATTRIBUTE = r"""(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)"""
_OPEN_TAG = rf"<(?P<name>{_TAG_NAME})(?P<attrs>{_ATTRIBUTE}*)\s*/?>"
_CLOSE_TAG = rf"</{_TAG_NAME}\s*>"
_DROPPED_MARKUP = r"<!--.*?(?:-->|\Z)|<\?.*?(?:\?>|\Z)|<![A-Za-z][^>]*(?:>|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)"
_INLINE_HTML = re.compile(
    rf"{_DROPPED_MARKUP}|{_OPEN_TAG}|{_CLOSE_TAG}|<[A-Za-z][A-Za-z0-9+.-]{{1,31}}:[^\s<>]*>",
    re.DOTALL,
)
_HTML_BLOCK_ENDS = (
    (re.compile(r"<(?:pre|script|style|textarea)(?:\s|>|$)", re.I), "</(?:pre|script|style|textarea)>"),
    (re.compile(r"<!--"), "-->"),
    (re.compile(r"<\?"), r"\?>"),
    (re.compile(r"<![A-Za-z]"), ">"),
    (re.compile(r"<!\[CDATA\["), r"\]\]>"),
    # Types 6 and 7 (block tags, then any complete tag alone on its line) end at a blank line.
    # Type 7 may not interrupt a paragraph; it is taken anyway: a longer HTML block only means
    # fewer lines taken for code, so more is scanned.
    (re.compile(rf"(?:{_OPEN_TAG}|{_CLOSE_TAG})\s*$|</?[A-Za-z][A-Za-z0-9-]*(?:\s|/?>|$)"), None),
)


@dataclass
class _Segment:
    kind: str  # "code", "html" or "text"
    text: str


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
        content = line[len(_CONTAINER.match(line).group(0)) :].lstrip(" ")  # type: ignore[union-attr]
        for start, end in _HTML_BLOCK_ENDS:
            if start.match(content):
                self.in_html, self.html_end = True, end
                return self._html(line)
        return "text"

    def _html(self, line: str) -> str:
        if self.html_end is None and not line.strip():
            self.in_html = False
        elif self.html_end is not None and re.search(self.html_end, line, re.IGNORECASE):
            self.in_html = False
        return "html"


def _segments(text: str) -> list[_Segment]:
    """Consecutive lines of one kind."""
    state = _Blocks()
    segments: list[_Segment] = []
    for line in text.split("\n"):
        kind = state.classify(line)
        if segments and segments[-1].kind == kind:
            segments[-1].text += "\n" + line
        else:
            segments.append(_Segment(kind, line))
    return segments


# --- inline: code spans and escapes are masked, then markup is looked for --------------------

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _masked(text: str) -> str:
    """``text`` with code spans and backslash escapes blanked (same length, same newlines), so
    what is left is Markdown and raw HTML. HTML tags and autolinks win over a backtick that
    starts inside them, as in CommonMark; a code span does not cross a blank line."""
    out = list(text)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in _PUNCTUATION:
            out[i] = out[i + 1] = " "
            i += 2
        elif ch == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            close = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(text, i + run)
            if close is None or re.search(r"\n[ \t]*\n", text[i : close.start()]):
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


_DROPPED = re.compile(_DROPPED_MARKUP, re.DOTALL)
_TAG = re.compile(_OPEN_TAG, re.DOTALL)
_DETAILS_SUMMARY = re.compile(r"\s*<summary\b[^>]*>(.*?)(?:</summary\s*>|\Z)", re.DOTALL | re.I)
_DROPPED_TAGS = frozenset({"script", "style", "svg", "math", "template"})
_ANCHOR = re.compile(rf"<a\b(?P<attrs>{_ATTRIBUTE}*)\s*>(?P<inner>.*?)</a\s*>", re.DOTALL | re.I)


def _attribute(attrs: str, name: str) -> str | None:
    found = re.search(
        rf"""\b{name}\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", attrs, re.IGNORECASE
    )
    if found is None:
        return None
    return _entities(next(group for group in found.groups() if group is not None))


def _entities(text: str) -> str:
    """Numeric character references and the few named ones that matter for addresses."""
    named = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'", "period": ".", "colon": ":", "sol": "/"}

    def one(match: re.Match[str]) -> str:
        body = match.group(1)
        if body.startswith(("#x", "#X")):
            return chr(int(body[2:], 16)) if int(body[2:], 16) < 0x110000 else match.group(0)
        if body.startswith("#"):
            return chr(int(body[1:])) if int(body[1:]) < 0x110000 else match.group(0)
        return named.get(body.lower(), match.group(0))

    return re.sub(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});", one, text)


def _visible(markup: str) -> str:
    """Roughly the text a reader sees of some inline Markdown and HTML."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)|<[^>]*>|[*_~`]", "", markup)
    return " ".join(_entities(text).split())


def _markup(found: list[Finding], field: str, masked: str) -> None:
    """Comments, dropped HTML, collapsed details, images and HTML links in ``masked``."""
    for match in _DROPPED.finditer(masked):
        found.append(Finding(Hidden.HTML_COMMENT, field, _excerpt(match.group(0))))
    for tag in _TAG.finditer(masked):
        name = tag.group("name").lower()
        if name in _DROPPED_TAGS:
            found.append(Finding(Hidden.DROPPED_HTML, field, _excerpt(masked[tag.start() :])))
        elif name == "details" and _attribute(tag.group("attrs") + " ", "open") is None:
            if not re.search(r"\bopen\b", tag.group("attrs"), re.IGNORECASE):
                summary = _DETAILS_SUMMARY.match(masked, tag.end())
                shown = _visible(summary.group(1)) if summary else masked[tag.end() :]
                found.append(Finding(Hidden.COLLAPSED_DETAILS, field, _excerpt(shown)))
        elif name == "img":
            source = _attribute(tag.group("attrs"), "src") or "(no address)"
            found.append(Finding(Hidden.IMAGE, field, _excerpt(source)))
    for anchor in _ANCHOR.finditer(masked):
        _check_link(found, field, _visible(anchor.group("inner")), _attribute(anchor.group("attrs"), "href"))


# --- links: the address a text shows against the one it leads to ----------------------------

# Link text "counts as an address" with a scheme, with "www.", or ending in one of these: many
# country codes are also file extensions (README.md, setup.py), which are not addresses.
_TLDS = frozenset(
    "com org net io dev app edu gov info ai co me xyz cloud biz uk de fr eu jp cn ru ca au us nl "
    "ch ly gl gg tv".split()
)
_ADDRESS = re.compile(
    r"^(?:(?P<scheme>[a-z][a-z0-9+.-]*)://)?(?:[^@/\s]*@)?(?P<host>(?:[a-z0-9-]+\.)+(?P<tld>[a-z]{2,63}))"
    r"\.?(?::\d+)?(?P<rest>[/?#]\S*)?$",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"^(?:mailto:)?([^@\s/]+@[^@\s/]+\.[a-z]{2,63})$", re.IGNORECASE)


def _site(host: str) -> str:
    host = host.lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


def _shown_address(text: str) -> tuple[str, str] | None:
    """(site, path) of a link text that reads as a web address, else None."""
    match = _ADDRESS.match(text.strip("<> "))
    if match is None:
        return None
    if not (match.group("scheme") or text.lower().startswith("www.") or match.group("tld").lower() in _TLDS):
        return None
    return _site(match.group("host")), (match.group("rest") or "").split("#")[0].rstrip("/")


def _target(href: str) -> tuple[str, str]:
    """(site, path) of a link target; a relative or non-web target has no site."""
    match = re.match(r"^[a-z][a-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#:]*)(?::\d+)?([^#]*)", href.strip(), re.I)
    if match is None:
        return "", href
    return _site(match.group(1)), match.group(2).rstrip("/")


def _check_link(found: list[Finding], field: str, text: str, href: str | None) -> None:
    if href is None:
        return
    shown_email, target_email = _EMAIL.match(text.strip("<> ")), _EMAIL.match(href.strip())
    if shown_email:
        misleading = target_email is None or shown_email.group(1).lower() != target_email.group(1).lower()
    elif (shown := _shown_address(text)) is not None:
        site, path = _target(href)
        misleading = site != shown[0] or (shown[1] != "" and shown[1] != path)
    else:
        return
    if misleading:
        found.append(Finding(Hidden.MISLEADING_LINK, field, _excerpt(f"{text} → {href}")))


_DEFINITION = re.compile(r"^ {0,3}\[((?:[^\]\\\n]|\\.)+)\]:[ \t]*(<[^>\n]*>|\S+)[^\n]*$", re.MULTILINE)


def _label(text: str) -> str:
    return " ".join(text.split()).casefold()


def _closing_bracket(text: str, start: int) -> int | None:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i
    return None


def _destination(text: str, start: int) -> str | None:
    """The target of an inline link whose ``(`` is at ``start``."""
    match = re.compile(r"\(\s*(?:<([^<>\n]*)>|((?:[^\s()]|\([^\s()]*\))*))").match(text, start)
    return None if match is None else (match.group(1) if match.group(1) is not None else match.group(2))


def _links(found: list[Finding], field: str, masked: str) -> None:
    """Inline and reference links and images in Markdown; definitions nothing refers to."""
    definitions = {_label(m.group(1)): (m, m.group(2).strip("<>")) for m in _DEFINITION.finditer(masked)}
    body = _DEFINITION.sub(lambda m: " " * len(m.group(0)), masked)
    used: set[str] = set()
    for start in (m.start() for m in re.finditer(r"\[", body)):
        close = _closing_bracket(body, start)
        if close is None:
            continue
        text, after = body[start + 1 : close], body[close + 1 : close + 2]
        label = _label(text)
        if after == "(":
            href = _destination(body, close + 1)
        else:
            reference = re.compile(r"\[((?:[^\]\\\n]|\\.)*)\]").match(body, close + 1)
            label = _label(reference.group(1)) if reference and reference.group(1).strip() else label
            href = definitions[label][1] if label in definitions else None
            used.add(label)
        if start > 0 and body[start - 1] == "!":
            found.append(Finding(Hidden.IMAGE, field, _excerpt(href or text)))
        else:
            _check_link(found, field, _visible(text), href)
    for label, (match, href) in definitions.items():
        if label not in used:
            found.append(Finding(Hidden.UNUSED_REFERENCE, field, _excerpt(match.group(0))))


# --- the scan ----------------------------------------------------------------------------------


def scan_markdown(text: str, field: str) -> list[Finding]:
    """Everything in a Markdown text (a comment, an issue body) its rendering hides."""
    found: list[Finding] = []
    for segment in _segments(text):
        if segment.kind != "code":
            masked = _masked(segment.text) if segment.kind == "text" else segment.text
            _markup(found, field, masked)
            _links(found, field, masked)
    return _capped(found + scan_plain(text, field))


def scan_plain(text: str, field: str) -> list[Finding]:
    """Invisible and reordering characters in any text (a title, a label, a Markdown source)."""
    found = [
        Finding(kind, field, _excerpt(text[max(0, i - 30) : i + 30]))
        for i, kind in invisible_positions(text)
    ]
    return _capped(found)


def _capped(found: list[Finding]) -> list[Finding]:
    counts: dict[tuple[Hidden, str], int] = {}
    kept = []
    for finding in found:
        key = (finding.kind, finding.field)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] <= MAX_PER_KIND:
            kept.append(finding)
    return kept


def scan_action(action: AnyAction) -> tuple[Finding, ...]:
    """What the person approving ``action`` would not see in its rendering, field by field."""
    found: list[Finding] = []
    if isinstance(action, GitHubIssueAction):
        found += scan_markdown(action.comment or "", "comment")
    else:
        found += scan_plain(action.title, "title") + scan_markdown(action.body, "body")
        for assignee in action.assignees:
            found += scan_plain(assignee, "assignees")
    for label in action.labels:
        found += scan_plain(label, "labels")
    return tuple(_capped(found))
