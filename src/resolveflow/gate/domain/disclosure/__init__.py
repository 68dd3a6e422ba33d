"""What a rendering hides from the person who approves it: a pure scan of an action's texts.

The approver reads a rendering, GitHub posts the source. Whatever the source holds that the
rendering does not show (HTML comments, a collapsed ``<details>``, a link whose text names another
address than its target, bidirectional controls, zero-width characters, ...) is reported here as a
``Finding``: its kind, the field it is in and a short excerpt, invisible characters spelled out.

The scanner follows CommonMark where it matters (fenced code, HTML blocks, code spans, backslash
escapes) and errs towards reporting: an HTML comment inside a fenced code block is shown as text
by GitHub and is not reported, but one in an indented code block, or in code inside a block quote
or a deeply indented list item, is (those are rare; a missed hidden comment would not be).
Invisible characters are reported wherever they are, code included.
"""

from __future__ import annotations

from resolveflow.gate.domain.actions import (
    AnyAction,
    EmailSendAction,
    GitHubIssueAction,
    GitHubIssueCloseDuplicateAction,
)
from resolveflow.gate.domain.disclosure.blocks import masked, segments
from resolveflow.gate.domain.disclosure.characters import (
    BIDI_CONTROLS,
    excerpt,
    invisible_positions,
    revealed,
    spell_out,
)
from resolveflow.gate.domain.disclosure.kinds import MAX_PER_KIND, Finding, Hidden
from resolveflow.gate.domain.disclosure.links import find_links, find_markup

__all__ = [
    "BIDI_CONTROLS",
    "Finding",
    "Hidden",
    "invisible_positions",
    "revealed",
    "scan_action",
    "scan_markdown",
    "scan_plain",
    "spell_out",
]


def scan_markdown(text: str, field: str) -> list[Finding]:
    """Everything in a Markdown text (a comment, an issue body) its rendering hides."""
    found: list[Finding] = []
    for segment in segments(text):
        if segment.kind != "code":
            source = masked(segment.text) if segment.kind == "text" else segment.text
            find_markup(found, field, source)
            find_links(found, field, source)
    return _capped(found + scan_plain(text, field))


def scan_plain(text: str, field: str) -> list[Finding]:
    """Invisible and reordering characters in any text (a title, a label, a Markdown source)."""
    found: list[Finding] = []
    shown: dict[Hidden, int] = {}
    for i, kind in invisible_positions(text):
        shown[kind] = shown.get(kind, 0) + 1
        if shown[kind] <= MAX_PER_KIND:  # the excerpts are the costly part: only those kept
            found.append(Finding(kind, field, excerpt(_around(text, i))))
    return found


def _around(text: str, i: int, reach: int = 24) -> str:
    """The words around position ``i``: up to ``reach`` characters each side, whole words."""
    start, end = max(0, i - reach), min(len(text), i + reach + 1)
    before, after = text[start:i], text[i + 1 : end]
    if start > 0 and not text[start - 1].isspace():  # cut inside a word: drop that part
        words = before.split(maxsplit=1)
        before = words[1] if len(words) == 2 and not before[0].isspace() else before
    if end < len(text) and not text[end].isspace():
        words = after.rsplit(maxsplit=1)
        after = words[0] if len(words) == 2 and not after[-1].isspace() else after
    return before + text[i] + after


def _capped(found: list[Finding]) -> list[Finding]:
    counts: dict[tuple[Hidden, str], int] = {}
    kept = []
    for finding in found:
        key = (finding.kind, finding.field)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] <= MAX_PER_KIND:
            kept.append(finding)
    return kept


def scan_action(action: AnyAction) -> tuple[Finding, ...]:
    """What the person approving ``action`` would not see in its rendering, field by field."""
    found: list[Finding] = []
    if isinstance(action, GitHubIssueAction | GitHubIssueCloseDuplicateAction):
        found += scan_markdown(action.comment or "", "comment")
    elif isinstance(action, EmailSendAction):
        # The text part is shown as plain text; an HTML part can hide what a client renders.
        found += scan_plain(action.subject, "subject") + scan_plain(action.text, "text")
        found += scan_markdown(action.html or "", "html")
    else:
        found += scan_plain(action.title, "title") + scan_markdown(action.body, "body")
        for assignee in action.assignees:
            name = assignee if isinstance(assignee, str) else assignee.name
            found += scan_plain(name, "assignees")
    for label in action.labels:
        found += scan_plain(label, "labels")
    return tuple(_capped(found))
