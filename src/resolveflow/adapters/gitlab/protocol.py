"""What ResolveFlow needs from GitLab, and nothing more.

The error contract is GitHub's (``adapters.github``): ``ProviderRateLimited`` and
``ProviderRejected`` mean nothing was written, ``ProviderUnavailable`` that the request never left,
``ProviderOutcomeUnknown`` that a write may have landed. The one write is marked ``@writes``, so
the layering check lets only ``resolveflow.gate`` call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from resolveflow.adapters.base import writes


@dataclass(frozen=True)
class GitLabProject:
    id: int
    path: str  # path_with_namespace, e.g. group/ops
    url: str  # web_url


@dataclass(frozen=True)
class GitLabIssue:
    """An issue as ``GET /projects/:id/issues`` describes it."""

    iid: int  # the number people see, per project
    title: str
    description: str  # "" when GitLab says null
    author_id: int
    author: str  # username
    labels: tuple[str, ...]
    assignee_ids: tuple[int, ...]
    created_at: datetime
    url: str  # web_url


class GitLab(Protocol):
    def project(self, project: int | str) -> GitLabProject:
        """A project by id or by its full path."""
        ...

    def project_labels(self, project_id: int) -> list[str]:
        """Every label name the project can use (every page)."""
        ...

    def user_id(self, username: str) -> int | None:
        """The id of the user with this username, or None when there is none."""
        ...

    def current_user(self) -> tuple[int, str]:
        """(id, username) of the account the token belongs to."""
        ...

    def issues_created_since(self, project_id: int, since: datetime) -> list[GitLabIssue]:
        """Every issue of the project created at or after ``since``, every page, newest first."""
        ...

    def issue(self, project_id: int, iid: int) -> GitLabIssue:
        """One issue by its number in the project (refine reads a ticket with it)."""
        ...

    @writes
    def create_issue(
        self,
        project_id: int,
        *,
        title: str,
        description: str,
        labels: list[str],
        assignee_ids: list[int],
    ) -> GitLabIssue:
        """Open one issue. Exactly one POST; never retried here."""
        ...
