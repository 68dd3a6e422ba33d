"""The GitHub protocol the rest of ResolveFlow depends on.

Implementations: ``githubkit_client.GitHubKitClient`` (real HTTP through githubkit) and, for tests,
the same client pointed at ``github_fake.FakeGitHubServer`` on loopback.

Error contract for every method (see ``domain.errors``):

- ``ProviderRateLimited``: 403/429 carrying rate-limit headers; nothing was written. Carries the wait.
- ``ProviderRejected``: any other definite 4xx; nothing was written. Carries the status.
- ``ProviderOutcomeUnknown``: timeout after the request was sent, 5xx, connection lost after sending,
  or a 2xx whose body is malformed. A write may have happened.
- ``ProviderUnavailable``: the request could not be sent at all (connection refused, DNS failure).
- ``InvalidInput``: the arguments are unusable (a path-like repository name, an empty body); raised
  before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from resolveflow.adapters.base import writes


@dataclass(frozen=True)
class RepoName:
    owner: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @classmethod
    def parse(cls, full_name: str) -> RepoName:
        owner, _, name = full_name.partition("/")
        return cls(owner=owner, name=name)


@dataclass(frozen=True)
class PostedComment:
    id: int
    url: str
    body: str


@dataclass(frozen=True)
class IssueComment:
    id: int
    body: str
    author: str
    url: str


class GitHub(Protocol):
    """What ResolveFlow needs from GitHub. ``token`` overrides the service token for one call."""

    def list_issue_comments(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[IssueComment]:
        """Every comment on the issue, following all pages."""
        ...

    def list_repository_labels(self, repo: RepoName, *, token: str | None = None) -> list[str]:
        """Names of every label defined in the repository, following all pages."""
        ...

    def list_issue_labels(
        self, repo: RepoName, issue_number: int, *, token: str | None = None
    ) -> list[str]:
        """Names of the labels currently on the issue."""
        ...

    def authenticated_login(self, *, token: str | None = None) -> str:
        """The GitHub login that ``token`` (or the service token) acts as."""
        ...

    @writes
    def post_comment(
        self, repo: RepoName, issue_number: int, body: str, *, token: str | None = None
    ) -> PostedComment:
        """Create one comment. Never retried inside the adapter."""
        ...

    @writes
    def add_labels(
        self, repo: RepoName, issue_number: int, labels: list[str], *, token: str | None = None
    ) -> list[str]:
        """Add labels to the issue; returns the issue's labels afterwards. Never retried inside."""
        ...
