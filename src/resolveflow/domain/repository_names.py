"""A GitHub repository's name, ``OWNER/REPO``, in the one spelling ResolveFlow stores and signs."""

from __future__ import annotations

import re

REPO_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")


def repository_name(value: str) -> str:
    """``value`` in lower case; ``ValueError`` unless it looks like ``OWNER/REPO``."""
    if not REPO_PATTERN.match(value) or value.rsplit("/", 1)[1] in {".", ".."}:
        raise ValueError(f"repository must look like OWNER/REPO, got {value!r}")
    # GitHub matches repository names case-insensitively; one spelling, one digest.
    return value.lower()
