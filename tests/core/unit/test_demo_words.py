"""The demo's console says what the pages say: each branch of triage, its rule, the review's
outcome and the run's status in the pages' words (``web/words.py``), never a snake_case value."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console

from resolveflow.cli import demo_steps

SNAKE_CASE = re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b")


def snake_case_words(text: str) -> list[str]:
    """snake_case words outside addresses and paths (a temporary folder may hold an "_")."""
    kept = " ".join(word for word in text.split() if "/" not in word)
    return SNAKE_CASE.findall(kept)


def _run(issue: int, classification: str, rule: str, outcome: str | None) -> dict[str, Any]:
    investigation = (
        None
        if outcome is None
        else {"cited_issues": [2], "model_calls": 0, "outcome": outcome, "provider": "none"}
    )
    return {
        "issue": issue,
        "title": f"Issue {issue}",
        "status": "awaiting_approval",
        "classification": classification,
        "rule": rule,
        "comment": "A comment.",
        "labels": ["needs-triage"],
        "investigation": investigation,
    }


def test_every_branch_is_printed_in_the_pages_words() -> None:
    runs = [
        _run(1, "human_review", "fallback", None),
        _run(6, "ai_investigation", "is_information_sparse", "approve"),
        _run(9, "ai_investigation", "is_information_sparse", "escalate"),
        _run(7, "deterministic", "has_failing_ci", None),
        _run(3, "human_review", "policy:security", None),
    ]
    console = Console(record=True, width=200, color_system=None)
    for run in runs:
        console.print(demo_steps.describe_run(run), soft_wrap=True)
    shown = console.export_text()
    assert snake_case_words(shown) == [], shown
    assert "for a person to review (no rule matched)" in shown
    assert "needs more information (the report is too short to act on): cites #2" in shown
    assert "(no model; may be approved)" in shown and "(no model; escalated to a person)" in shown
    assert "decided by a rule (CI is failing)" in shown
    assert "for a person to review (policy rule 'security')" in shown
    assert shown.count("waiting for a decision") == len(runs)
