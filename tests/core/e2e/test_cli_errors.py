"""The CLI's exit codes, as real processes on a real database: one ``error:`` line on stderr and the
exit code of the error's category (docs/errors.md), never a traceback. Usage errors (a missing or
bad option, an unknown command) are such a line too, and with ``--json`` every error is also one
JSON document on stdout."""

from __future__ import annotations

import json
import os
import socket
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
        assert "unexpected" not in lines[0] and "LOG_LEVEL" not in lines[0], lines[0]

    def fails_json(self, *args: str, code: int, kind: str, match: str, **env: str) -> None:
        """With ``--json``: exactly one JSON document on stdout naming the kind of error."""
        result = self.run(*args, "--json", **env)
        assert result.returncode == code, result.stderr
        document = json.loads(result.stdout)
        assert list(document) == ["error"] and set(document["error"]) == {"kind", "message"}
        assert document["error"]["kind"] == kind
        message = document["error"]["message"]
        assert match in message and "\n" not in message, message
        assert "Traceback" not in result.stderr


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


def _principal(cli: Cli) -> str:
    added = cli.run("tenants", "add", "acme", "--json")
    assert added.returncode == 0, added.stderr
    made = cli.run("principals", "add", "--subject", "rita", "--role", "requester", "--json")
    return str(json.loads(made.stdout)["token"])


def test_with_json_each_category_is_one_json_document(cli: Cli) -> None:
    token = _principal(cli)
    missing = str(uuid.uuid4())
    show = ("proposals", "show")
    cli.fails_json(
        *show, "nope", code=2, kind="invalid_input", match="not", RESOLVEFLOW_TOKEN=token
    )
    cli.fails_json(*show, missing, code=3, kind="not_found", match=missing, RESOLVEFLOW_TOKEN=token)
    cli.fails_json("proposals", "list", code=4, kind="forbidden", match="token")
    cli.fails_json("tenants", "add", "acme", code=5, kind="conflict", match="already exists")
    unreachable = "postgresql://nobody@127.0.0.1:1/none"
    cli.fails_json(
        "tenants",
        "list",
        code=6,
        kind="unavailable",
        match="",
        RESOLVEFLOW_DATABASE_URL=unreachable,
    )
    cli.fails_json(
        "tenants",
        "list",
        code=7,
        kind="configuration",
        match="RESOLVEFLOW_GITHUB_API_URL",
        RESOLVEFLOW_GITHUB_API_URL="ftp://x",
    )


# Usage errors happen before anything opens the database: the URL points nowhere on purpose.
USAGE_ERRORS = [
    (["proposals", "show"], "PROPOSAL_ID"),
    (["proposals", "create", "--repo", "a/b", "--issue", "abc"], "--issue"),
    (["principals", "add", "--role", "admin"], "--subject"),
    (["tenants", "list", "--bogus"], "--bogus"),
    (["aprove", "0123abcd"], "Did you mean 'approve'?"),
    (["tenants", "lst"], "Did you mean 'list'?"),
]


USAGE_IDS = [" ".join(args) for args, _ in USAGE_ERRORS]


@pytest.fixture
def bare_cli(tmp_path: Path) -> Cli:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL="postgresql://nobody@127.0.0.1:1/none",
        RESOLVEFLOW_HOME=str(tmp_path / "home"),
        COLUMNS="80",
    )
    return Cli(env)


@pytest.mark.parametrize(("args", "named"), USAGE_ERRORS, ids=USAGE_IDS)
def test_a_usage_error_is_one_line_that_names_the_option(
    bare_cli: Cli, args: list[str], named: str
) -> None:
    bare_cli.fails(*args, code=2, match=named)


@pytest.mark.parametrize(("args", "named"), USAGE_ERRORS, ids=USAGE_IDS)
def test_with_json_a_usage_error_is_one_json_document(
    bare_cli: Cli, args: list[str], named: str
) -> None:
    bare_cli.fails_json(*args, code=2, kind="usage", match=named)


def test_json_before_the_command_counts_too(bare_cli: Cli) -> None:
    result = bare_cli.run("--json", "proposals", "show")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["kind"] == "usage"


def test_serve_on_a_port_in_use_fails_at_once_naming_the_port_and_the_setting(cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli.run("serve", "--port", str(port))
    assert "serving on" not in result.stderr  # it never said it was serving
    cli_line = f"error: port {port} on 127.0.0.1 is already in use: pass --port N or set"
    assert result.stderr.startswith(cli_line), result.stderr
    assert "RESOLVEFLOW_WEB_PORT" in result.stderr
    assert (result.returncode, len(result.stderr.strip().splitlines())) == (7, 1), result.stderr
