"""pytest plugin: a running ``FakeGitHubServer`` and a ``GitHubKitClient`` pointed at it.

Loaded from ``tests/conftest.py`` via ``pytest_plugins = ["fixtures_github"]``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from resolveflow.adapters.github import RepoName
from resolveflow.adapters.github_fake import FakeGitHubServer
from resolveflow.adapters.githubkit_client import GitHubKitClient

REPO = RepoName("acme", "widgets")
REPO_LABELS = ["bug", "ci-failure", "needs-triage", "question"]
ISSUE_NUMBER = 1
SERVICE_TOKEN = "service-token"
SERVICE_LOGIN = "resolveflow-bot"


@pytest.fixture
def fake_github() -> Iterator[FakeGitHubServer]:
    """A fresh fake GitHub with ``acme/widgets`` (four labels) and issue #1."""
    server = FakeGitHubServer(default_login=SERVICE_LOGIN)
    server.add_repo(REPO.full_name, REPO_LABELS)
    server.add_issue(
        REPO.full_name, ISSUE_NUMBER, "Widget crashes on start", "It crashes.", user="octocat"
    )
    server.register_token(SERVICE_TOKEN, SERVICE_LOGIN)
    with server:
        yield server


@pytest.fixture
def github_client(fake_github: FakeGitHubServer) -> Iterator[GitHubKitClient]:
    """The production client, with the service token and a 1 s timeout."""
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as client:
        yield client
