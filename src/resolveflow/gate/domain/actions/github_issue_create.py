"""``github.issue_create``: open one new issue in a GitHub repository.

The executor appends its hidden marker to the end of the body; reconciliation looks for an issue
whose body is exactly the approved body plus that marker.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from resolveflow.domain.repository_names import repository_name
from resolveflow.gate.domain.actions.text import (
    issue_text,
    label_set,
    one_line_title,
)

MAX_TITLE_CHARS = 256
MAX_BODY_CHARS = 65_536 - 100  # GitHub's limit, less room for the marker
MAX_ASSIGNEES = 10  # GitHub accepts at most 10 assignees on an issue
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


class RepositoryTarget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str

    @field_validator("repository")
    @classmethod
    def _repository_shape(cls, value: str) -> str:
        return repository_name(value)


class GitHubIssueCreateAction(BaseModel):
    """Create one issue with a title, a body, and optionally labels and assignees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["github.issue_create"] = "github.issue_create"
    target: RepositoryTarget
    title: str
    body: str
    labels: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        return one_line_title(value, MAX_TITLE_CHARS)

    @field_validator("body")
    @classmethod
    def _body(cls, value: str) -> str:
        return issue_text(value, "body", MAX_BODY_CHARS)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return label_set(value)

    @field_validator("assignees")
    @classmethod
    def _assignees(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Logins are case-insensitive on GitHub: one spelling, one digest.
        logins = {login.strip().removeprefix("@").lower() for login in value}
        bad = sorted(login for login in logins if not _LOGIN.match(login))
        if bad:
            raise ValueError(f"not a GitHub login: {bad[0]!r}")
        if len(logins) > MAX_ASSIGNEES:
            raise ValueError(f"at most {MAX_ASSIGNEES} assignees")
        return tuple(sorted(logins))

    @property
    def repository(self) -> str:
        return self.target.repository

    @property
    def summary(self) -> str:
        return f"{self.target.repository} (new issue)"

    def canonical(self) -> dict[str, Any]:
        return {
            "assignees": list(self.assignees),
            "body": self.body,
            "kind": self.kind,
            "labels": list(self.labels),
            "target": {"repository": self.target.repository},
            "title": self.title,
        }
