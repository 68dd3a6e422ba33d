"""What the quick commands import (issue 29): ``--help`` and ``tenants list`` start without the
triage graph, the queue, the forges' clients, the models, the search and the web stack, and
``--help`` without the database layer and the settings too.

Structural, never timed (a busy machine cannot break it): the real entry point
(``cli.entrypoint``, what ``resolveflow`` and ``python -m resolveflow`` run) runs in a fresh
interpreter, which writes the names in its ``sys.modules`` as it exits: everything imported,
inside functions too (``-X importtime`` leaves out a module imported through ``importlib``, as
the lazy command registry imports a command's module). No database is needed: the database URL names a socket
that does not exist, so ``tenants list`` runs up to its first connection and stops there with
"unavailable" (exit 6). tests/core/e2e/test_cli_startup.py runs the same commands to the end
against a real database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Packages no quick command needs; each costs tens to hundreds of milliseconds to import.
HEAVY = (
    "langgraph",
    "langchain_core",
    "procrastinate",
    "githubkit",
    "httpx",
    "onnxruntime",
    "tokenizers",
    "numpy",
    "torch",
    "jinja2",
    "starlette",
    "fastapi",
    "uvicorn",
)
# Our own modules that ``tenants list`` has no use for: the kinds' executors, mail and pacing's
# wiring, the policy file's product sections, the run store, the web app.
NOT_FOR_TENANTS = (
    "resolveflow.gate.kinds",
    "resolveflow.mail.kind",
    "resolveflow.mail.store.drafts",
    "resolveflow.bootstrap.mail",
    "resolveflow.bootstrap.pace",
    "resolveflow.bootstrap.policy",
    "resolveflow.refine",
    "resolveflow.triage.store",
    "resolveflow.triage.graph",
    "resolveflow.retrieval.search",
    "resolveflow.store.checkpoints",
    "resolveflow.store.queue",
    "resolveflow.web",
    "cryptography",  # no token key configured: nothing to encrypt or decrypt
)
# The help page is Typer's and Rich's: no database driver, no settings, no composition root.
NOT_FOR_HELP = (
    "psycopg",
    "pydantic",
    "pydantic_settings",
    "cryptography",
    "resolveflow.bootstrap",
    "resolveflow.config",
    "resolveflow.store",
    "resolveflow.accounts",
)
NO_DATABASE = "postgresql://resolveflow@/resolveflow?host=/nonexistent-resolveflow-socket"
UNAVAILABLE = 6  # cli.EXIT_CODES[ErrorCategory.UNAVAILABLE]


# Runs the command as ``resolveflow`` does and, on the way out, writes what was imported as the
# last line on stderr (registered first, this exit handler runs after all the others).
ENTRY = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
from resolveflow.cli import entrypoint
entrypoint()
"""


def imported(env: dict[str, str], *args: str) -> tuple[int, set[str]]:
    """The exit code of ``resolveflow ARGS`` and every module it imported."""
    return python(env, ENTRY, *args)


def python(env: dict[str, str], code: str, *args: str) -> tuple[int, set[str]]:
    """The exit code of ``python -c CODE ARGS`` and the modules ``CODE`` wrote as JSON on the
    last line of stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("["), done.stderr[-2000:]
    return done.returncode, set(json.loads(lines[-1]))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (a package: any module in it) are among ``modules``."""
    return sorted({n for n in names for m in modules if m == n or m.startswith(n + ".")})


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    clean.update(RESOLVEFLOW_HOME=str(tmp_path / "home"), RESOLVEFLOW_DATABASE_URL=NO_DATABASE)
    return clean


def test_help_imports_neither_the_heavy_packages_nor_the_database_layer(
    env: dict[str, str],
) -> None:
    code, modules = imported(env, "--help")
    assert code == 0
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, NOT_FOR_HELP) == []


def test_tenants_list_imports_only_what_it_uses(env: dict[str, str]) -> None:
    code, modules = imported(env, "tenants", "list")
    assert code == UNAVAILABLE  # it ran up to the database: its imports on the way are in
    assert {"resolveflow.cli.admin", "resolveflow.bootstrap.app", "psycopg"} <= modules
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, NOT_FOR_TENANTS) == []


def test_a_subcommands_help_loads_its_module_and_still_none_of_the_heavy_packages(
    env: dict[str, str],
) -> None:
    code, modules = imported(env, "proposals", "show", "--help")
    assert code == 0
    assert "resolveflow.cli.proposals" in modules
    assert loaded(modules, HEAVY) == []


def test_the_listing_catches_an_import_made_inside_a_function(env: dict[str, str]) -> None:
    # The checks above can fail: a heavy package imported only when a function runs, as the
    # commands' lazy imports are, is in the listing too.
    later = "def later():\n    import httpx\n\n\nlater()\n"
    code, modules = python(env, ENTRY.replace("entrypoint()", later))
    assert code == 0
    assert loaded(modules, HEAVY) == ["httpx"]
