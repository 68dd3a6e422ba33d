"""The kinds of hidden or misleading content, and one finding of one of them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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
    Hidden.DROPPED_HTML: "HTML whose content is not displayed (script, style, svg, math, template)",
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
