"""docs/design.md is held to the tree (issue 27): every module is named there by its path under
src/resolveflow, and every module path it names exists. A new module without a line, or a line
left behind by a move, fails here instead of misleading the next reader."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).parents[3]
SRC = REPO / "src" / "resolveflow"
DOC = REPO / "docs" / "design.md"
# The doc describes the sandbox's stand-ins as a whole: they are test fixtures, not the product.
WHOLE = ("sandbox/",)
# A path in the text: not the tail of a longer path or a dotted name (`domain/records.py` is not
# named by `gate/domain/records.py`).
PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.(?:py|sql))(?![\w])")


def _named(text: str, path: str) -> bool:
    return re.search(rf"(?<![\w/.-]){re.escape(path)}(?![\w.])", text) is not None


def unnamed_modules(text: str, root: Path) -> list[str]:
    """Modules of ``root`` the text does not name; a package's ``__init__.py`` is named by its
    folder (``gate/kinds/``), and a package the text describes as a whole covers its modules."""
    whole = [folder for folder in WHOLE if _named(text, folder)]
    missing = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name.startswith(tuple(whole)) or _named(text, name):
            continue
        folder = name.removesuffix("__init__.py")
        if name.endswith("__init__.py") and folder and _named(text, folder):
            continue
        missing.append(name)
    return missing


def stale_paths(text: str, root: Path, repo: Path) -> list[str]:
    """Module and SQL paths the text names that exist neither under ``root`` nor in ``repo``
    (``scripts/check_layers.py``, ``tests/...``)."""
    named = sorted(set(PATH.findall(text)))
    return [path for path in named if not (root / path).exists() and not (repo / path).exists()]


def test_every_module_is_named_in_the_design_doc() -> None:
    assert unnamed_modules(DOC.read_text("utf-8"), SRC) == []


def test_every_path_the_design_doc_names_exists() -> None:
    assert stale_paths(DOC.read_text("utf-8"), SRC, REPO) == []


def test_the_checks_see_a_missing_line_a_stale_name_and_a_whole_package(tmp_path: Path) -> None:
    for name in ("a.py", "pkg/__init__.py", "pkg/b.py", "sandbox/c.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    text = "`a.py`, the folder `pkg/`, another package's `x/pkg/b.py`, `sandbox/`, `gone.py`"
    assert unnamed_modules(text, tmp_path) == ["pkg/b.py"]
    assert stale_paths(text, tmp_path, tmp_path) == ["gone.py", "x/pkg/b.py"]
    assert unnamed_modules("`a.py`", tmp_path) == ["pkg/__init__.py", "pkg/b.py", "sandbox/c.py"]
