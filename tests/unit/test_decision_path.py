"""Deciding is written once: only ``service.decisions`` records approvals and rejections, and the
approval rules live only in ``domain.policy``."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parents[2] / "src" / "resolveflow"


def _calls(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name):
                found.add(f"{owner.id}.{node.func.attr}")
    return found


def test_only_the_decision_path_records_decisions() -> None:
    callers = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if _calls(path) & {"approvals.approve", "approvals.reject"}
    }
    assert callers == {"service/decisions.py"}


def test_only_the_policy_defines_approval_checks() -> None:
    # A second copy would again be able to disagree with the first.
    defining = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "def check_can_approve" in path.read_text("utf-8")
        or "def _not_own_request" in path.read_text("utf-8")
    }
    assert defining == {"domain/policy.py"}
    pages = (SRC / "service" / "views.py").read_text("utf-8")
    assert "approvals.checks_for" in pages
