#!/usr/bin/env python3
"""Fail the build when the layering rules of docs/design.md are broken.

1. ``resolveflow.domain`` is pure: it may import only an allowlist of side-effect-free standard
   modules, pydantic, and other domain modules.
2. Only ``resolveflow.execution`` may call an adapter method that writes to an outside system.
   Write methods are discovered, not listed: every adapter method decorated with ``@writes``.

Import direction between the other layers is checked by import-linter (``lint-imports``).
Usage: check_layers.py [SRC_ROOT]   (default: src/resolveflow next to this script)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

DOMAIN_ALLOWED = {
    "__future__",
    "abc",
    "collections",
    "dataclasses",
    "datetime",
    "decimal",
    # the email package parses and formats messages and addresses (email.send); sending is smtplib,
    # another top-level module, which stays out
    "email",
    "enum",
    "fractions",
    "functools",
    "hashlib",
    "itertools",
    "json",
    "math",
    "operator",
    "re",
    "statistics",
    "string",
    "textwrap",
    "typing",
    "tomllib",
    "unicodedata",
    "uuid",
    "pydantic",
    "annotated_types",
    "resolveflow",
}
# The error tree is the one module outside the domain that the domain may use: it imports nothing.
DOMAIN_MAY_IMPORT = ("resolveflow.domain", "resolveflow.errors")
WRITE_CALLERS_ALLOWED = ("execution", "adapters")


def _imports(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the package
                base = module.rsplit(".", node.level)[0]
                found.append((node.lineno, f"{base}.{node.module}" if node.module else base))
            elif node.module:
                found.append((node.lineno, node.module))
    return found


def domain_violations(root: Path) -> list[str]:
    problems = []
    for path in sorted((root / "domain").rglob("*.py")):
        module = "resolveflow." + ".".join(path.relative_to(root).with_suffix("").parts)
        for line, name in _imports(ast.parse(path.read_text("utf-8")), module):
            top = name.split(".")[0]
            if top not in DOMAIN_ALLOWED:
                problems.append(f"{path}:{line}: domain imports {name} (I/O or not allowed)")
            elif top == "resolveflow" and not name.startswith(DOMAIN_MAY_IMPORT):
                problems.append(f"{path}:{line}: domain imports {name} (outside the domain)")
    return problems


def write_methods(root: Path) -> set[str]:
    names: set[str] = set()
    for path in (root / "adapters").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for decorator in node.decorator_list:
                    target = (
                        decorator.attr
                        if isinstance(decorator, ast.Attribute)
                        else (decorator.id if isinstance(decorator, ast.Name) else None)
                    )
                    if target == "writes":
                        names.add(node.name)
    return names


def write_call_violations(root: Path, writers: set[str]) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).parts
        if relative[0] in WRITE_CALLERS_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = None
            if isinstance(node.func, ast.Attribute) and node.func.attr in writers:
                name = node.func.attr
            elif (
                isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in writers
            ):
                name = str(node.args[1].value)
            if name:
                problems.append(
                    f"{path}:{node.lineno}: calls write method {name}() "
                    "outside resolveflow.execution"
                )
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent.parent / "src" / "resolveflow"
    writers = write_methods(root)
    if not writers:
        print(f"check_layers: no @writes methods found under {root / 'adapters'}")
        return 1
    problems = domain_violations(root) + write_call_violations(root, writers)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} violation(s)")
        return 1
    print(f"check_layers: ok (write methods: {', '.join(sorted(writers))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
