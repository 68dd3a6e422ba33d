"""Coverage gaps (issue 31): the questions a team's documents do not answer, grouped by topic,
and the issue that asks for the biggest gap to be written up. Pure.

A question is shown by its subject, or its first line, cut to ``SHOWN_CHARS``; everything it
says is untrusted and placed in the issue's body made inert (``domain/inert_markdown``): nobody
is mentioned, nothing links or renders as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from resolveflow.ask.domain.question import read_question
from resolveflow.domain.inert_markdown import inert
from resolveflow.errors import one_line

SHOWN_CHARS = 160
TITLE_CHARS = 120


@dataclass(frozen=True)
class GapTopic:
    """Questions on one topic that got no answer."""

    representative: str  # the question closest to the topic's centre, as shown
    count: int
    abstained: int  # "nothing relates"
    tentative: int  # "no page answers this for sure" (or nothing retrieved)
    examples: tuple[str, ...]  # up to a few, newest first, as shown
    last_asked: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.representative,
            "count": self.count,
            "abstained": self.abstained,
            "tentative": self.tentative,
            "examples": list(self.examples),
            "last_asked": self.last_asked.isoformat(),
        }


def shown(question: str) -> str:
    """A question as a list shows it: its subject, else its first non-empty line, cut."""
    asked = read_question(question)
    first = asked.subject or next((line for line in question.splitlines() if line.strip()), "")
    return one_line(first, SHOWN_CHARS)


def gap_issue(topic: GapTopic, days: int) -> tuple[str, str]:
    """The title and body of an issue that asks for ``topic`` to be documented."""
    title = f"Docs do not answer: {one_line(topic.representative, TITLE_CHARS)}"
    answered = (
        f'{topic.abstained} got "nothing in the documents relates" and {topic.tentative} '
        '"no page answers this for sure"'
    )
    lines = [
        f"People asked about this {topic.count} time{'s' if topic.count != 1 else ''} in the "
        f"last {days} days, and the documents did not answer it: {answered}.",
        "",
        "Questions asked (newest first):",
        "",
        *[f"- {inert(example, SHOWN_CHARS)}" for example in topic.examples],
        "",
        "A page that answers these would let Ask answer them with citations. Proposed by "
        "ResolveFlow from Ask's unanswered questions (`resolveflow gaps`).",
    ]
    return title, "\n".join(lines) + "\n"
