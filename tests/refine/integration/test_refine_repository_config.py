"""Refine reads the ticket's repository's own ``.github/resolveflow.yml`` (issue 32, part 2), as
a triage run does: its ``refine`` section narrows the tenant's globs; a file that would widen
them is not applied at all. The file comes from the sandbox forge through the real client."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.bootstrap.refine import refine_policy
from resolveflow.config import Settings
from resolveflow.refine.domain.document import RefineDocument, Ticket, TicketSource
from resolveflow.sandbox.forge.server import FakeGitHubServer

pytest_plugins = ["fixtures_github"]

REPO = "acme/widgets"
PATH = ".github/resolveflow.yml"
POLICY = f"""[repositories."{REPO}".refine]
scopes = {{ frontend = ["web/**"], backend = ["server/**"] }}
include = ["web/**", "server/**"]
exclude = ["**/vendor/**"]
"""


def _doc(source: TicketSource = TicketSource.GITHUB) -> RefineDocument:
    ticket = Ticket(source=source, ref=f"{REPO}#1", repository=REPO, number=1, title="Crash")
    return RefineDocument(ticket=ticket)


def test_the_repository_file_narrows_refine_and_a_widening_one_is_not_applied(
    fake_github: FakeGitHubServer,
    github_client: GitHubKitClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(POLICY)
    monkeypatch.setenv("RESOLVEFLOW_POLICY_FILE", str(policy_file))
    policy = refine_policy(Settings(), lambda: github_client)

    before = policy(_doc()).file_rules()
    assert before.include == ("web/**", "server/**")

    fake_github.put_file(REPO, PATH, 'refine:\n  include: ["web/**"]\n  exclude: ["web/gen/**"]\n')
    narrowed = policy(_doc()).file_rules()
    assert narrowed.include == ("web/**",)
    assert set(narrowed.exclude) == {"**/vendor/**", "web/gen/**"}
    # A ticket that is not a GitHub issue never reads a repository's file.
    assert policy(_doc(TicketSource.TEXT)).file_rules().include == ("web/**", "server/**")

    fake_github.put_file(REPO, PATH, 'refine:\n  include: ["**"]\n')  # wider than the tenant's
    widened = policy(_doc()).file_rules()
    assert widened.include == ("web/**", "server/**")  # the tenant's policy alone


def test_a_nested_file_is_not_applied_and_refine_says_why(
    fake_github: FakeGitHubServer,
    github_client: GitHubKitClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(POLICY)
    monkeypatch.setenv("RESOLVEFLOW_POLICY_FILE", str(policy_file))
    policy = refine_policy(Settings(), lambda: github_client)
    # 64 KB nested 32,000 deep: refine (and the MCP refine tool) raised RecursionError
    fake_github.put_file(REPO, PATH, "[" * 32_000 + "]" * 32_000)
    with caplog.at_level(logging.WARNING, logger="resolveflow.bootstrap.refine"):
        rules = policy(_doc()).file_rules()
    assert rules.include == ("web/**", "server/**")  # the tenant's policy alone
    (record,) = [r for r in caplog.records if r.getMessage() == "repository config not applied"]
    assert record.__dict__["problem"] == (
        "`.github/resolveflow.yml` line 1: 0.0.0.0.0.0.0: nested deeper than 6 levels"
    )
