"""Why a label or a close is proposed, and how sure: the rationale and confidence GitHub's issue
API carries beside each label and a closing state (the object form of ``PATCH .../issues/{n}``).

They are part of what a person approves (inside the digest), so they are validated like every
other approved text: one plain line, at most ``MAX_RATIONALE`` characters, no hidden marker.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from resolveflow.domain.vocabulary import Confidence
from resolveflow.gate.domain.actions.text import label_set, normalize_text, refuse_marker

# GitHub's limit for a rationale (its MCP server refuses longer ones before sending).
MAX_RATIONALE = 280


def rationale_text(value: str) -> str:
    """One line of at most ``MAX_RATIONALE`` characters, trimmed; never empty."""
    value = " ".join(normalize_text(value).split())
    if not value:
        raise ValueError("a rationale may not be empty")
    if len(value) > MAX_RATIONALE:
        raise ValueError(f"a rationale is at most {MAX_RATIONALE} characters")
    return refuse_marker(value, "rationale")


class LabelNote(BaseModel):
    """Why one proposed label, and how sure."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    rationale: str
    confidence: Confidence

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        return label_set((value,))[0]

    @field_validator("rationale")
    @classmethod
    def _rationale(cls, value: str) -> str:
        return rationale_text(value)

    def canonical(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence.value,
            "label": self.label,
            "rationale": self.rationale,
        }


def note_set(notes: tuple[LabelNote, ...], labels: tuple[str, ...]) -> tuple[LabelNote, ...]:
    """Sorted by label, one per label, each for a label of ``labels``."""
    by_label: dict[str, LabelNote] = {}
    for note in notes:
        if note.label in by_label:
            raise ValueError(f"label {note.label!r} has two notes")
        if note.label not in labels:
            raise ValueError(f"a note is for label {note.label!r}, which the action does not set")
        by_label[note.label] = note
    return tuple(by_label[label] for label in sorted(by_label))


def notes_kept(notes: tuple[LabelNote, ...], labels: tuple[str, ...]) -> list[dict[str, Any]]:
    """The notes of the labels an edited version still sets (an added label has none)."""
    kept = {normalize_text(label).strip() for label in labels}
    return [note.canonical() for note in notes if note.label in kept]
