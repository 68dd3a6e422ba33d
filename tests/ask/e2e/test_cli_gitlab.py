"""The CLI end to end with the sandbox GitLab: store the tenant's token, prepare an issue from an
alias, approve its digest, execute once; the fake GitLab then holds exactly one issue."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.gitlab.server import FakeGitLabServer

TOKEN = "glpat-acme-bot"
POLICY = """
[tenants.acme.projects.ops]
forge = "gitlab"
project = "group/ops"
labels = ["ops"]
assignees = { alice = 12 }
"""


@pytest.fixture
def fake() -> Iterator[FakeGitLabServer]:
    with FakeGitLabServer() as server:
        server.state.add_user(7, "acme-bot", TOKEN)
        server.state.add_user(12, "alice")
        server.state.add_project(42, "group/ops", ["ops"], members=[7])
        yield server


def test_prepare_approve_execute_creates_one_gitlab_issue(
    cli: Cli, fake: FakeGitLabServer, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    cli.env.update(
        RESOLVEFLOW_GITLAB_URL=fake.url,
        RESOLVEFLOW_GITLAB_TIMEOUT_SECONDS="2",
        RESOLVEFLOW_POLICY_FILE=str(policy),
        RESOLVEFLOW_TOKEN_ENCRYPTION_KEY=Fernet.generate_key().decode(),
    )
    rita, alex = _setup(cli)
    stored = subprocess.run(
        [sys.executable, "-m", "resolveflow", "gitlab", "token", "set", "--tenant", "acme",
         "--stdin"],
        env=cli.env, input=TOKEN + "\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    assert TOKEN not in stored.stdout + stored.stderr
    body = tmp_path / "body.md"
    body.write_text("The disk on ops-3 is full.\n")

    cli.fails("issues", "prepare", "--project", "nope", "--title", "T", "--body-file", str(body),
              token=rita, match="unknown project alias 'nope'")  # fmt: skip
    cli.fails("issues", "prepare", "--project", "ops", "--title", "T", "--body-file", str(body),
              "--label", "secret", token=rita, match="label 'secret' is not allowed")  # fmt: skip
    cli.fails("issues", "prepare", "--project", "ops", "--title", "T", "--body-file", str(body),
              "--assignee", "mallory", token=rita, match="unknown assignee 'mallory'")  # fmt: skip

    printed = cli.run("issues", "prepare", "--project", "ops", "--title", "Disk nearly full",
                      "--body-file", str(body), token=rita).stdout  # fmt: skip
    shown = cli.json("proposals", "show", printed.split()[1], token=rita)
    assert printed == (  # the proposal printer, byte for byte (shared with `refine --propose`)
        f"proposal      {shown['id']}\n"
        f"digest        {shown['digest']}\n"
        f"target        {shown['summary']}\n"
        f"approve with  resolveflow approve {shown['id']} --digest {shown['digest']}\n"
    )
    assert shown["action"]["title"] == "Disk nearly full"  # the one just printed
    view = cli.json("issues", "prepare", "--project", "ops", "--title", "Disk full",
                    "--body-file", str(body), "--label", "ops", "--assignee", "alice",
                    token=rita)  # fmt: skip
    assert view["kind"] == "gitlab.issue_create"
    cli.run("execute", "--once", token=alex)
    assert fake.writes_received == 0  # not approved yet
    cli.run("approve", view["id"], "--digest", view["digest"], token=alex)
    cli.run("execute", "--once", token=alex)
    [issue] = fake.issues(42)
    assert issue["title"] == "Disk full"
    assert issue["labels"] == ["ops"] and [p["id"] for p in issue["assignees"]] == [12]
    assert (fake.writes_received, fake.writes_applied) == (1, 1)
