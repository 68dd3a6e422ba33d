"""Markdown as GitHub shows it, made safe: issue text and proposed comments are untrusted.

markdown-it renders CommonMark plus tables and strikethrough (with raw HTML allowed, as on
GitHub); nh3 (the Rust ammonia sanitizer) then keeps only an allowlist of tags, attributes and
URL schemes close to GitHub's, drops comments (the executor's hidden marker included) and adds
``rel="nofollow noopener noreferrer"`` to links. Scripts, event handlers, ``javascript:`` URLs,
styles and forms never survive.

What the approver sees differs from GitHub in two ways, both so that nothing is hidden from them
and nothing reports on them:

- images are never loaded (an image in issue text is a tracking pixel in the approver's browser);
  each becomes a placeholder naming its address as text. The Content-Security-Policy's
  ``img-src 'self' data:`` (``web/app.py``) is the second line.
- every ``<details>`` is open.

``reveal`` shows a text exactly, with the characters that print nothing or reorder the line
(``domain.disclosure``) spelled out.
"""

from __future__ import annotations

import html
import logging
import re
from functools import cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

from resolveflow.gate.domain.disclosure import revealed, spell_out

logger = logging.getLogger(__name__)

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
# nh3 writes every attribute as name="value" with '"', '<' and '>' escaped, so a tag ends at
# the first '>'.
_IMG = re.compile(r"<img\b([^>]*)>")
_IMG_ATTRIBUTE = re.compile(r'([a-z-]+)="([^"]*)"')


@cache
def _parser(raw_html: bool = True) -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": raw_html, "linkify": False}).enable(
        ["table", "strikethrough"]
    )


def render(text: str | None, *, raw_html: bool = True) -> Markup:
    """Sanitized HTML for ``text``; safe to place in a page as is. Without ``raw_html``, HTML
    written in the text shows as the text it is (a piece of a page, whose tags may be cut)."""
    if not text:
        return Markup("")
    try:
        raw = _parser(raw_html).render(text[:MAX_RENDERED_CHARS])
    except Exception:  # markdown-it 4.3 raises IndexError on a few inputs ("> * <pre>\n> ")
        logger.warning("markdown could not be rendered; shown as text", exc_info=True)
        return Markup('<pre class="source unrendered">{}</pre>').format(text[:MAX_RENDERED_CHARS])
    clean = nh3.clean(
        raw,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_SCHEMES,
        link_rel="nofollow noopener noreferrer",
        strip_comments=True,
        set_tag_attribute_values={"details": {"open": ""}},
    )
    return Markup(_IMG.sub(_placeholder, clean))  # noqa: S704 - nh3's allowlist, images replaced


def _placeholder(match: re.Match[str]) -> str:
    """An image, not loaded: its description and address as text."""
    attributes = {
        name: html.unescape(value) for name, value in _IMG_ATTRIBUTE.findall(match.group(1))
    }
    alt = attributes.get("alt", "").strip()
    return str(
        Markup(
            '<span class="blocked-image" title="not loaded here: images can report who views'
            ' them">image{}{} not loaded: <code>{}</code></span>'
        ).format(" " if alt else "", f"“{alt}”" if alt else "", attributes.get("src", "(none)"))
    )


def reveal(text: str | None) -> Markup:
    """``text`` escaped, each invisible or reordering character shown as ⟨U+XXXX⟩."""
    if not text:
        return Markup("")
    return Markup("").join(
        Markup('<span class="hidden-char">{}</span>').format(spell_out(piece))
        if hidden
        else escape(piece)
        for piece, hidden in revealed(text[:MAX_RENDERED_CHARS])
    )
