"""What the web pages and the JSON API show: the inbox, a run with its evidence and the checks an
approval must pass (each green or red with its reason), and the tenant's audit trail.

Everything is read inside the viewer's tenant; another tenant's run is simply not found.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

from resolveflow.domain.actions import parse_action
from resolveflow.domain.policy import (
    check_labels_exist,
    check_repository_allowed,
    require_role,
    verified_action,
)
from resolveflow.domain.records import Principal, Role
from resolveflow.errors import ResolveFlowError
from resolveflow.service import runs as run_service
from resolveflow.store import proposals as proposal_store
from resolveflow.store import runs as run_store
from resolveflow.store import tenants as tenant_store
from resolveflow.store import web as web_store
from resolveflow.store.database import Database

CLASSIFICATIONS = ("deterministic", "ai_investigation", "human_review")
MAX_COMMENTS_SHOWN = 50


def inbox(
    db: Database,
    principal: Principal,
    *,
    status: str | None = "awaiting_approval",
    repository: str | None = None,
    classification: str | None = None,
    limit: int = 100,
) -> dict[str, Any]:
    if status is not None and status not in run_service.RUN_STATUSES:
        status = None
    if classification not in CLASSIFICATIONS:
        classification = None
    with db.tenant(principal.tenant_id) as conn:
        rows = web_store.inbox(
            conn,
            principal.tenant_id,
            status=status,
            repository=repository.lower() if repository else None,
            classification=classification,
            limit=limit,
        )
        repositories = web_store.run_repositories(conn, principal.tenant_id)
    items = [
        {
            "run_id": str(row["run_id"]),
            "target": f"{row['repository']}#{row['issue_number']}",
            "repository": row["repository"],
            "status": row["status"],
            "classification": row["classification"],
            "rule": row["rule"],
            "proposal_id": str(row["proposal_id"]) if row["proposal_id"] else None,
            "digest": row["digest"],
            "version": row["version"],
            "labels": list((row["action"] or {}).get("labels") or []),
            "has_comment": bool((row["action"] or {}).get("comment")),
            "created_at": row["created_at"].isoformat(),
        }
        for row in rows
    ]
    return {
        "items": items,
        "repositories": repositories,
        "classifications": list(CLASSIFICATIONS),
        "filters": {"status": status, "repository": repository, "classification": classification},
    }


def _gate(name: str, check: Any) -> dict[str, Any]:
    try:
        detail = check()
    except ResolveFlowError as exc:
        return {"name": name, "ok": False, "reason": exc.message}
    return {"name": name, "ok": True, "reason": detail}


def approval_gates(
    db: Database,
    viewer: Principal,
    run_id: UUID,
    repository_labels: list[str] | None,
    ttl_seconds: int,
) -> list[dict[str, Any]]:
    """The checks an approval by ``viewer`` must pass, computed from the records as they are now
    (the approval and, later, the executor check them again)."""
    with db.tenant(viewer.tenant_id) as conn:
        proposal = run_store.latest_proposal_for_run(conn, viewer.tenant_id, run_id)
        if proposal is None:
            return []
        decision = proposal_store.approval_for_proposal(conn, viewer.tenant_id, proposal.id)
        allowed = tenant_store.list_repositories(conn, viewer.tenant_id)
        now = proposal_store.database_now(conn)
    action = parse_action(proposal.action)

    def undecided() -> str:
        if decision is not None:
            raise ResolveFlowError(f"already {decision.decision}")
        return "no decision yet"

    def digest() -> str:
        verified_action(proposal)
        return "the stored action still hashes to the digest shown"

    def role() -> str:
        require_role(viewer, Role.APPROVER)
        return f"{viewer.subject} has the approver role"

    def not_requester() -> str:
        if proposal.created_by is not None and proposal.created_by == viewer.id:
            raise ResolveFlowError("you requested this run; another approver must decide")
        return "you did not request it"

    def repository() -> str:
        check_repository_allowed(action, allowed)
        return f"{action.target.repository} is on the allowlist"

    def labels() -> str:
        if repository_labels is None:
            return "no labels to check"
        check_labels_exist(action, repository_labels)
        return "every label exists in the repository" if action.labels else "no labels"

    def window() -> str:
        deadline = proposal.created_at + timedelta(seconds=ttl_seconds)
        if now >= deadline:
            raise ResolveFlowError("too old to approve; edit it to make a new version")
        return f"open until {deadline.isoformat(timespec='minutes')}"

    return [
        _gate("undecided", undecided),
        _gate("digest", digest),
        _gate("approver role", role),
        _gate("not your own request", not_requester),
        _gate("repository allowed", repository),
        _gate("labels exist", labels),
        _gate("approval window", window),
    ]


def run_page(db: Database, viewer: Principal, run_id: UUID, ttl_seconds: int) -> dict[str, Any]:
    """The run as ``service.runs.describe_run`` tells it, plus the issue as it was seen and the
    approval checks."""
    view = run_service.describe_run(db, viewer, run_id)  # NotFound for another tenant's run
    with db.tenant(viewer.tenant_id) as conn:
        snapshot = run_store.snapshot_for_run(conn, viewer.tenant_id, run_id)
    raw = (snapshot or {}).get("raw") or {}
    issue = raw.get("issue") or {}
    comments = raw.get("comments") or []
    view["issue"] = {
        "title": str(issue.get("title") or ""),
        "body": str(issue.get("body") or ""),
        "author": str(issue.get("author") or ""),
        "url": str(issue.get("url") or ""),
        "state": str(issue.get("state") or ""),
        "labels": [str(label) for label in issue.get("labels") or []],
    }
    view["comments"] = [
        {"author": str(c.get("author") or ""), "body": str(c.get("body") or "")}
        for c in comments[:MAX_COMMENTS_SHOWN]
    ]
    view["check_runs"] = [
        {
            "name": str(c.get("name") or ""),
            "conclusion": c.get("conclusion"),
            "url": str(c.get("url") or ""),
        }
        for c in raw.get("check_runs") or []
    ]
    labels = raw.get("repository_labels")
    view["gates"] = approval_gates(
        db, viewer, run_id, list(labels) if isinstance(labels, list) else None, ttl_seconds
    )
    view["decidable"] = bool(view["gates"]) and all(gate["ok"] for gate in view["gates"])
    return view


def audit_trail(db: Database, viewer: Principal, limit: int = 200) -> list[dict[str, Any]]:
    with db.tenant(viewer.tenant_id) as conn:
        rows = web_store.recent_audit_events(conn, viewer.tenant_id, limit)
    return [
        {
            "at": row["at"].isoformat(),
            "actor": row["actor"],
            "event": row["event"],
            "subject_type": row["subject_type"],
            "subject_id": row["subject_id"],
            "run_id": str(row["run_id"]) if row["run_id"] else None,
            "details": row["details"],
        }
        for row in rows
    ]
