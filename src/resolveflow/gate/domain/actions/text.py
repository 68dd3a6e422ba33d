"""Text rules every action kind shares: normal form, labels, the executor's hidden marker."""

from __future__ import annotations

import re
import unicodedata

# A hidden marker inside an approved text could make reconciliation believe another execution was
# delivered, so approved texts may not carry anything that looks like one.
MARKER_PREFIX = "<!-- resolveflow:"
_MARKER_LOOKALIKE = re.compile(r"<!--\s*resolveflow\s*:", re.IGNORECASE)
MAX_LABELS = 50


def normalize_text(text: str) -> str:
    """NFC, LF line endings. GitHub stores CRLF bodies as LF, so CRLF is not a real difference."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


def execution_marker(execution_id: str) -> str:
    return f"<!-- resolveflow:action={execution_id} -->"


def body_with_marker(text: str, execution_id: str) -> str:
    """The exact text the executor writes: the approved text, a blank line, the hidden marker."""
    return f"{text}\n\n{execution_marker(execution_id)}"


def refuse_marker(text: str, what: str) -> str:
    if _MARKER_LOOKALIKE.search(text):
        raise ValueError(f"{what} may not contain a ResolveFlow marker")
    return text


def label_set(value: tuple[str, ...]) -> tuple[str, ...]:
    """NFC, trimmed, de-duplicated and sorted: labels in another order are the same action."""
    cleaned = {normalize_text(label).strip() for label in value}
    if "" in cleaned:
        raise ValueError("label names may not be empty")
    if any(len(label) > 100 or "\n" in label for label in cleaned):
        raise ValueError("label names are one line of at most 100 characters")
    if len(cleaned) > MAX_LABELS:
        raise ValueError(f"at most {MAX_LABELS} labels")
    return tuple(sorted(cleaned))


def one_line_title(value: str, limit: int) -> str:
    """A new issue's title: normalized, stripped, one line of at most ``limit`` characters."""
    value = normalize_text(value).strip()
    if not value:
        raise ValueError("an issue needs a title")
    if "\n" in value or len(value) > limit:
        raise ValueError(f"a title is one line of at most {limit} characters")
    return refuse_marker(value, "title")


def issue_text(value: str, what: str, limit: int) -> str:
    """A new issue's body or description: normalized, not blank, at most ``limit`` characters."""
    value = normalize_text(value)
    if not value.strip():
        raise ValueError(f"an issue needs a {what}")
    if len(value) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    return refuse_marker(value, what)
