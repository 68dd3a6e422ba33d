"""HTML (an exported wiki page) to Markdown-like text, with the nesting depth bounded.

BeautifulSoup parses leniently (broken markup still gives its text); scripts, styles, navigation,
headers, footers and forms are dropped; the main content (``<main>``, ``<article>``,
``role=main``, else ``<body>``) is converted to Markdown by markdownify, so headings, lists, code
blocks and tables stay readable and the chunker can follow its headings.

What a reader sees of the page is what is stored: a link is its text (a link to the web stays a
Markdown link; a relative one, which leads nowhere once quoted, is its text only); a Sphinx
signature is one code span as the page shows it (``csv.DictReader(f, *args, **kwds)``), so a
keyword-only ``*`` never becomes emphasis, and a literal ``*`` elsewhere is escaped; a footnote
mark is a superscript (``⁴``), never ``[4]``, which would read as one of the answer's citations,
and the footnotes' text stays with its page; a table is a pipe table whose cells keep their
``|`` escaped (``docs/ask.md``).

markdownify walks the tree by recursion (three Python frames an element) and looks up every
element's ancestors, so 30,000 nested ``<td>`` raised RecursionError and a 2 MB nest of ``<div>``
took 19 s first: the parser refuses to open an element deeper than ``max_depth`` the moment it
would, before the rest of the file is read.
"""

from __future__ import annotations

import re
from typing import Any

from bs4 import BeautifulSoup, Tag
from bs4.element import NavigableString
from markdownify import ATX, MarkdownConverter

from resolveflow.retrieval.document_bounds import TextLimits, UnreadableDocument

# Never content: the page's chrome, or active content that is not text at all.
_DROPPED_TAGS = (
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "button", "iframe", "svg", "canvas", "object", "embed", "link", "meta",
)  # fmt: skip


