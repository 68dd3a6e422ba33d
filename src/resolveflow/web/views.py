"""What the web pages and the JSON API show: the inbox, a run with its evidence, a proposal with
its exact action, the checks an approval must pass (each green or red with its reason), an
execution with what it made, and the tenant's audit trail.

Everything is read inside the viewer's tenant; another tenant's run is simply not found.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.domain.vocabulary import RunStatus
from resolveflow.gate import approvals
from resolveflow.gate import executions as execution_service
from resolveflow.gate import parts as part_service
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.actions import (
    ActionKind,
    AnyAction,
    GitLabIssueCreateAction,
    parse_action,
)
from resolveflow.gate.domain.disclosure import Hidden, scan_action
from resolveflow.gate.parts import ShownPart
from resolveflow.gate.store import executions as execution_store
from resolveflow.gate.store import inbox as inbox_store
from resolveflow.mail import views as mail_views
from resolveflow.mail.readers import MailReader, hidden, mail_reader, mailbox_of
from resolveflow.store.database import Database
from resolveflow.triage import runs as run_service
from resolveflow.triage.store import runs as run_store

CLASSIFICATIONS = ("deterministic", "ai_investigation", "human_review")
AWAITING = RunStatus.AWAITING_APPROVAL.value
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
    """Runs and standalone proposals (made without a run) together, newest first.

    A standalone proposal has no classification and only one status (waiting for a decision),
    so it is listed unless a classification or another status is asked for."""
    if status is not None and status not in run_service.RUN_STATUSES:
        status = None
    if classification not in CLASSIFICATIONS:
        classification = None
    repository = repository.lower() if repository else None
    with_proposals = classification is None and status in (None, AWAITING)
    with db.tenant(principal.tenant_id) as conn:
        rows = inbox_store.inbox(
            conn,
            principal.tenant_id,
            status=status,
            repository=repository,
            classification=classification,
            limit=limit,
        )
        pending = (
            inbox_store.pending_proposals(
                conn, principal.tenant_id, repository=repository, limit=limit
            )
            if with_proposals
            else []
        )
        repositories = sorted(
            set(inbox_store.run_repositories(conn, principal.tenant_id))
            | set(inbox_store.proposal_repositories(conn, principal.tenant_id))
        )
        reader = mail_reader(conn, principal)
        runs = [(row.run_id, row.repository or "") for row in rows]
        parts = part_service.runs_parts_in(conn, principal, runs)
    items = [_run_item(row, parts.get(row.run_id, [])) for row in rows]
    items += [_proposal_item(row, reader) for row in pending]
    items.sort(key=lambda item: item["created_at"], reverse=True)
    return {
        "items": items[:limit],
        "repositories": repositories,
        "classifications": list(CLASSIFICATIONS),
        "filters": {"status": status, "repository": repository, "classification": classification},
    }


def _run_item(row: inbox_store.InboxRun, parts: list[ShownPart]) -> dict[str, Any]:
    action = row.action or {}
    return {
        "type": "run",
        "href": f"/runs/{row.run_id}",
        "run_id": str(row.run_id),
        "kind": ActionKind.GITHUB_ISSUE.value,  # the kind every run proposes
        "target": f"{row.repository}#{row.issue_number}",
        "repository": row.repository,
        "status": row.status,
        "classification": row.classification,
        "rule": row.rule,
        "proposal_id": str(row.proposal_id) if row.proposal_id else None,
        "digest": row.digest,
        "version": row.version,
        "title": row.issue_title,  # the issue's title, as the run saw it
        "labels": list(action.get("labels") or []),
        "assignees": [],
        "has_comment": bool(action.get("comment")),
        "created_at": row.created_at.isoformat(),
        "parts": [part.as_json() for part in parts],
    }


def _proposal_item(row: inbox_store.PendingProposal, reader: MailReader) -> dict[str, Any]:
    """A standalone proposal's row. An email of a mailbox the reader holds no grant for keeps its
    row (the work is there, and the row names the grant to ask for) without its subject."""
    action = parse_action(row.action)
    mailbox = mailbox_of(row.action)
    readable = reader.may_read(mailbox)
    return {
        "type": "proposal",
        "href": f"/proposals/{row.proposal_id}",
        "run_id": None,
        "kind": action.kind,
        "target": action.summary,
        "repository": action.repository,
        "status": AWAITING,
        "classification": None,
        "rule": None,
        "proposal_id": str(row.proposal_id),
        "digest": row.digest,
        "version": row.version,
        # a new issue's title (either forge) or an email's subject, as text
        "title": (getattr(action, "title", None) or getattr(action, "subject", None))
        if readable
        else None,
        "hidden": None if readable or mailbox is None else hidden(mailbox),
        "labels": list(action.labels),
        "assignees": _assignee_names(action),
        "has_comment": bool(getattr(action, "comment", None)),
        "created_at": row.created_at.isoformat(),
    }


def _assignee_names(action: AnyAction) -> list[str]:
    """Logins on GitHub; on GitLab the names of the tenant's alias map (their ids are on the
    proposal page)."""
    if isinstance(action, GitLabIssueCreateAction):
        return [person.name for person in action.assignees]
    return list(getattr(action, "assignees", ()))


def approval_gates(
    db: Database,
    viewer: Principal,
    proposal_id: UUID,
    ttl_seconds: int,
    labels: approvals.RepositoryLabels | None = None,
    mailboxes: approvals.MailboxLookup | None = None,
    aliases: approvals.AliasLookup | None = None,
) -> list[dict[str, Any]]:
    """The checks an approval by ``viewer`` must pass, from the records as they are now: the same
    checks, on the same facts, that ``approve`` runs (and the executor runs its own again).
    ``labels`` reads the repository's labels when no run's evidence has them (as ``approve``)."""
    lookups = (labels, mailboxes, aliases)
    return [
        {"name": result.name, "ok": result.ok, "reason": result.reason}
        for result in approvals.checks_for(db, viewer, proposal_id, ttl_seconds, *lookups)
    ]


def disclosures(action: dict[str, Any]) -> list[dict[str, Any]]:
    """What the rendering of ``action`` hides (``domain.disclosure``), one entry per kind with
    where each was found, for the warnings above the Approve button."""
    grouped: dict[Hidden, list[dict[str, str]]] = {}
    for finding in scan_action(parse_action(action)):
        grouped.setdefault(finding.kind, []).append(
            {"field": finding.field, "excerpt": finding.excerpt}
        )
    return [
        {"kind": kind.value, "explanation": kind.explanation, "found": grouped[kind]}
        for kind in Hidden
        if kind in grouped
    ]


def run_page(
    db: Database,
    viewer: Principal,
    run_id: UUID,
    ttl_seconds: int,
    labels: approvals.RepositoryLabels | None = None,
) -> dict[str, Any]:
    """The run as ``triage.runs.describe_run`` tells it, plus the issue as it was seen and the
    approval checks."""
    view = run_service.describe_run(db, viewer, run_id)  # NotFound for another tenant's run
    with db.tenant(viewer.tenant_id) as conn:
        snapshot = run_store.snapshot_for_run(conn, viewer.tenant_id, run_id)
    raw = snapshot.raw if snapshot else {}
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
    proposal = view["proposal"]
    view["gates"] = (
        approval_gates(db, viewer, UUID(proposal["id"]), ttl_seconds, labels) if proposal else []
    )
    view["decidable"] = bool(view["gates"]) and all(gate["ok"] for gate in view["gates"])
    view["disclosures"] = disclosures(proposal["action"]) if proposal else []
    return view


def proposal_page(
    db: Database,
    viewer: Principal,
    proposal_id: UUID,
    ttl_seconds: int,
    labels: approvals.RepositoryLabels | None = None,
    mailboxes: approvals.MailboxLookup | None = None,
    aliases: approvals.AliasLookup | None = None,
) -> dict[str, Any]:
    """One proposal version as ``gate.proposals.describe`` tells it, with the checks an
    approval by ``viewer`` must pass and, once it was carried out, what the execution made."""
    view = proposal_service.describe(db, viewer, proposal_id)  # NotFound in another tenant
    view["gates"] = approval_gates(db, viewer, proposal_id, ttl_seconds, labels, mailboxes, aliases)
    view["is_latest"] = view["version"] == view["latest_version"]
    view["latest_id"] = view["versions"][-1]["id"]
    # Once a version of the lineage was carried out, no version is offered for approval.
    view["posted"] = proposal_service.carried_out(db, viewer, proposal_id)
    view["decidable"] = (
        bool(view["gates"]) and all(gate["ok"] for gate in view["gates"]) and not view["posted"]
    )
    view["execution"] = _execution_outcome(db, viewer, view["execution"])
    view["disclosures"] = disclosures(view["action"])
    view["people"] = _people(view["action"])
    if view["kind"] == ActionKind.EMAIL_SEND:
        view["mail"] = mail_views.proposal_mail(db, viewer, proposal_id)
    return view


def _people(action: dict[str, Any]) -> list[str]:
    """The assignees as the page lists them: a GitLab user's alias name with its user id."""
    return [
        f"{person['name']} (id {person['id']})" if isinstance(person, dict) else str(person)
        for person in action.get("assignees") or ()
    ]


