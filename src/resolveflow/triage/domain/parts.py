"""One triage result per issue, made of parts (pure): each part is one kind of help (labels, a
request for missing facts, related issues...), with its score, its floor, and whether it is kept.

A part below its floor, or one that found nothing, is left out and counted, never shown: users
forgive silence sooner than noise. What is kept joins the run's proposal, whatever the branch the
rules chose: its labels beside the branch's, its paragraph in the comment. The run's record keeps
every part, kept or not, with its score and floor, so the run page can show why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from resolveflow.gate.domain.actions.intent import LabelNote
from resolveflow.triage.domain.diagnosis import Snippet
from resolveflow.triage.domain.evidence import IssueEvidence
from resolveflow.triage.domain.investigation import related_line
from resolveflow.triage.domain.label_notes import label_note
from resolveflow.triage.domain.missing_facts import (
    REQUEST_WORDS,
    MissingFact,
    read_facts,
    request_text,
)
from resolveflow.triage.domain.rules import ProposedAction

SIGNATURE = "Drafted by ResolveFlow and approved by a maintainer."


class PartName(StrEnum):
    """The parts of one triage result (live runs make labels and missing facts so far; the
    backtest measures every one)."""

    LABELS = "labels"
    RELATED = "related"
    DUPLICATE = "duplicate"
    FILES = "files"
    DOCS = "docs"
    MISSING_FACTS = "missing_facts"
    FAILING_CHECKS = "failing_checks"


@dataclass(frozen=True)
class PartItem:
    """One thing a part suggests: a label, a missing fact."""

    ref: str
    score: float | None = None
    why: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "score": self.score, "why": self.why}


@dataclass(frozen=True)
class Part:
    name: PartName
    score: float | None  # the part's own measure (a label's probability...); None: a rule's yes
    floor: float | None  # the score it must reach to be shown
    items: tuple[PartItem, ...] = ()
    paragraph: str | None = None  # Markdown for the public comment
    left_out: str | None = None  # why it is not shown; None: kept

    @property
    def kept(self) -> bool:
        return self.left_out is None and bool(self.items)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(item.ref for item in self.items) if self.name is PartName.LABELS else ()

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name.value,
            "score": self.score,
            "floor": self.floor,
            "kept": self.kept,
            "left_out": self.left_out,
            "items": [item.as_json() for item in self.items],
        }


def related_paragraph(related: list[Snippet], evidence: IssueEvidence) -> str:
    """Earlier reports that look related, linked, with how each was resolved (escaped)."""
    lines = ["Earlier reports that look related:", ""]
    lines += [related_line(snippet, evidence.repository) for snippet in related]
    return "\n".join(lines)


def left_out(
    name: PartName, why: str, score: float | None = None, floor: float | None = None
) -> Part:
    return Part(name, score, floor, left_out=why)


@dataclass(frozen=True)
class TriageParts:
    parts: tuple[Part, ...] = ()

    @property
    def kept(self) -> tuple[Part, ...]:
        return tuple(part for part in self.parts if part.kept)

    @property
    def left_out_count(self) -> int:
        return sum(1 for part in self.parts if not part.kept)

    def as_json(self) -> list[dict[str, Any]]:
        return [part.as_json() for part in self.parts]

    def without(self, name: PartName, why: str) -> TriageParts:
        """The parts with ``name`` left out (another step already shows it)."""
        return TriageParts(
            tuple(left_out(p.name, why) if p.name is name else p for p in self.parts)
        )

    def joined(
        self, action: ProposedAction, acceptance: Mapping[PartName, float] | None = None
    ) -> ProposedAction:
        """The branch's action with every kept part: labels added (once), each learned label
        with its rationale and confidence (``acceptance``: the measured acceptance of a part's
        score band, when known), paragraphs appended to the comment (or made the comment). A
        left-out part adds nothing, not even a note in the inbox: the run's record keeps why
        (``as_json``)."""
        learned = (label for part in self.kept for label in part.labels)
        labels = tuple(dict.fromkeys((*action.labels, *learned)))
        paragraphs = [p.paragraph for p in self.kept if p.paragraph]
        comment = action.comment
        if paragraphs:
            comment = _with_paragraphs(comment, paragraphs)
        notes = _label_notes(self.kept, action, acceptance or {})
        return replace(action, comment=comment, labels=labels, label_notes=notes)


def _label_notes(
    kept: tuple[Part, ...], action: ProposedAction, acceptance: Mapping[PartName, float]
) -> tuple[LabelNote, ...]:
    """A note per learned label the branch did not already propose (a rule's label has none)."""
    notes = {note.label: note for note in action.label_notes}
    for part in kept:
        for item in part.items if part.name is PartName.LABELS else ():
            if item.ref in action.labels or item.ref in notes:
                continue
            score = item.score if item.score is not None else part.score
            band = acceptance.get(part.name)
            notes[item.ref] = label_note(item.ref, item.why, score, part.floor, band)
    return tuple(notes.values())


def _with_paragraphs(comment: str | None, paragraphs: list[str]) -> str:
    """The parts' paragraphs after the comment's own, before its closing line."""
    if comment is None:
        return "\n\n".join(["Thanks for the report.", *paragraphs, SIGNATURE])
    blocks = comment.split("\n\n")
    if len(blocks) > 1 and blocks[-1].startswith("Drafted by ResolveFlow"):
        return "\n\n".join([*blocks[:-1], *paragraphs, blocks[-1]])
    return "\n\n".join([comment, *paragraphs])


# Who may be asked for the facts of a report: not the repository's own people, who file issues
# for each other and whose reports a maintainer reads with the context the request asks for.
MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


def missing_facts_part(title: str, body: str, author_association: str) -> Part:
    """The request for what a failure's report lacks (``missing_facts.py``), or why none."""
    if author_association.upper() in MAINTAINERS:
        return left_out(PartName.MISSING_FACTS, "the report is by one of the repository's own")
    read = read_facts(title, body)
    if not read.says_it_fails:
        return left_out(PartName.MISSING_FACTS, "the report does not say something fails")
    if not read.ask:
        given = len(MissingFact) - len(read.missing)
        return left_out(
            PartName.MISSING_FACTS, f"the report gives {given} of the 4 facts asked for"
        )
    items = tuple(PartItem(fact.value, why=REQUEST_WORDS[fact]) for fact in read.missing)
    return Part(PartName.MISSING_FACTS, None, None, items, request_text(read.missing))
