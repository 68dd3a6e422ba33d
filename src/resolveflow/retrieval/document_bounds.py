"""What one document may be: its errors, and the bounds its text extraction keeps to.

A document's file is hostile until proven otherwise: a 15 KB PDF can inflate to megabytes of text,
an HTML page can nest a million elements. Each bound here is a setting (``RESOLVEFLOW_DOCUMENT_*``,
docs/configuration.md) and each is checked while the text is extracted, so crossing one costs
little; the wall-clock deadline and the memory ceiling (``retrieval.extraction``) catch the rest.
Every refusal is one line that names the file and the setting to raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.domain.user_text import unstorable
from resolveflow.errors import InvalidInput, Unavailable

DEFAULT_MAX_BYTES = 10 * 1024 * 1024  # RESOLVEFLOW_DOCUMENT_MAX_BYTES


class UnreadableDocument(InvalidInput):
    """The file could not be turned into text; the message says why, in one line."""


class UnsupportedMediaType(InvalidInput):
    """Not one of the document formats ResolveFlow reads."""


class DocumentTooLarge(InvalidInput):
    """Larger than a document may be: its bytes, its text, or the time or memory it takes."""


class ExtractorUnavailable(Unavailable):
    """The document extractor could not run (every worker busy, or none could start)."""


@dataclass(frozen=True)
class TextLimits:
    """What a document's extracted text may hold (checked inside the extraction)."""

    # RESOLVEFLOW_DOCUMENT_MAX_CHARS: a 1,000-page book; the chunker reads the first 76,800.
    max_chars: int = 2_000_000
    # RESOLVEFLOW_DOCUMENT_PAGE_MAX_CHARS: a dense A4 page holds about 10,000.
    page_max_chars: int = 100_000
    # RESOLVEFLOW_DOCUMENT_PAGE_MAX_STREAM_BYTES: a PDF page's decompressed drawing instructions,
    # parsed in full before any text comes out (about 3 s per MB in pypdf).
    page_max_stream_bytes: int = 4 * 1024 * 1024
    # RESOLVEFLOW_DOCUMENT_MAX_DEPTH: HTML elements inside one another; real pages stay under 40.
    max_depth: int = 200


def too_much_text(path: str, chars: int, limit: int, where: str = "") -> DocumentTooLarge:
    setting = "PAGE_MAX_CHARS" if where else "MAX_CHARS"
    return DocumentTooLarge(
        f"{path}: {where or 'the document'} holds more than {limit} characters of text "
        f"({chars} or more; RESOLVEFLOW_DOCUMENT_{setting})"
    )


def check_text(path: str, text: str, limits: TextLimits) -> None:
    if len(text) > limits.max_chars:
        raise too_much_text(path, len(text), limits.max_chars)


def stored_text(value: str, what: str) -> str:
    """``value``, if Postgres can hold it: no NUL, no lone surrogate (JSON's ``"\\ud800"`` and a
    command-line argument that is not UTF-8 both decode to one). Else one ``InvalidInput`` line."""
    if unstorable(value) is not None:
        raise InvalidInput(f"{what} must not contain NUL or unpaired surrogate characters")
    return value
