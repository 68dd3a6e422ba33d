"""Parsing what people type to name an issue."""

from __future__ import annotations

import re

from resolveflow.errors import InvalidInput

_ISSUE_REF = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+)#(\d+)$")
_ISSUE_URL = re.compile(
    r"^https?://[^/]+/([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+)/(?:issues|pull)/(\d+)/?(?:[#?].*)?$"
)


def parse_issue_reference(text: str) -> tuple[str, int]:
    """``owner/repo#12`` or an issue / pull request URL -> ("owner/repo", 12)."""
    for pattern in (_ISSUE_REF, _ISSUE_URL):
        match = pattern.match(text.strip())
        if match:
            return f"{match.group(1)}/{match.group(2)}".lower(), int(match.group(3))
    raise InvalidInput(f"expected OWNER/REPO#N or an issue URL, got {text!r}")