# What a heading's permalink shows when it is only a mark (Sphinx ¶, Docusaurus #, MkDocs §),
# or a footnote's way back to its mark (rustdoc's and pandoc's ↩).
_PERMALINK_MARKS = frozenset({"", "¶", "#", "§", "🔗", "⚓", "↩", "↩︎", "↑"})
_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)
# Footnote marks: Sphinx (docutils), pandoc and rustdoc's (role), mdBook's and pandoc's classes.
_NOTE_REF_CLASSES = frozenset({"footnote-reference", "footnote-ref", "footnote-definition-label"})
_NOTE_CLASSES = frozenset({"footnote", "footnote-list", "footnotes", "footnote-definition"})
_NOTE_ROLES = frozenset({"doc-footnote", "doc-endnote", "doc-endnotes"})
_NOTE_LABEL = re.compile(r"^\[?\s*(\w{1,8})\s*\]?$")
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
# A Sphinx signature's parts (Sphinx 4+ and older): a ``<dt>`` holding one is a signature.
_SIGNATURE_PARTS = frozenset({"sig-name", "sig-paren", "descname"})
_SPACES = re.compile(r"\s+")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_INDENTED_ROW = re.compile(r"^[ \t]+(\|.*\|)[ \t]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


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
        if not tag.decomposed and not _is_footnotes(tag):
            tag.decompose()
    main = soup.find("main") or soup.find("article") or soup.find(True, attrs={"role": "main"})
    root: Any = main or soup.body or soup
    _footnote_marks(root)
    _signatures(root)
    _unlink_anchors(root)
    _table_cells(root)
    _definitions_as_sections(soup, root)
    heading = root.find("h1")
    title = heading.get_text(" ", strip=True) if heading else page_title
    converter = MarkdownConverter(
        heading_style=ATX,
        bullets="-",
        # Escapes would put backslashes into words (max\_connections) that search must match;
        # a literal ``*`` is escaped, so that it never turns the text after it into emphasis.
        escape_asterisks=True,
        escape_underscores=False,
        escape_misc=False,
    )
    try:
        body = str(converter.convert_soup(root))
    except RecursionError:  # the depth bound keeps it away; this is a second guard
        raise _too_deep(path, limits) from None
    return title, _outdented_tables(body)


def _outdented_tables(body: str) -> str:
    """A table's rows at the line's start: markdownify indents what a ``<dd>`` or a list item
    holds, and a table indented four spaces would render as a code block."""
    lines, in_fence = [], False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        lines.append(line if in_fence else _INDENTED_ROW.sub(r"\1", line))
    return "\n".join(lines)


def _table_cells(root: Any) -> None:
    """A table cell's own ``|`` escaped (``\\|``, which a pipe table reads as text, in a code
    span too), so that a cell saying "a | b" stays one cell and every row keeps its columns."""
    for cell in root.find_all(["td", "th"]):
        for text in cell.find_all(string=lambda s: "|" in s):
            text.replace_with(NavigableString(_UNESCAPED_PIPE.sub(r"\\|", str(text))))


def _unlink_anchors(root: Any) -> None:
    """A link reads as its text: one to the same page (a heading's own anchor, as mdBook,
    Sphinx and most site generators write them) or to another page by a relative path leads
    nowhere once the page is quoted elsewhere, and ``javascript:`` or ``mailto:`` is no place
    to go: the text is kept, the link dropped. Only a link to the web (http or https) stays a
    link. A mark that is only a symbol (Sphinx's permalink ``¶``, a footnote's ``↩``) goes
    whole, so a quoted heading reads as the heading."""
    for link in root.find_all("a", href=True):
        # A link inside one dropped just before went with it (links nest in broken markup).
        if link.decomposed or link.parent is None:
            continue
        href = str(link.get("href", "")).strip()
        if _WEB_LINK.match(href):
            link.attrs = {"href": href}  # a title would be written after the address
            continue
        if href.startswith("#") and link.get_text(strip=True) in _PERMALINK_MARKS:
            link.decompose()
        else:
            link.unwrap()


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_MADE = "data-definition"  # marks the headings made here
_SIGNATURE = "data-signature"  # marks a term _signatures wrote as one code span


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
    is_object = term.has_attr(_SIGNATURE) or term.find(class_="sig-name") is not None
    if is_object and anchor and " " not in anchor:
        return anchor
    return _term_text(term)


def _term_text(term: Any) -> str:
    return " ".join(term.get_text("").split())


def _classes(tag: Any) -> set[str]:
    return set(tag.get("class") or ()) if isinstance(tag, Tag) else set()


def _is_footnotes(tag: Any) -> bool:
    """Footnotes in an ``<aside>`` (Sphinx 7+): the page's text, not its chrome."""
    return bool(_classes(tag) & _NOTE_CLASSES) or tag.get("role") in _NOTE_ROLES


def _footnote_marks(root: Any) -> None:
    """A footnote's mark, in the text and before the note itself, as a superscript: ``[4]``
    would read as the answer's own citation [4]. Sphinx writes ``<a class="footnote-reference">
    [4]</a>`` and labels the note ``<span class="label">[4]</span>``; mdBook, rustdoc and pandoc
    write ``<sup>``."""
    marks = [
        *root.find_all(["a", "sup"], class_=list(_NOTE_REF_CLASSES)),
        *root.find_all(attrs={"role": "doc-noteref"}),
        *(span for note in root.find_all(_is_footnotes) for span in note.find_all(class_="label")),
        *root.find_all("sup"),
    ]
    for mark in marks:
        if mark.decomposed or mark.parent is None:
            continue
        label = _NOTE_LABEL.match(mark.get_text("", strip=True))
        if label is None:
            continue
        number = label.group(1)
        text = number.translate(_SUPERSCRIPT) if number.isdigit() else f"(note {number})"
        is_label = bool(_classes(mark) & {"label", "footnote-definition-label"})
        note = mark.find_next_sibling() if is_label else None
        if note is not None and note.name == "p":  # the note's label starts its text
            note.insert(0, NavigableString(text + " "))
            mark.decompose()
        else:
            mark.replace_with(NavigableString(text))


def _signatures(root: Any) -> None:
    """A Sphinx signature (``<dt class="sig">``, its parameters in ``<em>`` and its ``*`` in
    ``<span class="o">``) as one code span of the text the page shows:
    ``class csv.DictReader(f, fieldnames=None, *args, **kwds)``. Emphasis per parameter would
    write ``***kwds*`` and turn a keyword-only ``*`` into markup."""
    for term in root.find_all("dt"):
        if term.decomposed:
            continue
        has_part = term.find(class_=list(_SIGNATURE_PARTS)) is not None
        if not has_part and "sig" not in _classes(term):
            continue
        for mark in term.find_all("a", class_="headerlink"):
            mark.decompose()
        text = _SPACES.sub(" ", term.get_text("")).strip()
        text = text.replace("( ", "(").replace(" )", ")")
        term.clear()
        term[_SIGNATURE] = ""  # read by _term_name: the term is an object's signature
        code = Tag(name="code")
        code.string = text
        term.append(code)


def _too_deep(path: str, limits: TextLimits) -> UnreadableDocument:
    return UnreadableDocument(
        f"{path}: elements nested more than {limits.max_depth} deep "
        "(RESOLVEFLOW_DOCUMENT_MAX_DEPTH)"
    )
