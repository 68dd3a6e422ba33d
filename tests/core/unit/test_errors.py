"""The error tree: every error class ResolveFlow defines sits under exactly one category, and both
edges (HTTP statuses, CLI exit codes) map every one of them to something other than "internal"."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

import resolveflow
import resolveflow.cli as cli
from resolveflow import errors as e
from resolveflow.web.errors import status_for

# The sandbox stands alone (the fake forge raises only to its own HTTP server); importing
# __main__ would run the CLI.
SKIPPED = ("resolveflow.sandbox", "resolveflow.__main__")


def _modules() -> Iterator[str]:
    for info in pkgutil.walk_packages(resolveflow.__path__, "resolveflow."):
        if not info.name.startswith(SKIPPED):
            yield info.name


def _classes_defined_in_resolveflow() -> list[type]:
    found: dict[str, type] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return list(found.values())


ALL_CLASSES = _classes_defined_in_resolveflow()
ERRORS = sorted(
    {cls for cls in ALL_CLASSES if issubclass(cls, e.ResolveFlowError)} - {e.ResolveFlowError},
    key=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
)


def _id(cls: type) -> str:
    return cls.__qualname__


def _instance(cls: type[e.ResolveFlowError]) -> e.ResolveFlowError:
    # Some errors need keyword arguments; the edges look only at the type.
    return cls.__new__(cls)


def test_the_walk_finds_the_errors_defined_outside_errors_py() -> None:
    names = {cls.__qualname__ for cls in ERRORS}
    assert {
        "LimitExceeded",
        "SignatureInvalid",
        "TokenUnreadable",
        "EmbeddingSpaceMismatch",
        "CrawlRateLimited",
        "CsrfRefused",
        "SignInRefused",
    } <= names
    assert len(ERRORS) >= 35


@pytest.mark.parametrize("cls", ERRORS, ids=_id)
def test_each_error_is_in_exactly_one_category(cls: type[e.ResolveFlowError]) -> None:
    categories = [kind for kind in e.CATEGORIES.values() if issubclass(cls, kind)]
    assert len(categories) == 1, categories
    assert cls.category is not None and e.CATEGORIES[cls.category] is categories[0]


@pytest.mark.parametrize("cls", ERRORS, ids=_id)
def test_each_error_maps_to_a_real_status_and_exit_code(cls: type[e.ResolveFlowError]) -> None:
    exc = _instance(cls)
    assert 400 <= status_for(exc) < 600 and status_for(exc) != 500
    assert cli.exit_code_for(exc) not in (0, 1)


def test_no_exception_class_outside_the_tree() -> None:
    """An exception class of our own that is not a ResolveFlowError reaches the edges as a 500
    page or an "unexpected" exit."""
    strays = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in ALL_CLASSES
        if issubclass(cls, BaseException) and not issubclass(cls, e.ResolveFlowError)
    ]
    assert strays == []


def test_the_categories_sit_directly_under_the_base() -> None:
    assert set(e.CATEGORIES) == set(e.ErrorCategory)
    for category, kind in e.CATEGORIES.items():
        assert kind.__bases__ == (e.ResolveFlowError,)
        assert kind.category is category
    assert e.ConfigError is e.ConfigurationError


@pytest.mark.parametrize(
    ("cls", "status", "code"),
    [
        (e.InvalidInput, 400, 2),
        (e.NotFound, 404, 3),
        (e.AuthenticationFailed, 401, 4),
        (e.NotAuthorized, 403, 4),
        (e.PolicyViolation, 403, 4),
        (e.DigestMismatch, 409, 5),
        (e.ApprovalExpired, 410, 5),
        (e.StoreUnavailable, 503, 6),
        (e.ProviderRejected, 502, 6),
        (e.ProviderOutcomeUnknown, 502, 6),
        (e.ProviderRateLimited, 503, 6),
        (e.ConfigError, 503, 7),
    ],
    ids=lambda value: getattr(value, "__qualname__", str(value)),
)
def test_the_mapping_at_both_edges(cls: type[e.ResolveFlowError], status: int, code: int) -> None:
    assert (status_for(_instance(cls)), cli.exit_code_for(_instance(cls))) == (status, code)


def test_the_more_exact_http_statuses_defined_elsewhere() -> None:
    by_name = {cls.__qualname__: cls for cls in ERRORS}
    expected = {
        "SignatureInvalid": 401,
        "LimitExceeded": 429,
        "ModelTimeout": 504,
        "ModelUnavailable": 503,
        "ModelOutputInvalid": 502,
        "CrawlRateLimited": 503,
        "EmbeddingSpaceMismatch": 503,
        "CsrfRefused": 403,
    }
    assert {name: status_for(_instance(by_name[name])) for name in expected} == expected


def test_every_daily_limit_is_one_error_with_one_mapping_at_each_edge() -> None:
    # Runs started and model calls alike: LimitExceeded, 429 on the web, "unavailable" (6) in the
    # CLI; no second "budget spent" class that an edge could map differently.
    from resolveflow.accounts.limits import LimitExceeded

    assert (status_for(LimitExceeded()), cli.exit_code_for(LimitExceeded())) == (429, 6)
    assert [cls.__qualname__ for cls in ERRORS if "Budget" in cls.__qualname__] == []


def test_a_bare_resolveflow_error_is_internal_at_both_edges() -> None:
    exc = e.ResolveFlowError("something failed")
    assert (status_for(exc), cli.exit_code_for(exc)) == (500, 1)


def test_wrapping_keeps_the_category() -> None:
    assert e.category_class(e.RunBusy()) is e.Conflict
    assert e.category_class(e.ProviderUnavailable()) is e.Unavailable
    assert e.category_class(e.ResolveFlowError()) is e.ResolveFlowError
    assert e.category_class(KeyError("x")) is e.ResolveFlowError


def test_messages_become_one_line() -> None:
    assert e.one_line("GitHub said:\n\n  Bad   request\r\n") == "GitHub said: Bad request"
    long = e.one_line("x" * 600)
    assert len(long) == 500 and long.endswith("…")
    assert e.NotFound().message == "No such record (or it belongs to another tenant)."


def test_errors_py_imports_only_the_standard_library() -> None:
    source = Path(e.__file__).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__"} <= set(sys.stdlib_module_names)


# --- the CLI edge, in process: main() with a one-command app that raises ---------------------


def _run_raising(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: BaseException
) -> tuple[int, list[str]]:
    failing = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @failing.command()
    def boom() -> None:
        raise exc

    @failing.command()
    def other() -> None:  # two commands, so "boom" is a subcommand as in the real CLI
        pass

    monkeypatch.setattr(cli, "app", failing)
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)
    code = cli.main(["boom"])
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    return code, [line for line in captured.err.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (e.InvalidInput("bad\nvalue"), 2),
        (e.NotFound("no run 42"), 3),
        (e.AuthenticationFailed(), 4),
        (e.AlreadyDecided(), 5),
        (e.ProviderUnavailable("GitHub is down"), 6),
        (e.ConfigError("RESOLVEFLOW_X is wrong"), 7),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_cli_prints_one_error_line_and_the_category_exit_code(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    exc: e.ResolveFlowError,
    code: int,
) -> None:
    got, lines = _run_raising(monkeypatch, capsys, exc)
    assert got == code
    assert lines == [f"error: {e.one_line(exc.message)}"]


def test_cli_unexpected_exception_is_one_line_exit_1_with_a_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    got, lines = _run_raising(monkeypatch, capsys, KeyError("missing"))
    assert got == 1
    assert len(lines) == 1 and lines[0].startswith("error: unexpected KeyError")
    assert "RESOLVEFLOW_LOG_LEVEL=DEBUG" in lines[0]
