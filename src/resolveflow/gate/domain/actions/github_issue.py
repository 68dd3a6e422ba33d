"""``github.issue``: a comment and/or labels on one existing GitHub issue or pull request.

Its canonical form (and so every stored digest) is the one ResolveFlow has used from the start:
``{comment, kind, labels, target: {issue, repository}}``; tests/data/github_issue_digests_v1.json
pins it. ``notes`` (each label's rationale and confidence, ``intent.py``) and ``suggest`` (the
labels go as GitHub suggestions) are added to it only when set, so every digest made before they
existed is unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from resolveflow.domain.repository_names import repository_name
from resolveflow.gate.domain.actions.intent import LabelNote, note_set
from resolveflow.gate.domain.actions.text import (
    label_set,
    normalize_text,
    refuse_marker,
)

# GitHub's limit for a comment body is 65,536 characters; the executor appends its marker.
MAX_COMMENT_CHARS = 65_536 - 100


class IssueTarget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str
    issue: int = Field(gt=0, lt=2**31)

    @field_validator("repository")
    @classmethod
    def _repository_shape(cls, value: str) -> str:
        return repository_name(value)


class GitHubIssueAction(BaseModel):
    """Comment on and/or label one GitHub issue or pull request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["github.issue"] = "github.issue"
    target: IssueTarget
    comment: str | None = None
    labels: tuple[str, ...] = ()
    notes: tuple[LabelNote, ...] = ()  # why each label, and how sure; not every label has one
    # the labels go to GitHub as suggestions a maintainer accepts or dismisses there
    suggest: bool = False

    @field_validator("comment")
    @classmethod
    def _comment(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = normalize_text(value)
        if not value.strip():
            return None
        if len(value) > MAX_COMMENT_CHARS:
            raise ValueError(f"comment is longer than {MAX_COMMENT_CHARS} characters")
        return refuse_marker(value, "comment")

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return label_set(value)

    @field_validator("notes")
    @classmethod
    def _notes(cls, value: tuple[LabelNote, ...], info: ValidationInfo) -> tuple[LabelNote, ...]:
        return note_set(value, info.data.get("labels", ()))

    @model_validator(mode="after")
    def _not_empty(self) -> GitHubIssueAction:
        if self.comment is None and not self.labels:
            raise ValueError("an action needs a comment, labels, or both")
        return self

    def note_for(self, label: str) -> LabelNote | None:
        return next((note for note in self.notes if note.label == label), None)

    @property
    def repository(self) -> str:
        return self.target.repository

    @property
    def summary(self) -> str:
        return f"{self.target.repository}#{self.target.issue}"

    def canonical(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "comment": self.comment,
            "kind": self.kind,
            "labels": list(self.labels),
            "target": {"issue": self.target.issue, "repository": self.target.repository},
        }
        if self.notes:
            data["notes"] = [note.canonical() for note in self.notes]
        if self.suggest:
            data["suggest"] = True
        return data
