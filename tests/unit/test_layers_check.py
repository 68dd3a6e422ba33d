"""The layering check must be able to fail: plant violations in a copy of the tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_layers.py"
SRC = ROOT / "src" / "resolveflow"


def _run(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(tree)], capture_output=True, text=True, check=False
    )


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "resolveflow"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def test_the_real_tree_passes() -> None:
    result = _run(SRC)
    assert result.returncode == 0, result.stdout
    assert "post_comment" in result.stdout


def test_domain_importing_io_fails(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    (tree / "domain" / "sneaky.py").write_text("import psycopg\nfrom resolveflow.store import x\n")
    result = _run(tree)
    assert result.returncode == 1
    assert "domain imports psycopg" in result.stdout
    assert "outside the domain" in result.stdout


def test_write_call_outside_execution_fails(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    (tree / "service" / "sneaky.py").write_text(
        "def f(gh):\n    gh.post_comment(None, 1, 'x')\n    getattr(gh, 'add_labels')(None, 1, [])\n"
    )
    result = _run(tree)
    assert result.returncode == 1
    assert "calls write method post_comment()" in result.stdout
    assert "calls write method add_labels()" in result.stdout
