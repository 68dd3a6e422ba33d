"""Files of any supported kind -> one normalized document: title, sections, source path.

Markdown and text are read as they are (front matter ``runbook: TAG`` / ``title: T``). HTML (an
exported wiki page) goes through BeautifulSoup: scripts, styles, navigation, headers, footers and
forms are dropped, the main content (``<main>``, ``<article>``, ``role=main``, else ``<body>``) is
converted to Markdown by markdownify, so headings, lists, code blocks and tables stay readable and
the chunker can follow its headings. A PDF goes through pypdf, one section per page under a
``## Page N`` heading, so every chunk's text says which page it came from (``page_of``).

Every failure is one ``UnreadableDocument`` line (junk named .pdf, an encrypted PDF, binary bytes
named .html, a file past the size cap): a folder goes on with its other files, the API answers
4xx. Nothing here touches the database.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from resolveflow.domain.refine_rules import front_matter_triggers
from resolveflow.errors import InvalidInput
from resolveflow.retrieval.chunking import MAX_INPUT_CHARS, normalize_text

logger = logging.getLogger(__name__)

MARKDOWN = "text/markdown"
TEXT = "text/plain"
HTML = "text/html"
PDF = "application/pdf"
MEDIA_TYPES = (MARKDOWN, TEXT, HTML, PDF)
DEFAULT_MAX_BYTES = 10 * 1024 * 1024  # RESOLVEFLOW_DOCUMENT_MAX_BYTES
SUFFIXES = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": TEXT,
    ".html": HTML,
    ".htm": HTML,
    ".pdf": PDF,
}
# Other names clients send for the same formats.
_ALIASES = {"text/x-markdown": MARKDOWN, "application/xhtml+xml": HTML, "application/x-pdf": PDF}
# Never content: the page's chrome, or active content that is not text at all.
_DROPPED_TAGS = (
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "button", "iframe", "svg", "canvas", "object", "embed", "link", "meta",
)  # fmt: skip
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.DOTALL)
_HEADING_LINE = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_PAGE_MARK = re.compile(r"^## Page (\d+)$", re.MULTILINE)
_SPACES = re.compile(r"\s+")


class UnreadableDocument(InvalidInput):
    """The file could not be turned into text; the message says why, in one line."""


class UnsupportedMediaType(InvalidInput):
    """Not one of the document formats ResolveFlow reads."""


class DocumentTooLarge(InvalidInput):
    """Larger than ``RESOLVEFLOW_DOCUMENT_MAX_BYTES``."""


@dataclass(frozen=True)
class Section:
    heading: str  # "" for the text before a document's first heading
    level: int  # 1-6, 0 without a heading
    text: str
    page: int | None = None  # PDFs: the page the section is on (1-based)


@dataclass(frozen=True)
class LoadedDocument:
    path: str  # the source path (relative, with /), the document's external id
    media_type: str
    title: str
    body: str  # Markdown-like text: what is indexed
    sections: tuple[Section, ...]
    runbook_tag: str | None = None
    created_at: str | None = None  # front matter ``created_at``, unparsed
    triggers: tuple[str, ...] = ()  # a runbook's front matter ``triggers`` (refine attaches it)


def media_type_for(path: str, declared: str | None = None) -> str:
    """The media type of a document: a declared one if supported, else from the file's suffix.
    A generic declared type (octet-stream, or none) defers to the suffix."""
    if declared:
        base = declared.split(";", 1)[0].strip().lower()
        base = _ALIASES.get(base, base)
        if base in MEDIA_TYPES:
            return base
        if base not in ("application/octet-stream", ""):
            raise UnsupportedMediaType(
                f"{path}: media type {base!r} is not supported (use one of "
                f"{', '.join(MEDIA_TYPES)})"
            )
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    raise UnsupportedMediaType(
        f"{path}: cannot tell the format from the name; supported: {', '.join(sorted(SUFFIXES))}"
    )


def check_size(path: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise DocumentTooLarge(
            f"{path}: {size} bytes is larger than the limit of {max_bytes} bytes "
            "(RESOLVEFLOW_DOCUMENT_MAX_BYTES)"
        )


def load_document(path: str, data: bytes, media_type: str, *, max_bytes: int) -> LoadedDocument:
    """Convert ``data`` (the file's bytes) of ``media_type`` into a normalized document."""
    check_size(path, len(data), max_bytes)
    if media_type == PDF:
        return _from_pdf(path, data)
    if media_type == HTML:
        return _from_html(path, data)
    if media_type in (MARKDOWN, TEXT):
        return _from_text(path, _decode(path, data), media_type)
    raise UnsupportedMediaType(f"{path}: media type {media_type!r} is not supported")


def _decode(path: str, data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise UnreadableDocument(f"{path}: binary content, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableDocument(f"{path}: not UTF-8 text") from None


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """Simple ``key: value`` front matter between ``---`` lines, and the text after it."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip().lower()] = value.strip().strip("'\"")
    return fields, text[match.end() :]


def split_sections(body: str) -> tuple[Section, ...]:
    """Sections at Markdown ATX headings (not inside fenced code)."""
    sections: list[Section] = []
    heading, level = "", 0
    lines: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        match = None if in_fence else _HEADING_LINE.match(line)
        if match:
            if heading or "\n".join(lines).strip():
                sections.append(Section(heading, level, "\n".join(lines).strip()))
            heading, level, lines = match.group(2), len(match.group(1)), []
        else:
            lines.append(line)
    if heading or "\n".join(lines).strip():
        sections.append(Section(heading, level, "\n".join(lines).strip()))
    return tuple(sections)


def _stem_title(path: str) -> str:
    return PurePosixPath(path).stem.replace("-", " ").replace("_", " ")


def _finish(
    path: str,
    media_type: str,
    title: str,
    body: str,
    fields: dict[str, str] | None = None,
    triggers: tuple[str, ...] = (),
) -> LoadedDocument:
    body = normalize_text(body)
    if not body:
        raise UnreadableDocument(f"{path}: no text found")
    sections = split_sections(body)
    if not title:
        first = next((s.heading for s in sections if s.level == 1), "")
        title = first or _stem_title(path)
    fields = fields or {}
    return LoadedDocument(
        path=path,
        media_type=media_type,
        title=normalize_text(title)[:500],
        body=body,
        sections=sections,
        runbook_tag=fields.get("runbook") or None,
        created_at=fields.get("created_at") or None,
        triggers=triggers if fields.get("runbook") else (),
    )


def _from_text(path: str, text: str, media_type: str) -> LoadedDocument:
    fields, body = front_matter(text)
    triggers = front_matter_triggers(text)
    return _finish(path, media_type, fields.get("title", ""), body, fields, triggers)


def _from_html(path: str, data: bytes) -> LoadedDocument:
    from bs4 import BeautifulSoup
    from markdownify import ATX, MarkdownConverter

    if b"\x00" in data[:8192]:
        raise UnreadableDocument(f"{path}: binary content, not HTML")
    soup = BeautifulSoup(data, "html.parser")  # lenient: broken markup still gives its text
    page_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(_DROPPED_TAGS):
        tag.decompose()
    main = soup.find("main") or soup.find("article") or soup.find(True, attrs={"role": "main"})
    root = main or soup.body or soup
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
    body = converter.convert_soup(root)
    return _finish(path, HTML, title, body)


def _from_pdf(path: str, data: bytes) -> LoadedDocument:
    from pypdf import PasswordType, PdfReader

    # pypdf logs a warning per oddity of a malformed file; our one line per file says enough.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    if not data.startswith(b"%PDF-") and b"%PDF-" not in data[:1024]:
        raise UnreadableDocument(f"{path}: not a PDF (no %PDF header)")
    # A parser of untrusted files can fail in many ways (pypdf's own errors, but also ValueError,
    # KeyError or RecursionError on crafted input): each becomes one line for that file.
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise UnreadableDocument(f"{path}: the PDF is encrypted (it needs a password)")
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
        parts: list[str] = []
        used = 0
        for number, page in enumerate(reader.pages, start=1):
            text = normalize_text(page.extract_text())
            if text:
                parts.append(f"## Page {number}\n\n{text}")
                used += len(text)
            if used > MAX_INPUT_CHARS:  # the chunker indexes no more than this anyway
                break
    except UnreadableDocument:
        raise
    except Exception as exc:
        logger.info("unreadable PDF", extra={"path": path, "error": type(exc).__name__})
        raise UnreadableDocument(f"{path}: not a readable PDF ({_reason(exc)})") from None
    if not parts:
        raise UnreadableDocument(f"{path}: the PDF has no text layer (scanned images?)")
    doc = _finish(path, PDF, str(meta_title), "\n\n".join(parts))
    return LoadedDocument(
        path=doc.path,
        media_type=doc.media_type,
        title=doc.title if meta_title else _pdf_title(doc, path),
        body=doc.body,
        sections=tuple(_with_page(s) for s in doc.sections),
    )


def _pdf_title(doc: LoadedDocument, path: str) -> str:
    """Without a title in its metadata: the first line of the first page, if it is short."""
    first = doc.sections[0].text.split("\n", 1)[0].strip() if doc.sections else ""
    return first if 0 < len(first) <= 120 else _stem_title(path)


def _with_page(section: Section) -> Section:
    match = _PAGE_MARK.match(f"## {section.heading}")
    page = int(match.group(1)) if match and section.level == 2 else None
    return Section(section.heading, section.level, section.text, page)


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())[:120]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def page_of(body: str, passage: str) -> int | None:
    """The PDF page a passage (a chunk's text) starts on, from the ``## Page N`` marks in the
    document's body: the last mark before where the passage is found, else the first mark inside
    it. None for documents without page marks."""
    marks = [(m.start(), int(m.group(1))) for m in _PAGE_MARK.finditer(body)]
    if not marks:
        return None
    flat_body, flat_passage = _SPACES.sub(" ", body), _SPACES.sub(" ", passage).strip()
    # Positions in the flattened body: the marks are found again there the same way.
    flat_marks = [(m.start(), int(m.group(1))) for m in re.finditer(r"## Page (\d+)", flat_body)]
    at = flat_body.find(flat_passage[:200]) if flat_passage else -1
    if at >= 0:
        before = [page for start, page in flat_marks if start <= at]
        if before:
            return before[-1]
    inside = _PAGE_MARK.search(passage)
    return int(inside.group(1)) if inside else None
