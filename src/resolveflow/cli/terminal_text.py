"""Refine's Markdown as a terminal shows it (issue 29: ``refine`` printed ``&#91;tinyq&#93;``).

The Markdown is written for a GitHub comment (``refine/domain/markdown.py``): untrusted prose is
made inert there, its ``[``, ``#``, ``_`` and the like as numeric entities, URLs defanged
(``https[:]//``, ``www[.]``) and ``@`` followed by a zero-width joiner. GitHub shows that prose
as the ticket said it; a terminal shows the entities. This undoes those marks in prose only, once,
as GitHub's rendering does: code spans and fenced blocks stay as written (GitHub leaves them as
written too), and the comment a proposal posts is the Markdown itself, never this text.

Control characters other than newline and tab are dropped from everything: the text comes from
tickets, and the terminal would act on an escape sequence.
"""

from __future__ import annotations

import html
import re

from resolveflow.domain.inert_markdown import ZWJ

_FENCE = re.compile(r"^\s*(`{3,})")
_TICKS = re.compile(r"`+")
_DEFANGED_SCHEME = re.compile(r"\b([a-z][a-z0-9+.-]{1,15})\[:\](?=//)", re.IGNORECASE)
_DEFANGED_WWW = re.compile(r"\bwww\[\.\]", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# An entity as CommonMark reads one: with its semicolon ("AT&T" and "&copy" stay text).
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def for_terminal(markdown: str) -> str:
    """``markdown`` with the inert marks of its prose undone, for printing."""
    lines, fence = [], ""
    for line in markdown.split("\n"):
        opened = _FENCE.match(line)
        if fence:  # inside a fenced block, up to the fence that closes it
            if opened and len(opened.group(1)) >= len(fence) and not line.strip(" `"):
                fence = ""
            lines.append(line)
        elif opened:
            fence = opened.group(1)
            lines.append(line)
        else:
            lines.append(_line(line))
    return _CONTROL.sub("", "\n".join(lines))


def _line(line: str) -> str:
    """One line outside a fence: its prose read as GitHub shows it, its code spans as written."""
    out, at = [], 0
    while (opening := _TICKS.search(line, at)) is not None:
        closing = re.compile(f"(?<!`){opening.group()}(?!`)").search(line, opening.end())
        if closing is None:  # a lone backtick run is text, and so is the rest of the line
            break
        out.append(_prose(line[at : opening.start()]))
        out.append(line[opening.start() : closing.end()].replace("@" + ZWJ, "@"))
        at = closing.end()
    out.append(_prose(line[at:]))
    return "".join(out)


def _prose(text: str) -> str:
    # The defanging marks are undone first: a ticket's own "[:]" is an entity until unescaped.
    text = _DEFANGED_WWW.sub("www.", _DEFANGED_SCHEME.sub(r"\1:", text))
    text = _ENTITY.sub(lambda m: html.unescape(m.group()), text)
    return text.replace("@" + ZWJ, "@")
