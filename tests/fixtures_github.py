"""pytest plugin: a running ``FakeGitHubServer`` and a ``GitHubKitClient`` pointed at it.

Loaded from ``tests/conftest.py`` via ``pytest_plugins = ["fixtures_github"]``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.sandbox.forge.server import FakeGitHubServer

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


# --- pull request and CI seeding (for the read methods) ------------------------------------

PR_NUMBER = 2
PR_HEAD_SHA = "3f786850e387550fdab836ed7e6dc881de23001b"


@pytest.fixture
def fake_github_ci(fake_github: FakeGitHubServer) -> FakeGitHubServer:
    """``fake_github`` plus pull request #2 (head ``PR_HEAD_SHA``) with a failing ``build``
    check run, a passing ``lint`` one, and a failed ``CI`` workflow run on the same commit."""
    fake_github.add_pull_request(
        REPO.full_name,
        PR_NUMBER,
        "Fix widget start-up",
        "Fixes #1",
        head_sha=PR_HEAD_SHA,
        user="contributor",
        head_ref="fix/start-up",
    )
    fake_github.add_check_run(
        REPO.full_name,
        PR_HEAD_SHA,
        "build",
        conclusion="failure",
        title="Build failed",
        summary="Process completed with exit code 1.",
    )
    fake_github.add_check_run(REPO.full_name, PR_HEAD_SHA, "lint")
    fake_github.add_workflow_run(
        REPO.full_name, "CI", head_sha=PR_HEAD_SHA, display_title="Fix widget start-up"
    )
    return fake_github
