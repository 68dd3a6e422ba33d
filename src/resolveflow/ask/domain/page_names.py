"""The names a page is about: what a question's names are matched against. Pure.

A reference page names its subject in four places whatever the corpus: its file name
(``base/strptime.html``, ``commands/npm-publish.md``, ``KubePodCrashLooping.md``), the names in
its title (``os.path``, ``save-prefix``), the signatures at the top of its first code block,
the usage or synopsis that reference pages open with (``strptime(x, format, tz = "")``,
``npm publish [<tarball>]``), and the names its headings give in code (a settings page's
"#### `save-prefix`"). A name the question mentions and the page is about is a better
lead than any word the two share.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_IDENT = r"[A-Za-z][A-Za-z0-9_.]*[A-Za-z0-9_]"
_CALL = re.compile(r"(?<![\w.$@])(" + _IDENT + r")\s*\(")
_TITLE_NAME = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z0-9]*(?:[._-][A-Za-z0-9]+)+|[a-z]+[A-Z]\w*)")
_FENCED = re.compile(r"^\s{0,3}(?:```|~~~)[^\n]*\n(.*?)^\s{0,3}(?:```|~~~)", re.S | re.M)
_CODE_SPAN = re.compile(r"`([A-Za-z][\w.:-]*[\w])`")
HEAD_CHARS = 6000  # how much of a page is read for its first code block
SIGNATURE_LINES = 12


def page_names(
    external_id: str, title: str, head: str, headings: Sequence[str] = ()
) -> frozenset[str]:
    """Lowercase names of a page: its file name without extension, the names in its title, the
    calls in the first lines of its first code block, and the names its headings give in
    backticks. ``head`` is the page's beginning."""
    stem = external_id.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    names = {stem.lower()} if stem else set()
    names.update(match.group(1).lower() for match in _TITLE_NAME.finditer(title))
    for heading in headings:
        names.update(match.group(1).lower() for match in _CODE_SPAN.finditer(heading))
    block = _FENCED.search(head[:HEAD_CHARS])
    if block:
        lines = "\n".join(block.group(1).splitlines()[:SIGNATURE_LINES])
        names.update(match.group(1).lower() for match in _CALL.finditer(lines))
    return frozenset(name for name in names if len(name) > 1)


def name_match(question_names: dict[str, float], names: frozenset[str]) -> tuple[str, float]:
    """The question's name of highest weight that the page is about (the first such, in the
    question's order), with that weight; ("", 0.0) when the page is about none of them."""
    matched = [(name, weight) for name, weight in question_names.items() if name in names]
    return max(matched, key=lambda pair: pair[1], default=("", 0.0))
