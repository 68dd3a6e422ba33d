"""The triage graph's state: plain JSON, checkpointed after every step.

Its own module, free of LangGraph, so that the steps (``steps.py``) and the graph (``build.py``)
both name it without importing each other."""

from __future__ import annotations

from typing import Any, TypedDict


class TriageState(TypedDict, total=False):
    tenant_id: str
    run_id: str
    repository: str
    issue_number: int
    requested_by: str
    raw: dict[str, Any] | None
    repo_config: dict[str, Any] | None  # the repository's .github/resolveflow.yml as read
    facts: dict[str, Any]
    classification: str
    rule: str
    reason: str
    branch: str
    route_reason: str | None
    investigation: dict[str, Any] | None
    investigation_action: dict[str, Any] | None
    proposal_id: str | None
    digest: str | None
    approval_id: str | None
    resume_refused: str | None
    outcome: str
    error: str | None
