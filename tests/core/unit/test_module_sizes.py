"""Modules stay small enough to read in one sitting (issue 10: none over 400 lines)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).parents[3] / "src" / "resolveflow"
LIMIT = 400


def test_no_module_in_src_is_over_400_lines() -> None:
    sizes = {
        str(path.relative_to(SRC)): len(path.read_text("utf-8").splitlines())
        for path in SRC.rglob("*.py")
    }
    assert sizes, "no modules found"
    assert {name: lines for name, lines in sizes.items() if lines > LIMIT} == {}