def _execution_outcome(
    db: Database, viewer: Principal, execution: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The execution's state and the links to what it posted or created."""
    if execution is None:
        return None
    with db.tenant(viewer.tenant_id) as conn:
        row = execution_store.execution_by_id(conn, viewer.tenant_id, UUID(execution["id"]))
    shown = execution_service.execution_view(row)
    keys = ("id", "state", "detail", "comment_url", "result_ref", "result_url")
    return {key: shown[key] for key in keys}


def execution_page(db: Database, viewer: Principal, execution_id: UUID) -> dict[str, Any]:
    """The execution, with the kind and target of the proposal it carries out."""
    view = execution_service.show_execution(db, viewer, execution_id)
    proposal = proposal_service.describe(db, viewer, UUID(view["proposal_id"]))
    view["kind"] = proposal["kind"]
    view["target"] = proposal["summary"]
    view["run_id"] = proposal["run_id"]
    view["approver_id"] = (proposal["approval"] or {}).get("principal_id")
    return view


def audit_trail(db: Database, viewer: Principal, limit: int = 200) -> list[dict[str, Any]]:
    """The newest events. Those about an email of a mailbox the viewer holds no grant for keep
    who, what and when; their details (a rejection's reason, a server's answer naming a
    recipient) are hidden."""
    with db.tenant(viewer.tenant_id) as conn:
        rows = inbox_store.recent_audit_events(conn, viewer.tenant_id, limit)
        reader = mail_reader(conn, viewer)
    return [
        {
            "at": row.at.isoformat(),
            "actor": row.actor,
            "event": row.event,
            "subject_type": row.subject_type,
            "subject_id": row.subject_id,
            "run_id": str(row.run_id) if row.run_id else None,
            "details": row.details
            if reader.may_read(row.mailbox)
            else {"hidden": hidden(str(row.mailbox))},  # not read: it is a mailbox
        }
        for row in rows
    ]
