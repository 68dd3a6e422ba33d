"""pytest plugin: the CLI in real processes, bound to a fresh database and the sandbox forge.

Loaded from ``tests/conftest.py`` via ``pytest_plugins``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from resolveflow.sandbox.forge.server import FakeGitHubServer


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(self, *args: str, token: str | None = None, ok: bool = True):  # type: ignore[no-untyped-def]
        env = dict(self.env)
        if token:
            env["RESOLVEFLOW_TOKEN"] = token
        result = subprocess.run(
            [sys.executable, "-m", "resolveflow", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        if ok:
            assert result.returncode == 0, result.stderr
        return result

    def json(self, *args: str, token: str | None = None):  # type: ignore[no-untyped-def]
        return json.loads(self.run(*args, "--json", token=token).stdout)

    def fails(self, *args: str, token: str | None = None, match: str) -> str:
        return one_line_error(self.run(*args, token=token, ok=False), match)

    def with_stdin(
        self, *args: str, stdin: str = "", **env: str
    ) -> subprocess.CompletedProcess[str]:
        """A command in a real process, ``stdin`` on its standard input, ``env`` added to the
        CLI's (a secret is given on stdin, never as an argument)."""
        return subprocess.run(
            [sys.executable, "-m", "resolveflow", *args],
            env={**self.env, **env},
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )


def one_line_error(result: subprocess.CompletedProcess[str], match: str) -> str:
    """The command failed with exactly one line on stderr, naming ``match``, and no traceback."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert match in lines[0], lines[0]
    return lines[0]


class InProcessCli(Cli):
    """The same commands through ``resolveflow.cli.main`` in this process: what the console
    script runs, minus the interpreter's start (about 2 s a command on a loaded 2-core machine).
    For modules that run dozens of read commands over one world; the start-up itself, exit
    codes on a real process and the import cost stay covered by the real-process tests."""

    def run(self, *args: str, token: str | None = None, ok: bool = True):  # type: ignore[no-untyped-def]
        from resolveflow.cli import main

        env = dict(self.env)
        if token:
            env["RESOLVEFLOW_TOKEN"] = token
        out, err = io.StringIO(), io.StringIO()
        with (
            _environment(env),
            _width(env.get("COLUMNS")),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = main(list(args))
        result = subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())
        if ok:
            assert result.returncode == 0, result.stderr
        return result


@contextlib.contextmanager
def _width(columns: str | None) -> Iterator[None]:
    """A new process's consoles read COLUMNS when they are made, at import; these were made
    already, so they are told."""
    from resolveflow.cli.output import console, err_console

    saved = [(c, c._width) for c in (console, err_console)]
    if columns and columns.isdigit():
        for c, _ in saved:
            c.width = int(columns)
    try:
        yield
    finally:
        for c, width in saved:
            c._width = width


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def cli(database_url: str, fake_github: FakeGitHubServer, tmp_path: Path) -> Cli:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=database_url,
        RESOLVEFLOW_GITHUB_API_URL=fake_github.url,
        RESOLVEFLOW_GITHUB_TOKEN="service-token",
        RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="2",
        RESOLVEFLOW_HOME=str(tmp_path / "home"),
        COLUMNS="200",
    )
    return Cli(env)


def _setup(cli: Cli) -> tuple[str, str]:
    assert cli.json("tenants", "add", "acme")["name"] == "acme"
    rita = cli.json("principals", "add", "--subject", "rita", "--role", "requester")["token"]
    alex = cli.json("principals", "add", "--subject", "alex", "--role", "approver")["token"]
    assert cli.json("repos", "add", "Acme/Widgets") == {"repository": "acme/widgets"}
    return rita, alex
