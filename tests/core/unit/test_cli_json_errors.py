"""``--json`` failures that a real process cannot easily reach (a bug, Ctrl-C), in process: one
JSON document on stdout with the kind, the one ``error:`` line on stderr, the exit code."""

from __future__ import annotations

import json

import pytest
import typer

import resolveflow.cli as cli


def _run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: BaseException
) -> tuple[int, dict[str, dict[str, str]], list[str]]:
    failing = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @failing.command()
    def boom(as_json: bool = typer.Option(False, "--json")) -> None:
        raise exc

    @failing.command()
    def other() -> None:
        pass

    monkeypatch.setattr(cli, "app", failing)
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)
    code = cli.main(["boom", "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err.splitlines()


def test_a_bug_is_kind_unexpected(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document, err = _run(monkeypatch, capsys, KeyError("missing"))
    assert code == 1 and document["error"]["kind"] == "unexpected"
    assert document["error"]["message"].startswith("unexpected KeyError")
    assert len(err) == 1 and err[0].startswith("error: unexpected KeyError")


def test_ctrl_c_is_kind_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document, err = _run(monkeypatch, capsys, KeyboardInterrupt())
    assert (code, document) == (130, {"error": {"kind": "interrupted", "message": "interrupted"}})
    assert err == ["error: interrupted"]


def test_a_command_that_exits_with_a_code_keeps_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = typer.Typer(add_completion=False)

    @failing.command()
    def partly() -> None:
        raise typer.Exit(4)

    @failing.command()
    def other() -> None:
        pass

    monkeypatch.setattr(cli, "app", failing)
    assert cli.main(["partly"]) == 4
