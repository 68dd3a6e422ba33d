"""``github.issue_close_duplicate``: announce, then after a grace period close one issue as a
duplicate of another, unless someone objects meanwhile.

Its canonical form holds everything a person approves: the issue, the original it duplicates, the
exact notice comment and the grace period in hours (``{comment, grace_hours, kind, original,
target: {issue, repository}}``). The executor posts the notice (its hidden marker after a blank
line, as ``github.issue``), waits out the grace period without holding anything, re-reads the
issue and closes it as a duplicate only if nobody objected (``gate/domain/duplicates.py``).
``rationale`` and ``confidence`` (why it looks like a duplicate, how sure: ``intent.py``) go with
the close as GitHub's object form of ``state``; they join the canonical form only when set.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from resolveflow.domain.vocabulary import Confidence
from resolveflow.gate.domain.actions.github_issue import MAX_COMMENT_CHARS, IssueTarget
from resolveflow.gate.domain.actions.intent import rationale_text
from resolveflow.gate.domain.actions.text import normalize_text, refuse_marker

MIN_GRACE_HOURS = 1
MAX_GRACE_HOURS = 30 * 24  # a notice older than a month is no notice
DEFAULT_GRACE_HOURS = 3 * 24


def mentions(text: str, number: int) -> bool:
    """Whether ``text`` names issue ``number`` as ``#N`` (not ``#N0``): the notice must say which
    issue it points to, so a reader can object to the right one."""
    return re.search(rf"(?<![\w/])#{number}(?!\d)", text) is not None


def grace_words(hours: int) -> str:
    if hours % 24 == 0:
        days = hours // 24
        return f"{days} day{'s' if days != 1 else ''}"
    return f"{hours} hour{'s' if hours != 1 else ''}"


def default_notice(original: int, grace_hours: int) -> str:
    """The notice a person gets unless they write their own."""
    return (
        f"This issue looks like a duplicate of #{original}. It will be closed as a duplicate of "
        f"#{original} in {grace_words(grace_hours)} unless someone objects: comment here, react "
        "with a thumbs-down, edit or reopen it, and it stays open."
    )


class GitHubIssueCloseDuplicateAction(BaseModel):
    """Post a notice on one issue, then close it as a duplicate of ``original`` after
    ``grace_hours`` unless someone objected."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["github.issue_close_duplicate"] = "github.issue_close_duplicate"
    target: IssueTarget
    original: int = Field(gt=0, lt=2**31)
    comment: str
    grace_hours: int = Field(ge=MIN_GRACE_HOURS, le=MAX_GRACE_HOURS)
    rationale: str | None = None
    confidence: Confidence | None = None
    suggest: bool = False  # the close goes to GitHub as a suggestion a maintainer accepts

    @field_validator("rationale")
    @classmethod
    def _rationale(cls, value: str | None) -> str | None:
        return None if value is None else rationale_text(value)

    @field_validator("comment")
    @classmethod
    def _comment(cls, value: str) -> str:
        value = normalize_text(value).strip()
        if not value:
            raise ValueError("the notice comment may not be empty")
        if len(value) > MAX_COMMENT_CHARS:
            raise ValueError(f"comment is longer than {MAX_COMMENT_CHARS} characters")
        return refuse_marker(value, "comment")

    @model_validator(mode="after")
    def _points_elsewhere(self) -> GitHubIssueCloseDuplicateAction:
        if self.original == self.target.issue:
            raise ValueError("an issue cannot be a duplicate of itself")
        if not mentions(self.comment, self.original):
            raise ValueError(f"the notice comment must mention the original as #{self.original}")
        return self

    @property
    def labels(self) -> tuple[str, ...]:
        """It sets no labels (the rules every kind with labels follows see none)."""
        return ()

    @property
    def repository(self) -> str:
        return self.target.repository

    @property
    def summary(self) -> str:
        return f"{self.target.repository}#{self.target.issue} (duplicate of #{self.original})"

    def canonical(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "comment": self.comment,
            "grace_hours": self.grace_hours,
            "kind": self.kind,
            "original": self.original,
            "target": {"issue": self.target.issue, "repository": self.target.repository},
        }
        if self.rationale is not None:
            data["rationale"] = self.rationale
        if self.confidence is not None:
            data["confidence"] = self.confidence.value
        if self.suggest:
            data["suggest"] = True
        return data
