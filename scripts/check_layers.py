#!/usr/bin/env python3
"""Fail the build when the layering rules of docs/design.md are broken.

1. ``resolveflow.domain`` and every package's ``domain`` (``resolveflow.gate.domain``,
   ``resolveflow.mail.domain``...) are pure: they may import only an allowlist of side-effect-free
   standard modules, pydantic, other domain modules, the error tree and the policy file's reader.
2. Only the executor's kinds (``gate/kinds``, ``mail/kind.py``, with ``gate/executor.py`` and
   ``gate/reconcile.py``) may call an adapter method that writes to an outside system.
   Write methods are discovered, not listed: every method decorated with ``@writes`` on an
   adapter's class or protocol (and inherited by the classes that subclass one). A call of such a
   method's name is flagged when its receiver is typed or constructed as one of those classes, or
   when its type cannot be told (unannotated, an attribute chain); a receiver known to be of
   another class is not (``exchange.send(...)`` on a sandbox ``Exchange`` is not a write).
   Types are read from annotations (parameters, ``x: T``, ``self.x: T``), constructors
   (``x = C(...)``, ``with C(...) as x``) and the return annotations of functions in the tree.

Import direction between the other layers is checked by import-linter (``lint-imports``).
Usage: check_layers.py [SRC_ROOT]   (default: src/resolveflow next to this script)
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
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
    # parses and classifies IP addresses (loopback, private...) with no lookup: sockets stay out
    "ipaddress",
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
DOMAIN_MAY_IMPORT = re.compile(
    r"^resolveflow\.(?:errors|policy_file|llm|(?:[a-z_]+\.)?domain)(?:\.|$)"
)
# The executor's kinds (the gate's and mail's) and the adapters themselves: paths under src root.
WRITE_CALLERS_ALLOWED = (
    "gate/kinds/",
    "gate/executor.py",
    "gate/reconcile.py",
    "mail/kind.py",
    "adapters/",
)


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
    pure = [root / "domain", root / "llm", *sorted(root.glob("*/domain"))]  # core, each package
    for path in sorted(p for folder in pure for p in folder.rglob("*.py")):
        module = "resolveflow." + ".".join(path.relative_to(root).with_suffix("").parts)
        for line, name in _imports(ast.parse(path.read_text("utf-8")), module):
            top = name.split(".")[0]
            if top not in DOMAIN_ALLOWED:
                problems.append(f"{path}:{line}: domain imports {name} (I/O or not allowed)")
            elif top == "resolveflow" and not DOMAIN_MAY_IMPORT.match(name):
                problems.append(f"{path}:{line}: domain imports {name} (outside the domain)")
    return problems


# A receiver whose type the check cannot tell: a call on it to a write method's name is flagged,
# because a write that slips past is worse than an annotation the author has to add.
UNKNOWN = "?"
Types = frozenset[str]


def _last_name(node: ast.expr) -> str | None:
    """``C`` of ``C`` or ``mod.C``: the name a decorator, base, callee or annotation ends in."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _parsed(root: Path) -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text("utf-8")) for path in sorted(root.rglob("*.py"))}


def write_methods(trees: dict[Path, ast.Module], root: Path) -> dict[str, set[str]]:
    """Class name -> its ``@writes`` methods: the adapters' classes and protocols that declare
    them, and every class in the tree that names one of those as a base (it inherits them)."""
    classes = [n for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)]
    writers: dict[str, set[str]] = {}
    adapters = root / "adapters"
    for path, tree in trees.items():
        if adapters not in path.parents:
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for item in cls.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                    _last_name(d) == "writes" for d in item.decorator_list
                ):
                    writers.setdefault(cls.name, set()).add(item.name)
    grown = True
    while grown:  # subclasses of subclasses
        grown = False
        for cls in classes:
            inherited = set().union(*(writers.get(_last_name(b) or "", set()) for b in cls.bases))
            if not inherited <= writers.get(cls.name, set()):
                writers.setdefault(cls.name, set()).update(inherited)
                grown = True
    return writers


