"""Counts of the tree's shape (issue 27): import cycles, imports across products and upward
through the layers, store functions returning ``dict[str, Any]``, module sizes.

    .venv/bin/python benchmarks/architecture.py [SRC]     (default: src/ next to this file)

The layers and products are read from pyproject.toml's import-linter contracts, so the figures
are those the contracts judge; cycles are strongly connected groups of modules in grimp's graph
(function-local imports included: a cycle closed inside a function is still a cycle).
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _layers() -> tuple[list[list[str]], list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]
    layers: list[list[str]] = []
    products: list[str] = []
    kernel: list[str] = []  # below every layer
    for contract in config["contracts"]:
        if contract["type"] == "layers":
            for layer in contract["layers"]:
                names = layer.replace(":", "|").split("|")
                layers.append([n.strip().strip("()") for n in names])
        elif contract["type"] == "independence":
            products = list(contract["modules"])
        elif "kernel" in contract["name"]:
            kernel = list(contract["source_modules"])
    return [*layers, kernel], products


def _owner(module: str, prefixes: list[str]) -> str | None:
    for prefix in sorted(prefixes, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    return None


def _cycles(graph: grimp.ImportGraph) -> list[set[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []
    counter = [0]

    def visit(start: str) -> None:
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(group)
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on.add(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
            elif child in on:
                low[node] = min(low[node], index[child])

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def _dict_returning_store_functions(src: Path) -> list[str]:
    found = []
    for path in sorted(src.rglob("*.py")):
        if "store" not in path.relative_to(src).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            returns = getattr(node, "returns", None)
            typed = isinstance(node, ast.FunctionDef) and returns is not None
            if (
                typed
                and "dict[str, Any]" in (shown := ast.unparse(returns))
                and "Connection" not in shown
            ):
                found.append(f"{path.relative_to(src)}:{node.name}")
    return found


def main() -> None:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "src"
    sys.path.insert(0, str(src))
    graph = grimp.build_graph("resolveflow", cache_dir=None)
    layers, products = _layers()
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    upward, across = 0, 0
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = _owner(importer, list(rank)), _owner(imported, list(rank))
            if a and b and a != b and rank[a] > rank[b]:
                upward += 1  # a lower layer (higher index) importing a higher one
            pa, pb = _owner(importer, products), _owner(imported, products)
            if pa and pb and pa != pb:
                across += 1
    cycles = _cycles(graph)
    stores = _dict_returning_store_functions(src / "resolveflow")
    files = sorted((src / "resolveflow").rglob("*.py"))
    sizes = sorted(len(p.read_text("utf-8").splitlines()) for p in files)
    print(f"modules {len(files)}, median lines {sizes[len(sizes) // 2]}, largest {sizes[-1]}")
    print(f"upward imports (module pairs, layers of pyproject.toml): {upward}   target 0")
    print(f"imports from one product into another: {across}   target 0")
    print(f"import cycles (groups of modules): {len(cycles)}   target 0")
    for group in cycles:
        print("  cycle:", " <-> ".join(sorted(group)))
    print(f"store functions returning dict[str, Any]: {len(stores)}   target 0")


if __name__ == "__main__":
    main()
