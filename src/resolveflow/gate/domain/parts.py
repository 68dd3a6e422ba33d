"""The parts of a product's suggestion as the gate sees them (pure): each part's record (its
kind, score, floor, public or internal, the paragraph it added to the comment), how a decision
on the proposal decides each part, and what dropping parts before approving changes.

A triage run's result is made of parts (labels, related issues, likely files, a request for the
missing facts...). The team decides one proposal, but each public part is its own suggestion:
its paragraph still in the approved comment word for word was approved, changed was edited,
gone was rejected; a rejected proposal rejects them all. Internal parts (likely files) are never
posted, so no decision says anything about them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from resolveflow.domain.vocabulary import SuggestionKind, SuggestionOutcome
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions import ActionChanges

# How a product's comment made only of parts opens and closes (triage's frame): once every part
# is dropped, what is left says nothing, and the comment goes with them.
GREETING = "Thanks for the report."
SIGNATURE = "Drafted by ResolveFlow and approved by a maintainer."
_ITEM_LINE = "- "  # a paragraph that lists its items, one a line


@dataclass(frozen=True)
class PartItemRecord:
    ref: str  # a label, an issue, a file, a missing fact
    score: float | None = None
    why: str = ""
    line: str | None = None  # its line in the part's paragraph, when it has one of its own

    def as_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "score": self.score, "why": self.why, "line": self.line}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartItemRecord:
        score = data.get("score")
        line = data.get("line")
        return cls(
            str(data.get("ref", "")),
            float(score) if isinstance(score, int | float) else None,
            str(data.get("why") or ""),
            line if isinstance(line, str) else None,
        )


@dataclass(frozen=True)
class PartRecord:
    """One part of a run's result, as stored (``triage_parts``)."""

    name: str  # the product's name for it (triage's ``PartName``)
    kind: SuggestionKind | None  # what its decisions count as; None: the branch's
    score: float | None
    floor: float | None
    left_out: str | None  # why it is not shown; None: kept
    public: bool  # in the proposal (labels, a paragraph); False: shown to the team only
    paragraph: str | None = None  # the Markdown it added to the comment, as proposed
    items: tuple[PartItemRecord, ...] = ()

    @property
    def kept(self) -> bool:
        return self.left_out is None

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(i.ref for i in self.items) if self.kind is SuggestionKind.LABEL else ()


def paragraph_outcome(paragraph: str, comment: str | None) -> SuggestionOutcome:
    """A part's paragraph in an approved comment: there word for word (approved), some of its
    lines still there (edited: a link dropped, a word changed), or none (rejected)."""
    text = comment or ""
    if paragraph in text:
        return SuggestionOutcome.APPROVED
    kept = set(text.splitlines())
    lines = [line for line in paragraph.splitlines() if line.strip()]
    if any(line in kept for line in lines):
        return SuggestionOutcome.EDITED
    return SuggestionOutcome.REJECTED


@dataclass(frozen=True)
class PartDecision:
    name: str
    kind: SuggestionKind
    score: float | None
    outcome: SuggestionOutcome


def decided_parts(
    parts: Sequence[PartRecord], approved: bool, comment: str | None
) -> list[PartDecision]:
    """Each kept public part with a paragraph and a kind of its own, and how the decision
    decided it (labels are decided one by one, as every proposal's are)."""
    found = []
    for part in parts:
        if not (part.kept and part.public and part.paragraph) or part.kind is None:
            continue
        if part.kind is SuggestionKind.LABEL:
            continue
        outcome = (
            paragraph_outcome(part.paragraph, comment) if approved else SuggestionOutcome.REJECTED
        )
        found.append(PartDecision(part.name, part.kind, part.score, outcome))
    return found


def label_scores(parts: Sequence[PartRecord]) -> dict[str, float]:
    """Each learned label's own score (what its floor is fitted from)."""
    return {
        item.ref: item.score
        for part in parts
        if part.kept
        for item in part.items
        if part.kind is SuggestionKind.LABEL and item.score is not None
    }


