"""A count with its noun in the right number: no "(s)" in anything posted or printed.

The comments triage posts are rendered for one and for two of what they count; then every string
the code holds (docstrings and comments aside) and every page template is read for "(s)"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from test_triage_rules import check, raw

from resolveflow.domain.counted import counted, plural
from resolveflow.evals.safety import SNIPPETS
from resolveflow.triage.domain.evidence import RawCheckRun, has_failing_ci, normalize
from resolveflow.triage.domain.investigation import related_comment
from resolveflow.triage.domain.rules import failing_checks_comment

SRC = Path(__file__).resolve().parents[3] / "src" / "resolveflow"
MAYBE_PLURAL = re.compile(r"[A-Za-z]\((?:s|es)\)")  # "report(s)", "match(es)"; not "http(s)"


def _maybe_plural(text: str) -> list[str]:
    return [found for found in MAYBE_PLURAL.findall(text) if found != "p(s)"]


def test_counted_says_one_and_many() -> None:
    assert counted(1, "check") == "1 check" and counted(2, "check") == "2 checks"
    assert counted(0, "report") == "0 reports"
    assert counted(3, "job or execution", "jobs or executions") == "3 jobs or executions"
    assert plural(1, "does", "do") == "does" and plural(4, "does", "do") == "do"


@pytest.mark.parametrize("failing", [1, 2])
def test_the_failing_checks_comment_counts_in_words(failing: int) -> None:
    checks = [check(f"tests ({n})", "failure") for n in range(failing)]
    comment = failing_checks_comment(normalize(raw("", checks=checks)))
    noun = "check" if failing == 1 else "checks"
    assert comment.startswith(f"ResolveFlow found {failing} failing CI {noun} on this issue:")
    assert _maybe_plural(comment) == []


@pytest.mark.parametrize("related", [1, 2])
def test_the_related_reports_comment_counts_in_words(related: int) -> None:
    comment = related_comment(SNIPPETS[:related], "acme/widgets")
    said = "1 earlier report that looks" if related == 1 else "2 earlier reports that look"
    assert comment.startswith(f"ResolveFlow found {said} related to this one:")
    assert _maybe_plural(comment) == []


def test_the_no_failing_check_fact_counts_in_words() -> None:
    assert _maybe_plural(has_failing_ci([]).rule) == []
    run = RawCheckRun.model_validate(check("tests", "success"))
    assert has_failing_ci([run]).rule == "the one check run did not fail or time out"


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_no_string_in_the_code_or_the_templates_says_s_in_brackets() -> None:
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and id(node) not in skip and _maybe_plural(text):
                found.append(f"{path.relative_to(SRC)}:{getattr(node, 'lineno', 0)}: {text!r}")
    for path in sorted(SRC.rglob("*.html")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _maybe_plural(re.sub(r"\{#.*?#\}", "", line)):
                found.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
    assert found == []
