"""``resolveflow refine`` through the CLI's ``main`` in the test's process, against the test's
database, with a policy file naming a repository's clone (or none) and the fake embedder: the
``refine_cli`` fixture (``pytest_plugins = ["refine_cli"]``)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from resolveflow import cli

# (args, stdin, repository, clone) -> (exit code, standard output, standard error)
RefineCli = Callable[[list[str], str, str, Path | None], tuple[int, str, str]]


@pytest.fixture
def refine_cli(
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> RefineCli:
    """Runs ``resolveflow *args`` reading ``stdin``; ``clone`` is written as ``repository``'s
    ``refine.clone`` when given."""

    def run(
        args: list[str], stdin: str, repository: str, clone: Path | None
    ) -> tuple[int, str, str]:
        policy = tmp_path / "policy.toml"
        block = f'[repositories."{repository}".refine]\nclone = "{clone}"\n' if clone else ""
        policy.write_text(block, "utf-8")
        monkeypatch.setenv("RESOLVEFLOW_DATABASE_URL", database_url)
        monkeypatch.setenv("RESOLVEFLOW_EMBEDDER", "fake")
        monkeypatch.setenv("RESOLVEFLOW_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("RESOLVEFLOW_POLICY_FILE", str(policy))
        monkeypatch.setattr(cli, "configure_logging", lambda level: None)
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = cli.main(args)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