@dataclass(frozen=True)
class Drops:
    """What an approver takes out of a proposal before approving: whole parts (their paragraph
    and, for the labels part, its labels), single labels, single items of a part (a link)."""

    parts: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    items: tuple[str, ...] = ()  # "PART:REF", e.g. "related:123"

    @property
    def empty(self) -> bool:
        return not (self.parts or self.labels or self.items)


def dropped(
    comment: str | None,
    labels: Sequence[str],
    parts: Sequence[PartRecord],
    drops: Drops,
) -> ActionChanges:
    """The changes that take ``drops`` out of a version (its comment and labels). A part, a
    label or an item that is not in it is an error naming it, never a silent no-op."""
    if drops.empty:
        raise InvalidInput("nothing to drop: name a part, a label or an item")
    by_name = {part.name: part for part in parts if part.kept and part.public}
    text = comment or ""
    taken_labels = set(drops.labels)
    for name in drops.parts:
        part = by_name.get(name)
        if part is None:
            names = ", ".join(sorted(by_name)) or "none"
            raise InvalidInput(f"no part {name!r} in this proposal (its parts: {names})")
        taken_labels.update(part.labels)
        if part.paragraph:
            text = _without_block(text, part.paragraph, name)
    for spec in drops.items:
        text = _without_item(text, spec, by_name)
    missing = taken_labels.difference(labels).difference(
        label for name in drops.parts for label in by_name[name].labels
    )
    if missing:
        raise InvalidInput(f"the proposal has no label {sorted(missing)[0]!r}")
    kept_labels = tuple(label for label in labels if label not in taken_labels)
    new_comment = "" if _only_frame(text) else text
    return ActionChanges(
        comment=new_comment if new_comment != (comment or "") else None,
        labels=kept_labels if len(kept_labels) != len(labels) else None,
    )


def _without_block(text: str, paragraph: str, name: str) -> str:
    if paragraph not in text:
        raise InvalidInput(
            f"the {name} part's paragraph was changed by an edit: edit the comment instead"
        )
    return _tidy(text.replace(paragraph, "", 1))


def _without_item(text: str, spec: str, parts: dict[str, PartRecord]) -> str:
    name, _, ref = spec.partition(":")
    part = parts.get(name)
    item = next((i for i in part.items if i.ref == ref), None) if part else None
    if part is None or item is None:
        raise InvalidInput(f"no item {spec!r} in this proposal (PART:REF, e.g. related:123)")
    if item.line is None:
        raise InvalidInput(f"{spec!r} has no line of its own: drop the {name} part instead")
    lines = text.split("\n")
    if item.line not in lines:
        raise InvalidInput(f"{spec!r} is not in this version (dropped or changed by an edit)")
    lines.remove(item.line)
    head = (part.paragraph or "").split("\n", 1)[0]
    if head and head in lines and not any(i.line in lines for i in part.items if i.line):
        lines.remove(head)  # its last item gone, the part's heading says nothing
    return _tidy("\n".join(lines))


def _tidy(text: str) -> str:
    """Blocks separated by one blank line again, once something between them is gone."""
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def _only_frame(text: str) -> bool:
    blocks = [block.strip() for block in text.split("\n\n") if block.strip()]
    return all(block == GREETING or block.startswith(SIGNATURE) for block in blocks)


def item_lines(paragraph: str | None, count: int) -> list[str | None]:
    """Each item's own line in a paragraph that lists its items one per ``- `` line, in order;
    None for each when the paragraph does not."""
    lines = [line for line in (paragraph or "").splitlines() if line.startswith(_ITEM_LINE)]
    if len(lines) != count:
        return [None] * count
    return list(lines)


def in_version(part: PartRecord, comment: str | None, labels: Sequence[str]) -> bool:
    """Whether a kept public part is still in a version: its paragraph word for word, or (the
    labels part) any of its labels. What is no longer there cannot be dropped again."""
    if not (part.kept and part.public):
        return False
    if part.paragraph:
        return part.paragraph in (comment or "")
    return any(label in labels for label in part.labels)


def item_in_version(
    part: PartRecord, item: PartItemRecord, comment: str | None, labels: Sequence[str]
) -> bool:
    if part.labels:
        return item.ref in labels
    return item.line is not None and item.line in (comment or "").split("\n")
