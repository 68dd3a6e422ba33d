"""The CLI's lazy registry (``resolveflow.cli.COMMANDS``) against the commands themselves: every
entry loads, its help line is the command's own, and no Typer app of a command module is left out.
The help pages' placeholders (``cli/lazy.py``) are checked here in process too."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import typer
from typer._click import Context
from typer.core import TyperArgument, TyperOption

import resolveflow.cli as cli
from resolveflow.cli.lazy import plain_help


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())


@pytest.mark.parametrize("entry", cli.COMMANDS, ids=lambda entry: entry.name)
def test_each_entry_loads_with_the_commands_own_help_line(entry: cli.Entry) -> None:
    command = entry.load()
    assert command.name == entry.name
    assert _first_paragraph(command.help) == entry.help


def test_every_typer_app_of_the_command_modules_is_reachable() -> None:
    reachable: set[int] = set()
    for entry in cli.COMMANDS:
        target = entry.target() if callable(entry.target) else None
        if target is None:
            module, _, attribute = str(entry.target).partition(":")
            target = getattr(importlib.import_module(module), attribute)
        reachable.add(id(target))
        if isinstance(target, typer.Typer):
            reachable.update(id(group.typer_instance) for group in target.registered_groups)
    package = cli.__path__
    for info in pkgutil.iter_modules(package, "resolveflow.cli."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, typer.Typer) and value is not cli.app:
                assert id(value) in reachable, f"{info.name}.{name} is not in cli.COMMANDS"


def test_every_parameter_gets_a_placeholder_or_none() -> None:
    for entry in cli.COMMANDS:
        _check(entry.load())


def _check(command: object) -> None:
    params = list(getattr(command, "params", []))
    for param in params:
        if isinstance(param, TyperOption):
            shown = param.display_type_rich(Context(command))  # type: ignore[arg-type]
            assert (shown is None) == param.is_flag, param.opts
            assert shown is None or (shown.upper() == shown or "|" in shown), shown
        elif isinstance(param, TyperArgument):
            assert param.metavar and param.metavar.isupper(), param.name
    for sub in getattr(command, "commands", {}).values():
        _check(sub)


def test_plain_help_is_idempotent() -> None:
    command = cli.COMMANDS[0].load()
    assert plain_help(plain_help(command)) is command
