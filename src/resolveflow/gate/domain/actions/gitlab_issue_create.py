"""``gitlab.issue_create``: open one new issue in a GitLab project.

Everything in it was resolved from the tenant's configuration (``service/issues_prepare``): the
project alias to the project's id and path, assignee names to user ids. The executor appends its
hidden marker to the end of the description; reconciliation looks for an issue whose description
is exactly the approved description plus that marker.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from resolveflow.gate.domain.actions.text import issue_text, label_set, one_line_title

MAX_TITLE_CHARS = 255  # GitLab's limit
MAX_DESCRIPTION_CHARS = 1_000_000 - 100  # GitLab's limit, less room for the marker
MAX_ASSIGNEES = 10
_PROJECT_PATH = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.][A-Za-z0-9_.-]*)+$")
_NAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,254}$")


class GitLabProjectTarget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    project_id: int = Field(gt=0)
    project: str  # path_with_namespace, as GitLab reported it when the proposal was prepared

    @field_validator("project")
    @classmethod
    def _path(cls, value: str) -> str:
        if len(value) > 255 or not _PROJECT_PATH.match(value):
            raise ValueError(f"project must look like GROUP/PROJECT, got {value!r}")
        return value.lower()  # GitLab paths are case-insensitive: one spelling, one digest


class GitLabAssignee(BaseModel):
    """A person as the tenant's alias map names them, and the GitLab user id that name maps to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    id: int = Field(gt=0)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip().removeprefix("@").lower()
        if not _NAME.match(value):
            raise ValueError(f"not an assignee name: {value!r}")
        return value


class GitLabIssueCreateAction(BaseModel):
    """Create one issue with a title, a description, and optionally labels and assignees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["gitlab.issue_create"] = "gitlab.issue_create"
    target: GitLabProjectTarget
    title: str
    description: str
    labels: tuple[str, ...] = ()
    assignees: tuple[GitLabAssignee, ...] = ()

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        return one_line_title(value, MAX_TITLE_CHARS)

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        return issue_text(value, "description", MAX_DESCRIPTION_CHARS)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any("," in label for label in value):
            raise ValueError("GitLab label names may not contain a comma")
        return label_set(value)

    @field_validator("assignees")
    @classmethod
    def _assignees(cls, value: tuple[GitLabAssignee, ...]) -> tuple[GitLabAssignee, ...]:
        by_id = {person.id: person for person in value}
        if len(by_id) != len({person.name for person in value}) or len(by_id) != len(set(value)):
            raise ValueError("each assignee once, one name per user id")
        if len(by_id) > MAX_ASSIGNEES:
            raise ValueError(f"at most {MAX_ASSIGNEES} assignees")
        return tuple(sorted(by_id.values(), key=lambda person: person.id))

    @property
    def repository(self) -> str:
        """Where it writes, spelled so that it never equals a GitHub repository's name."""
        return f"gitlab:{self.target.project}"

    @property
    def body(self) -> str:
        return self.description

    @property
    def assignee_ids(self) -> tuple[int, ...]:
        return tuple(person.id for person in self.assignees)

    @property
    def summary(self) -> str:
        return f"GitLab {self.target.project} (new issue)"

    def canonical(self) -> dict[str, Any]:
        return {
            "assignees": [{"id": p.id, "name": p.name} for p in self.assignees],
            "description": self.description,
            "kind": self.kind,
            "labels": list(self.labels),
            "target": {"project": self.target.project, "project_id": self.target.project_id},
            "title": self.title,
        }
