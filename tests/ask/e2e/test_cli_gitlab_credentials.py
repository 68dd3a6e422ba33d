"""`resolveflow execute` asks a GitLab execution for the tenant's GitLab token, not a GitHub one:
without it (or without the GitLab URL) it refuses up front, exit 7, the setting named, nothing
sent and the execution still pending; once it is there the issue is created once, with no GitHub
token at all, and `proposals show` / `executions show` say where, as whom, and link it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
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
"""
NO_CREDENTIAL = 7  # ConfigError's exit code (docs/cli.md)


@pytest.fixture
def fake() -> Iterator[FakeGitLabServer]:
    with FakeGitLabServer() as server:
        server.state.add_user(7, "acme-bot", TOKEN)
        server.state.add_project(42, "group/ops", ["ops"], members=[7])
        yield server


def store_token(cli: Cli) -> None:
    stored = subprocess.run(
        [sys.executable, "-m", "resolveflow", "gitlab", "token", "set", "--tenant", "acme",
         "--stdin"],
        env=cli.env, input=TOKEN + "\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert stored.returncode == 0, stored.stderr


def refused(cli: Cli, token: str) -> str:
    result = cli.run("execute", "--once", token=token, ok=False)
    assert result.returncode == NO_CREDENTIAL, (result.returncode, result.stderr)
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    return line


def test_execute_needs_the_tenants_gitlab_token_not_a_github_one(
    cli: Cli, fake: FakeGitLabServer, tmp_path: Path, superuser: psycopg.Connection[Any]
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
    store_token(cli)
    body = tmp_path / "body.md"
    body.write_text("The disk on ops-3 is full.\n")
    view = cli.json("issues", "prepare", "--project", "ops", "--title", "Disk full",
                    "--body-file", str(body), "--label", "ops", token=rita)  # fmt: skip
    cli.run("approve", view["id"], "--digest", view["digest"], token=alex)
    del cli.env["RESOLVEFLOW_GITHUB_TOKEN"]  # GitLab never needs it
    superuser.execute("DELETE FROM gitlab_tokens")  # the tenant's token is gone
    before = len(fake.requests)

    line = refused(cli, alex)
    assert "gitlab token set --tenant acme" in line and "GitHub" not in line, line
    without_url = {k: v for k, v in cli.env.items() if k != "RESOLVEFLOW_GITLAB_URL"}
    cli.env, kept = without_url, cli.env
    assert "set RESOLVEFLOW_GITLAB_URL" in refused(cli, alex)
    cli.env = kept
    assert len(fake.requests) == before and fake.issues(42) == []  # nothing sent, not even a GET
    show = cli.json("proposals", "show", view["id"], token=alex)
    assert show["execution"]["state"] == "pending"

    store_token(cli)
    cli.run("execute", "--once", token=alex)
    [issue] = fake.issues(42)
    assert (fake.writes_received, fake.writes_applied) == (1, 1)
    shown = cli.run("proposals", "show", view["id"], token=alex).stdout
    said = "created issue #1 in group/ops as @acme-bot at "
    assert said in shown and issue["web_url"] in shown, shown
    execution_id = show["execution"]["id"]
    outcome = cli.json("executions", "show", execution_id, token=alex)["outcome"]
    assert outcome["text"].startswith(said) and outcome["text"].endswith(issue["web_url"])
