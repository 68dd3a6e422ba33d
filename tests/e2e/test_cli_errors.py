"""The CLI's exit codes, as real processes on a real database: one ``error:`` line on stderr and the
exit code of the error's category (docs/errors.md), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "resolveflow", *args],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    def fails(self, *args: str, code: int, match: str, **env: str) -> None:
        result = self.run(*args, **env)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert (result.returncode, len(lines)) == (code, 1), result.stderr
        assert lines[0].startswith("error: ") and match in lines[0], lines[0]
        assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.fixture
def cli(database_url: str, tmp_path: Path) -> Cli:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=database_url,
        RESOLVEFLOW_HOME=str(tmp_path / "home"),
        COLUMNS="80",  # narrow: a long message must still be one line
    )
    return Cli(env)


def test_each_category_has_its_exit_code(cli: Cli) -> None:
    added = cli.run("tenants", "add", "acme", "--json")
    assert added.returncode == 0, added.stderr
    made = cli.run("principals", "add", "--subject", "rita", "--role", "requester", "--json")
    token = json.loads(made.stdout)["token"]

    cli.fails(
        "proposals", "show", "not-a-uuid", code=2, match="not a valid id", RESOLVEFLOW_TOKEN=token
    )
    missing = str(uuid.uuid4())
    cli.fails(
        "proposals",
        "show",
        missing,
        code=3,
        match=f"no proposal {missing}",
        RESOLVEFLOW_TOKEN=token,
    )
    cli.fails("proposals", "list", code=4, match="token", RESOLVEFLOW_TOKEN="rf_not_a_real_token")
    cli.fails("tenants", "add", "acme", code=5, match="already exists")
    unreachable = "postgresql://nobody@127.0.0.1:1/none"
    cli.fails("tenants", "list", code=6, match="unreachable", RESOLVEFLOW_DATABASE_URL=unreachable)
    cli.fails(
        "tenants",
        "list",
        code=7,
        match="RESOLVEFLOW_GITHUB_API_URL",
        RESOLVEFLOW_GITHUB_API_URL="ftp://x",
    )
