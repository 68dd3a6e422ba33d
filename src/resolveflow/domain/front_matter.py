"""A document's front matter: ``key: value`` lines between two ``---`` lines at its very start.

It belongs to the document: the loaders read a runbook's tag and title from it, and refine reads
the trigger phrases a (trusted) runbook declares there.
"""

from __future__ import annotations

import re

# Linear on any input: ``[^\S\n]*`` (white space but the newline) cannot also take the newline
# after it; ``\s*`` could, and backtracked over a run of blank lines once per line after them.
_FRONT_MATTER = re.compile(r"\A---[^\S\n]*\n(.*?)\n---[^\S\n]*(?:\n|\Z)", re.DOTALL)


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


def front_matter_triggers(text: str) -> tuple[str, ...]:
    """``triggers: [a, b]``, ``triggers: a, b`` or a ``- a`` list under ``triggers:``; phrases
    shorter than 3 characters are left out."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return ()
    lines = match.group(1).splitlines()
    for i, line in enumerate(lines):
        key, sep, value = line.partition(":")
        if not sep or key.strip().lower() != "triggers":
            continue
        if value.strip():
            items = value.strip().strip("[]").split(",")
        else:
            items = []
            for item in lines[i + 1 :]:
                if not item.strip().startswith("- "):
                    break
                items.append(item.strip()[2:])
        return tuple(p for p in (s.strip().strip("'\"").strip() for s in items) if len(p) >= 3)
    return ()
