"""The top-level command group, which imports a command's module only when that command runs.

Most commands need the database layer, some the triage graph, the search index or the web app;
importing all of them costs about a second on every start, ``--help`` included. The group knows
each command's name and one-line help up front (``Entry``), lists them from that, and builds the
real Click command from its Typer app or function the first time it is asked for it.

Every command it builds also gets help pages without type labels (``plain_help``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

import typer
import typer.main
from typer._click import Context
from typer._click import exceptions as click_errors
from typer._click.core import Command
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption


@dataclass(frozen=True)
class Entry:
    """A top-level command: where it lives (``module:attribute``, a ``typer.Typer`` or a command
    function; or a function returning either) and the help line ``resolveflow --help`` shows."""

    name: str
    help: str
    target: str | Callable[[], Any]

    def load(self) -> Command:
        if callable(self.target):
            found = self.target()
        else:
            module, _, attribute = self.target.partition(":")
            found = getattr(importlib.import_module(module), attribute)
        command: Command
        if isinstance(found, typer.Typer):
            # Always a group, even for an app with one command (Typer would return the command).
            command = typer.main.get_group(found)
        else:
            single = typer.Typer()
            single.command(self.name)(found)
            command = typer.main.get_command(single)
        command.name = self.name
        return plain_help(command)


class LazyGroup(TyperGroup):
    """A ``TyperGroup`` whose commands come from ``entries`` (set by a subclass), loaded on first
    use; commands registered on the Typer app itself (tests do) are kept as well."""

    entries: Sequence[Entry] = ()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._by_name = {entry.name: entry for entry in self.entries}
        self._listing = False
        plain_help(self)

    def list_commands(self, ctx: Context) -> list[str]:
        extra = [name for name in self.commands if name not in self._by_name]
        return [entry.name for entry in self.entries] + extra

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        entry = self._by_name.get(cmd_name)
        if entry is None:
            return None
        if self._listing:  # the help page needs the name and the help line only
            return TyperCommand(entry.name, help=entry.help)
        self.commands[cmd_name] = entry.load()
        return self.commands[cmd_name]

    def format_help(self, ctx: Context, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name = args[0]
        if self.get_command(ctx, name) is None and not name.startswith("-"):
            message = f"No such command {name!r}."
            close = get_close_matches(name, self.list_commands(ctx), n=1)
            if close:
                message += f" Did you mean {close[0]!r}?"
            raise click_errors.UsageError(message, ctx)
        return super().resolve_command(ctx, args)


# --- help pages without type labels ----------------------------------------------------------
#
# Typer 0.29 prints a type label after every option and argument (``--json <bool>``,
# ``--label <list[str]>``). A flag needs no placeholder at all; a valued option reads better with
# a word for its value. Typer creates every parameter itself, so instead of passing a metavar to
# each option, the built command tree is walked once and its parameters get these two classes,
# which differ from Typer's only in what the help page shows.

NUMBER = "N"
PATH = "PATH"


class _PlainOption(TyperOption):
    def display_type_rich(self, ctx: Context) -> str | None:
        return None if self.is_flag else self.metavar


class _PlainArgument(TyperArgument):
    def display_type_rich(self, ctx: Context) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        # Typer writes a required argument as {NAME}; the usual convention is NAME, [NAME] when
        # it may be left out.
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name if self.nargs == 1 else f"{name}..."


def plain_help(command: Command) -> Command:
    """Give ``command`` and every command under it help pages without type labels."""
    for param in [*command.params, command.get_help_option(Context(command))]:
        if isinstance(param, TyperOption):
            param.__class__ = _PlainOption
            if not param.is_flag and param.metavar is None:
                param.metavar = _placeholder(param)
        elif isinstance(param, TyperArgument):
            param.__class__ = _PlainArgument
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)
    return command


def _placeholder(option: TyperOption) -> str:
    described = option.type_descriptor
    if described.is_choice and described.choices:
        return "|".join(str(getattr(c, "value", c)) for c in described.choices)
    if described.is_path:
        return PATH
    if described.is_datetime:
        return "TIME"
    annotation = described.annotation
    if annotation in (int, float):
        return NUMBER
    longest = max(option.opts, key=len)
    return longest.lstrip("-").replace("-", "_").upper()
