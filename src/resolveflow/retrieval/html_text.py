"""HTML (an exported wiki page) to Markdown-like text, with the nesting depth bounded.

BeautifulSoup parses leniently (broken markup still gives its text); scripts, styles, navigation,
headers, footers and forms are dropped; the main content (``<main>``, ``<article>``,
``role=main``, else ``<body>``) is converted to Markdown by markdownify, so headings, lists, code
blocks and tables stay readable and the chunker can follow its headings.

markdownify walks the tree by recursion (three Python frames an element) and looks up every
element's ancestors, so 30,000 nested ``<td>`` raised RecursionError and a 2 MB nest of ``<div>``
took 19 s first: the parser refuses to open an element deeper than ``max_depth`` the moment it
would, before the rest of the file is read.
"""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup, Tag
from markdownify import ATX, MarkdownConverter

from resolveflow.retrieval.document_bounds import TextLimits, UnreadableDocument

# Never content: the page's chrome, or active content that is not text at all.
_DROPPED_TAGS = (
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "button", "iframe", "svg", "canvas", "object", "embed", "link", "meta",
)  # fmt: skip


# What a heading's permalink shows when it is only a mark (Sphinx ¶, Docusaurus #, MkDocs §).
_PERMALINK_MARKS = frozenset({"", "¶", "#", "§", "🔗", "⚓"})


class _TooDeep(UnreadableDocument):
    """Raised from inside the parser (caught, reported with the path and the bound)."""


class _BoundedSoup(BeautifulSoup):
    """BeautifulSoup that refuses to open an element ``max_depth`` elements deep."""

    def __init__(self, markup: bytes, max_depth: int) -> None:
        self._max_depth = max_depth  # set before parsing starts: __init__ parses
        super().__init__(markup, "html.parser")

    def pushTag(self, tag: Tag) -> None:
        # tagStack holds the document root and every open element.
        if len(self.tagStack) > self._max_depth:
            raise _TooDeep
        super().pushTag(tag)


def html_text(path: str, data: bytes, limits: TextLimits) -> tuple[str, str]:
    """The page's title and its main content as Markdown."""
    if b"\x00" in data[:8192]:
        raise UnreadableDocument(f"{path}: binary content, not HTML")
    try:
        soup = _BoundedSoup(data, limits.max_depth)
    except _TooDeep:
        raise _too_deep(path, limits) from None
    page_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(_DROPPED_TAGS):
        tag.decompose()
    main = soup.find("main") or soup.find("article") or soup.find(True, attrs={"role": "main"})
    root: Any = main or soup.body or soup
    _unlink_anchors(root)
    _definitions_as_sections(soup, root)
    heading = root.find("h1")
    title = heading.get_text(" ", strip=True) if heading else page_title
    converter = MarkdownConverter(
        heading_style=ATX,
        bullets="-",
        # Escapes would put backslashes into words (max\_connections) that search must match.
        escape_asterisks=False,
        escape_underscores=False,
        escape_misc=False,
    )
    try:
        body = str(converter.convert_soup(root))
    except RecursionError:  # the depth bound keeps it away; this is a second guard
        raise _too_deep(path, limits) from None
    return title, body


def _unlink_anchors(root: Any) -> None:
    """Links to a place on the same page (a heading's own anchor, as mdBook, Sphinx and most
    site generators write them) lead nowhere once the page is quoted elsewhere: their text is
    kept, the link dropped; a permalink mark that is only a symbol (Sphinx's ``¶``) is dropped
    whole, so a quoted heading reads as the heading."""
    for link in root.find_all("a", href=True):
        # A link inside one dropped just before went with it (links nest in broken markup).
        if link.decomposed or link.parent is None:
            continue
        if not str(link.get("href", "")).startswith("#"):
            continue
        if link.get_text(strip=True) in _PERMALINK_MARKS:
            link.decompose()
        else:
            link.unwrap()


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_MADE = "data-definition"  # marks the headings made here


def _definitions_as_sections(soup: Any, root: Any) -> None:
    """A reference's definition list (Sphinx's ``<dl class="py class">``, a command's options
    as mdBook writes them) holds one entry per name: each entry becomes its own section, headed
    by the name one level below the heading it sits under, its full term (a signature, an
    option with its argument) first in its body, so a passage is one definition with its
    description and its heading path names it. Only lists whose terms carry an anchor (``id``)
    are references; a plain glossary-like list stays a list."""
    # Outermost lists only: nested ones are read with their entry.
    outermost = [dl for dl in root.find_all("dl") if dl.find_parent("dl") is None]
    for listing in filter(_is_reference, outermost):
        previous = listing.find_previous(_page_heading)
        level = int(previous.name[1]) + 1 if previous is not None else 2
        listing.replace_with(_definition_sections(soup, listing, level))


def _page_heading(tag: Any) -> bool:
    """A heading of the page itself, not one made for an earlier definition."""
    return tag.name in _HEADINGS and not tag.has_attr(_MADE)


def _is_reference(listing: Any) -> bool:
    return any(term.get("id") for term in listing.find_all("dt", recursive=False))


def _definition_sections(soup: Any, listing: Any, level: int) -> Any:
    """The entries of ``listing`` as headings and bodies at ``level`` (nested lists below)."""
    out = soup.new_tag("div")
    terms: list[Any] = []
    for item in listing.find_all(["dt", "dd"], recursive=False):
        if item.name == "dt":
            terms.append(item)
            continue
        out.extend(_entry(soup, terms, min(level, 6)))
        nested = [dl for dl in item.find_all("dl") if dl.find_parent("dl") is listing]
        for inner in filter(_is_reference, nested):
            inner.replace_with(_definition_sections(soup, inner, level + 1))
        out.extend(list(item.children))
        terms = []
    return out


def _entry(soup: Any, terms: list[Any], level: int) -> list[Any]:
    """An entry's heading (its name: Sphinx's anchor such as ``csv.DictReader``, else the
    terms' text) and its terms as a paragraph."""
    names = [_term_name(term) for term in terms]
    heading = soup.new_tag(f"h{level}", attrs={_MADE: ""})
    heading.string = ", ".join(name for name in names if name) or "definition"
    made = [heading]
    if all(name == _term_text(term) for name, term in zip(names, terms, strict=True)):
        return made  # the heading already reads as the terms (a command's options)
    for term in terms:
        paragraph = soup.new_tag("p")
        paragraph.extend(list(term.children))
        made.append(paragraph)
    return made


def _term_name(term: Any) -> str:
    """Sphinx marks an object's name (``sig-name``) and anchors it by its dotted path."""
    anchor = str(term.get("id", ""))
    if term.find(class_="sig-name") is not None and anchor and " " not in anchor:
        return anchor
    return _term_text(term)


def _term_text(term: Any) -> str:
    return " ".join(term.get_text("").split())


def _too_deep(path: str, limits: TextLimits) -> UnreadableDocument:
    return UnreadableDocument(
        f"{path}: elements nested more than {limits.max_depth} deep "
        "(RESOLVEFLOW_DOCUMENT_MAX_DEPTH)"
    )
