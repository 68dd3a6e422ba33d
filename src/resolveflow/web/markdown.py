"""Markdown as GitHub shows it, made safe: issue text and proposed comments are untrusted.

markdown-it renders CommonMark plus tables and strikethrough (with raw HTML allowed, as on
GitHub); nh3 (the Rust ammonia sanitizer) then keeps only an allowlist of tags, attributes and
URL schemes close to GitHub's, drops comments (the executor's hidden marker included) and adds
``rel="nofollow noopener noreferrer"`` to links. Scripts, event handlers, ``javascript:`` URLs,
styles and forms never survive.
"""

from __future__ import annotations

from functools import cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

_TAGS = {
    "a", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p",
    "pre", "q", "s", "samp", "strike", "strong", "sub", "summary", "sup", "table", "tbody",
    "td", "tfoot", "th", "thead", "tr", "tt", "ul", "var",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"align"},
    "th": {"align"},
    "ol": {"start"},
    "code": {"class"},
}
_SCHEMES = {"http", "https", "mailto"}
MAX_RENDERED_CHARS = 200_000


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True, "linkify": False}).enable(
        ["table", "strikethrough"]
    )


def render(text: str | None) -> Markup:
    """Sanitized HTML for ``text``; safe to place in a page as is."""
    if not text:
        return Markup("")
    raw = _parser().render(text[:MAX_RENDERED_CHARS])
    clean = nh3.clean(
        raw,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_SCHEMES,
        link_rel="nofollow noopener noreferrer",
        strip_comments=True,
    )
    return Markup(clean)  # noqa: S704 - nh3 output is the sanitized allowlist above