def _annotation_types(node: ast.expr | None) -> Types:
    """The class names an annotation mentions (``T``, ``mod.T``, ``T | None``, ``Optional[T]``,
    ``"T"``); ``Any``, ``object`` or nothing: unknown."""
    if node is None:
        return frozenset({UNKNOWN})
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _annotation_types(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return frozenset({UNKNOWN})
    if isinstance(node, ast.BinOp):
        return _annotation_types(node.left) | _annotation_types(node.right)
    if isinstance(node, ast.Subscript):
        return _annotation_types(node.value) | _annotation_types(node.slice)
    if isinstance(node, ast.Tuple):
        return frozenset().union(*(_annotation_types(e) for e in node.elts))
    name = _last_name(node)
    if name is None or name in ("Any", "object"):
        return frozenset({UNKNOWN})
    return frozenset({name})


@dataclass
class _Index:
    """What the whole tree says about types: its classes and its functions' return types."""

    writers: dict[str, set[str]]
    classes: set[str]
    returns: dict[str, Types]

    @classmethod
    def of(cls, trees: dict[Path, ast.Module], writers: dict[str, set[str]]) -> _Index:
        classes: set[str] = set()
        returns: dict[str, Types] = {}
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    classes.add(node.name)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    found = _annotation_types(node.returns)
                    returns[node.name] = returns.get(node.name, frozenset()) | found
        return cls(writers, classes, returns)

    def called(self, call: ast.expr) -> Types:
        """The type of ``C(...)`` or ``f(...)``: a class of the tree or one named like a class,
        else what every function of that name is annotated to return."""
        name = _last_name(call.func) if isinstance(call, ast.Call) else None
        if name is None:
            return frozenset({UNKNOWN})
        if name in self.classes or (name[:1].isupper() and name not in self.returns):
            return frozenset({name})
        return self.returns.get(name, frozenset({UNKNOWN}))


def _bindings(nodes: list[ast.stmt], index: _Index, own: str | None = None) -> dict[str, Types]:
    """Names (or with ``own``, that object's attributes ``own.x``) bound in these statements."""
    found: dict[str, Types] = {}

    def bind(target: ast.expr, types: Types) -> None:
        if own is None and isinstance(target, ast.Name):
            key = target.id
        elif (
            own is not None
            and isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == own
        ):
            key = target.attr
        else:
            return
        found[key] = found.get(key, frozenset()) | types

    for node in (n for stmt in nodes for n in ast.walk(stmt)):
        if isinstance(node, ast.AnnAssign):
            bind(node.target, _annotation_types(node.annotation))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, index.called(node.value))
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, index.called(item.context_expr))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.NamedExpr):
            bind(node.target, frozenset({UNKNOWN}))
    return found


class _WriteCalls(ast.NodeVisitor):
    """Calls of a write method's name on a receiver that is (or may be) a writer class."""

    def __init__(self, index: _Index, module: ast.Module) -> None:
        self.index = index
        self.names = set().union(*index.writers.values())
        self.scopes = [_bindings(module.body, index)]
        self.attrs: list[dict[str, Types]] = [{}]  # ``self.x`` of the enclosing class
        self.found: list[tuple[int, str]] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        attrs = _bindings([s for s in node.body if isinstance(s, ast.AnnAssign)], self.index)
        for method in (
            s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
        ):
            for name, types in _bindings(method.body, self.index, own="self").items():
                attrs[name] = attrs.get(name, frozenset()) | types
        self.attrs.append(attrs)
        self.scopes.append({**self.scopes[-1], "self": frozenset({node.name})})
        self.generic_visit(node)
        self.scopes.pop()
        self.attrs.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        params = {
            arg.arg: _annotation_types(arg.annotation)
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]
            if arg.arg != "self" or arg.annotation is not None
        }
        scope = {**self.scopes[-1], **params}
        for name, types in _bindings(node.body, self.index).items():
            # a parameter rebound in the body may hold either; a local shadows the outer name
            scope[name] = params.get(name, frozenset()) | types
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _receiver(self, node: ast.expr) -> Types:
        if isinstance(node, ast.Name):
            return self.scopes[-1].get(node.id, frozenset({UNKNOWN}))
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.attrs[-1]
        ):
            return self.attrs[-1][node.attr]
        if isinstance(node, ast.Call):
            return self.index.called(node)
        return frozenset({UNKNOWN})

    def _check(self, line: int, receiver: ast.expr, method: str) -> None:
        if method not in self.names:
            return
        types = self._receiver(receiver)
        if UNKNOWN in types or any(method in self.index.writers.get(t, ()) for t in types):
            self.found.append((line, method))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            self._check(node.lineno, func.value, func.attr)
        elif (
            isinstance(func, ast.Name)
            and func.id == "getattr"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            self._check(node.lineno, node.args[0], node.args[1].value)
        self.generic_visit(node)


def write_call_violations(
    root: Path, trees: dict[Path, ast.Module], writers: dict[str, set[str]]
) -> list[str]:
    index = _Index.of(trees, writers)
    problems = []
    for path, tree in trees.items():
        if path.relative_to(root).as_posix().startswith(WRITE_CALLERS_ALLOWED):
            continue
        calls = _WriteCalls(index, tree)
        calls.visit(tree)
        problems.extend(
            f"{path}:{line}: calls write method {name}() outside resolveflow.gate"
            for line, name in calls.found
        )
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent.parent / "src" / "resolveflow"
    trees = _parsed(root)
    writers = write_methods(trees, root)
    if not writers:
        print(f"check_layers: no @writes methods found under {root / 'adapters'}")
        return 1
    problems = domain_violations(root) + write_call_violations(root, trees, writers)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} violation(s)")
        return 1
    methods = sorted({m for names in writers.values() for m in names})
    print(
        f"check_layers: ok (write methods: {', '.join(methods)}; on {', '.join(sorted(writers))})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
