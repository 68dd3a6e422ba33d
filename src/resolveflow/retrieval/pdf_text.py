"""A PDF's text layer through pypdf, one ``## Page N`` section a page, with the text bounded.

pypdf parses a page's whole content stream before the first character comes out, and a few KB
of compressed stream can inflate to megabytes: so a page's decompressed stream is measured first
(``page_max_stream_bytes``), the text is counted as pypdf hands it out (a visitor that stops the
page at ``page_max_chars``, which also bounds form XObjects drawn many times), and reading stops
once the chunker's window is full. pypdf's own limits (nested objects, page-tree depth, stream
lengths) stay at their defaults; whatever else a crafted file does is one line for that file.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from pypdf import PageObject, PasswordType, PdfReader

from resolveflow.retrieval.chunking import MAX_INPUT_CHARS, normalize_text
from resolveflow.retrieval.document_bounds import (
    DocumentTooLarge,
    TextLimits,
    UnreadableDocument,
    too_much_text,
)

logger = logging.getLogger(__name__)


class _PageFull(DocumentTooLarge):
    """Raised from the text visitor to stop pypdf inside a page (caught, reported)."""


def pdf_text(path: str, data: bytes, limits: TextLimits) -> tuple[str, list[str]]:
    """The title in the PDF's metadata ("" without) and each page's section text."""
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
            text = normalize_text(_page_text(path, number, page, limits))
            if text:
                parts.append(f"## Page {number}\n\n{text}")
                used += len(text)
            if used > MAX_INPUT_CHARS:  # the chunker indexes no more than this anyway
                break
    except (UnreadableDocument, DocumentTooLarge, MemoryError):
        raise
    except Exception as exc:
        logger.info("unreadable PDF", extra={"path": path, "error": type(exc).__name__})
        raise UnreadableDocument(f"{path}: not a readable PDF ({_reason(exc)})") from None
    if not parts:
        raise UnreadableDocument(f"{path}: the PDF has no text layer (scanned images?)")
    return str(meta_title), parts


def _page_text(path: str, number: int, page: PageObject, limits: TextLimits) -> str:
    contents = page.get_contents()
    size = len(contents.get_data()) if contents is not None else 0
    if size > limits.page_max_stream_bytes:
        raise DocumentTooLarge(
            f"{path}: page {number}'s content inflates to {size} bytes, more than "
            f"{limits.page_max_stream_bytes} (RESOLVEFLOW_DOCUMENT_PAGE_MAX_STREAM_BYTES)"
        )
    seen = 0

    def count(text: Any, *_: Any) -> None:
        nonlocal seen
        seen += len(text) if isinstance(text, str) else 0
        if seen > limits.page_max_chars:
            raise _PageFull

    try:
        text = page.extract_text(visitor_text=count)
    except _PageFull:
        raise too_much_text(path, seen, limits.page_max_chars, f"page {number}") from None
    if len(text) > limits.page_max_chars:
        raise too_much_text(path, len(text), limits.page_max_chars, f"page {number}")
    return text


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())[:120]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
