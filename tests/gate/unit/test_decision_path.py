"""Deciding is written once: only ``gate.decisions`` records approvals and rejections, and the
approval rules live only in ``gate.domain.policy``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from resolveflow.errors import InvalidInput
from resolveflow.gate.decisions import reject_unstorable

SRC = Path(__file__).parents[3] / "src" / "resolveflow"


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
    assert callers == {"gate/decisions.py"}


def test_only_the_policy_defines_approval_checks() -> None:
    # A second copy would again be able to disagree with the first.
    defining = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "def check_can_approve" in path.read_text("utf-8")
        or "def _not_own_request" in path.read_text("utf-8")
    }
    assert defining == {"gate/domain/policy.py"}
    pages = (SRC / "web" / "views.py").read_text("utf-8")
    assert "approvals.checks_for" in pages


def test_text_the_database_cannot_hold_is_refused_before_a_decision_or_an_edit() -> None:
    # The CLI's reasons, edits and notes come here: a command-line argument with undecodable
    # bytes arrives as a lone surrogate, which the database driver cannot encode.
    reject_unstorable("a fine reason", None, "ünïcödé ✓ 🎉")
    for bad, said in (("bad\x00", "NUL"), ("bad\udcff", "lone surrogate")):
        with pytest.raises(InvalidInput, match=said):
            reject_unstorable("fine", bad)
