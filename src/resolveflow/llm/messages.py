"""What a model is sent: chat messages, and untrusted text fenced so the model can tell it from
its instructions."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user"]
    content: str


_MARKERS = re.compile(r"<<<|>>>")


def _neutral(text: str) -> str:
    # Fence markers inside untrusted text are made harmless; the hash tag does the rest.
    return _MARKERS.sub(lambda m: "‹‹‹" if m.group() == "<<<" else "›››", text)


def fence(kind: str, content: str, attributes: str = "") -> str:
    """``content`` between markers that say it is untrusted data; the tag depends on the content."""
    body = _neutral(content)
    tag = hashlib.sha256(f"{kind}\n{body}".encode()).hexdigest()[:16]
    head = f"<<<BEGIN UNTRUSTED {kind} {attributes}".rstrip() + f" tag={tag}>>>"
    return f"{head}\n{body}\n<<<END UNTRUSTED tag={tag}>>>"
