"""Canonical actions and the digest a person approves.

An action is what the executor may do to an outside system. Its canonical JSON is the exact text that
is hashed: two actions that mean the same thing (labels in another order, a repeated label, the same
text in another Unicode normal form or with CRLF line endings) share a digest; any change a reader
would notice (one character of the comment, the target, a label) gives another.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from resolveflow.errors import InvalidInput

ACTION_KIND: Literal["github.issue"] = "github.issue"
DIGEST_PATTERN = re.compile(r"^[0-9a-f]{64}$")
# GitHub's limit for a comment body is 65,536 characters; the executor appends its marker.
MAX_COMMENT_CHARS = 65_536 - 100
MAX_LABELS = 50
_REPO_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
# A hidden marker inside an approved body could make reconciliation believe another execution was
# sent, so bodies may not carry anything that looks like one.
MARKER_PREFIX = "<!-- resolveflow:"
_MARKER_LOOKALIKE = re.compile(r"<!--\s*resolveflow\s*:", re.IGNORECASE)


def normalize_text(text: str) -> str:
    """NFC, LF line endings. GitHub stores CRLF bodies as LF, so CRLF is not a real difference."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


def execution_marker(execution_id: str) -> str:
    return f"<!-- resolveflow:action={execution_id} -->"


def body_with_marker(comment: str, execution_id: str) -> str:
    """The exact text the executor posts: the approved comment, a blank line, the hidden marker."""
    return f"{comment}\n\n{execution_marker(execution_id)}"


class IssueTarget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str
    issue: int = Field(gt=0, lt=2**31)

    @field_validator("repository")
    @classmethod
    def _repository_shape(cls, value: str) -> str:
        if not _REPO_PATTERN.match(value) or value.rsplit("/", 1)[1] in {".", ".."}:
            raise ValueError(f"repository must look like OWNER/REPO, got {value!r}")
        # GitHub matches repository names case-insensitively; one spelling, one digest.
        return value.lower()


class GitHubIssueAction(BaseModel):
    """Comment on and/or label one GitHub issue or pull request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["github.issue"] = ACTION_KIND
    target: IssueTarget
    comment: str | None = None
    labels: tuple[str, ...] = ()

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
        if _MARKER_LOOKALIKE.search(value):
            raise ValueError("comment may not contain a ResolveFlow marker")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = {normalize_text(label).strip() for label in value}
        if "" in cleaned:
            raise ValueError("label names may not be empty")
        if any(len(label) > 100 or "\n" in label for label in cleaned):
            raise ValueError("label names are one line of at most 100 characters")
        if len(cleaned) > MAX_LABELS:
            raise ValueError(f"at most {MAX_LABELS} labels")
        return tuple(sorted(cleaned))

    @model_validator(mode="after")
    def _not_empty(self) -> GitHubIssueAction:
        if self.comment is None and not self.labels:
            raise ValueError("an action needs a comment, labels, or both")
        return self

    def canonical(self) -> dict[str, Any]:
        return {
            "comment": self.comment,
            "kind": self.kind,
            "labels": list(self.labels),
            "target": {"issue": self.target.issue, "repository": self.target.repository},
        }


def parse_action(data: Any) -> GitHubIssueAction:
    """Validate untrusted action data, turning pydantic's report into one readable error."""
    try:
        return GitHubIssueAction.model_validate(data)
    except ValueError as exc:
        raise InvalidInput(f"invalid action: {_first_error(exc)}") from exc


def build_action(
    repository: str, issue: int, comment: str | None, labels: list[str] | tuple[str, ...]
) -> GitHubIssueAction:
    return parse_action(
        {"target": {"repository": repository, "issue": issue}, "comment": comment, "labels": labels}
    )


def canonical_json(action: GitHubIssueAction) -> str:
    return json.dumps(action.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def action_digest(action: GitHubIssueAction) -> str:
    return hashlib.sha256(canonical_json(action).encode("utf-8")).hexdigest()


def check_digest_format(digest: str) -> str:
    value = digest.strip().lower()
    if value.startswith("sha256:"):
        value = value.removeprefix("sha256:")
    if not DIGEST_PATTERN.match(value):
        raise InvalidInput("a digest is 64 hexadecimal characters (SHA-256)")
    return value


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        details = errors()
        if details:
            first = details[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            message = str(first.get("msg", exc)).removeprefix("Value error, ")
            return f"{where}: {message}" if where else message
    return str(exc)
