"""Files of any supported kind -> one normalized document: title, sections, source path.

Markdown and text are read as they are (front matter ``runbook: TAG`` / ``title: T``). HTML (an
exported wiki page) becomes Markdown (``html_text``), so headings, lists, code blocks and tables
stay readable and the chunker can follow its headings. A PDF goes through pypdf (``pdf_text``), one
section per page under a ``## Page N`` heading, so every chunk's text says which page it came from
(``page_of``).

Every failure is one line (junk named .pdf, an encrypted PDF, binary bytes named .html, a file past
a bound of ``document_bounds``): a folder goes on with its other files, the API answers 4xx.
Nothing here touches the database, and nothing here bounds time or memory: untrusted files go
through ``retrieval.extraction``, which runs this module in a worker process with a deadline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from resolveflow.domain.front_matter import front_matter, front_matter_triggers
from resolveflow.domain.user_text import without_surrogates
from resolveflow.retrieval.chunking import normalize_text
from resolveflow.retrieval.document_bounds import (
    DEFAULT_MAX_BYTES,
    DocumentTooLarge,
    ExtractorUnavailable,
    TextLimits,
    UnreadableDocument,
    UnsupportedMediaType,
    check_text,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DocumentTooLarge",
    "ExtractorUnavailable",
    "LoadedDocument",
    "Section",
    "TextLimits",
    "UnreadableDocument",
    "UnsupportedMediaType",
]

MARKDOWN = "text/markdown"
TEXT = "text/plain"
HTML = "text/html"
PDF = "application/pdf"
MEDIA_TYPES = (MARKDOWN, TEXT, HTML, PDF)
SUFFIXES = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdx": MARKDOWN,  # Markdown with components (Hugging Face's, Docusaurus' docs): read as Markdown
    ".txt": TEXT,
    ".html": HTML,
    ".htm": HTML,
    ".pdf": PDF,
}
# Other names clients send for the same formats.
_ALIASES = {"text/x-markdown": MARKDOWN, "application/xhtml+xml": HTML, "application/x-pdf": PDF}
# The heading's text is trimmed in Python (``_heading``): ``(.+?)\s*#*\s*$`` took cubic time on a
# heading line padded with spaces.
_HEADING_LINE = re.compile(r"^\s{0,3}(#{1,6})\s+(.+)$")
_PAGE_MARK = re.compile(r"^## Page (\d+)$", re.MULTILINE)
_SPACES = re.compile(r"\s+")


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
                f"{path}: media type {base[:100]!r} is not supported (use one of "
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


def load_document(
    path: str,
    data: bytes,
    media_type: str,
    *,
    max_bytes: int,
    limits: TextLimits = TextLimits(),  # frozen: one shared default is safe
) -> LoadedDocument:
    """Convert ``data`` (the file's bytes) of ``media_type`` into a normalized document."""
    check_size(path, len(data), max_bytes)
    if media_type == PDF:
        return _from_pdf(path, data, limits)
    if media_type == HTML:
        from resolveflow.retrieval.html_text import html_text  # bs4: only when a page comes

        title, body = html_text(path, data, limits)
        return _finish(path, HTML, title, body, limits)
    if media_type in (MARKDOWN, TEXT):
        return _from_text(path, _decode(path, data), media_type, limits)
    raise UnsupportedMediaType(f"{path}: media type {media_type!r} is not supported")


def _decode(path: str, data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise UnreadableDocument(f"{path}: binary content, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableDocument(f"{path}: not UTF-8 text") from None


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
            heading, level, lines = _heading(match.group(2)), len(match.group(1)), []
        else:
            lines.append(line)
    if heading or "\n".join(lines).strip():
        sections.append(Section(heading, level, "\n".join(lines).strip()))
    return tuple(sections)


def _heading(raw: str) -> str:
    """An ATX heading's text without its closing ``#`` run and the spaces around it (at least
    its first character stays, as CommonMark keeps ``# #``)."""
    trimmed = raw.rstrip().rstrip("#").rstrip()
    return trimmed or raw[:1]


def _stem_title(path: str) -> str:
    return PurePosixPath(path).stem.replace("-", " ").replace("_", " ")


def _clean(text: str) -> str:
    # Postgres stores neither NUL (normalize_text drops control characters) nor lone surrogates.
    return without_surrogates(normalize_text(text))


def _finish(
    path: str,
    media_type: str,
    title: str,
    body: str,
    limits: TextLimits,
    fields: dict[str, str] | None = None,
    triggers: tuple[str, ...] = (),
) -> LoadedDocument:
    body = _clean(body)
    if not body:
        raise UnreadableDocument(f"{path}: no text found")
    check_text(path, body, limits)
    sections = split_sections(body)
    if not title:
        first = next((s.heading for s in sections if s.level == 1), "")
        title = first or _stem_title(path)
    fields = fields or {}
    return LoadedDocument(
        path=path,
        media_type=media_type,
        title=_clean(title)[:500],
        body=body,
        sections=sections,
        runbook_tag=fields.get("runbook") or None,
        created_at=fields.get("created_at") or None,
        triggers=triggers if fields.get("runbook") else (),
    )


def _from_text(path: str, text: str, media_type: str, limits: TextLimits) -> LoadedDocument:
    fields, body = front_matter(text)
    triggers = front_matter_triggers(text)
    return _finish(path, media_type, fields.get("title", ""), body, limits, fields, triggers)


def _from_pdf(path: str, data: bytes, limits: TextLimits) -> LoadedDocument:
    from resolveflow.retrieval.pdf_text import pdf_text  # pypdf: only when a PDF comes

    meta_title, parts = pdf_text(path, data, limits)
    doc = _finish(path, PDF, meta_title, "\n\n".join(parts), limits)
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
