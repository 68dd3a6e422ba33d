"""Proposals of every kind, edits (new versions), and how a proposal is shown."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.domain.records import Approval, Principal, Proposal, Role, actor_of
from resolveflow.domain.vocabulary import AuditEvent, Confidence
from resolveflow.errors import InvalidInput, InvalidTransition, NotAuthorized, PolicyViolation
from resolveflow.gate import feedback, kind_rules
from resolveflow.gate import parts as part_service
from resolveflow.gate import quiet as quiet_service
from resolveflow.gate.domain.actions import (
    DEFAULT_GRACE_HOURS,
    ActionChanges,
    AnyAction,
    LabelNote,
    action_digest,
    build_action,
    build_close_duplicate,
    build_issue_create,
    canonical_json,
    parse_action,
    revise,
)
from resolveflow.gate.domain.parts import Drops, PartRecord, dropped
from resolveflow.gate.domain.suggestions import suggestion_kind
from resolveflow.gate.duplicate_checks import check_chain
from resolveflow.gate.quiet import DEFAULT_QUIET, Quiet
from resolveflow.gate.store import digest as digest_store
from resolveflow.gate.store import duplicate_claims as claims
from resolveflow.gate.store import executions as execution_store
from resolveflow.gate.store import parts as part_store
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.store import audit
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)


def _require_proposer(principal: Principal) -> None:
    if not (principal.has(Role.REQUESTER) or principal.has(Role.APPROVER)):
        raise NotAuthorized(f"{principal.subject} may not propose or edit actions")


def _check_allowed(conn: Connection, tenant_id: UUID, repository: str) -> None:
    if repository.startswith(("gitlab:", "email:")):
        # a GitLab project comes from the tenant's aliases (service/issues_prepare); a mailbox is
        # checked against the policy file and the approver's grant when approved and sent
        return
    if not tenant_store.repository_allowed(conn, tenant_id, repository):
        raise PolicyViolation(f"repository {repository} is not on this tenant's allowlist")


def create_proposal(
    db: Database,
    principal: Principal,
    *,
    repository: str,
    issue: int,
    comment: str | None,
    labels: list[str],
    note: str | None = None,
    run_id: UUID | None = None,
    author_kind: str = "principal",
    quiet: Quiet = DEFAULT_QUIET,
    parts: Sequence[PartRecord] = (),
    label_notes: tuple[LabelNote, ...] = (),
    suggest: bool = False,
) -> Proposal:
    """A ``github.issue`` proposal: a comment and/or labels on an existing issue (with why
    each label, and how sure, when the product proposing it knows). A run's ``parts`` are
    recorded in the transaction that records its first version."""
    _require_proposer(principal)
    action = build_action(repository, issue, comment, labels, label_notes, suggest)
    with db.tenant(principal.tenant_id) as conn:
        made = _insert_first_version_in(conn, principal, action, note, run_id, author_kind, quiet)
        if run_id is not None and parts:
            part_store.insert_parts(conn, principal.tenant_id, run_id, made.id, parts)
        return made


def create_issue_proposal(
    db: Database,
    principal: Principal,
    *,
    repository: str,
    title: str,
    body: str,
    labels: list[str],
    assignees: list[str],
    note: str | None = None,
    quiet: Quiet = DEFAULT_QUIET,
) -> Proposal:
    """A ``github.issue_create`` proposal: a new issue in an allowlisted repository."""
    _require_proposer(principal)
    action = build_issue_create(repository, title, body, labels, assignees)
    return _insert_first_version(db, principal, action, note, None, "principal", quiet)


def create_close_duplicate_proposal(
    db: Database,
    principal: Principal,
    github: GitHub,
    *,
    repository: str,
    issue: int,
    original: int,
    grace_hours: int = DEFAULT_GRACE_HOURS,
    comment: str | None = None,
    note: str | None = None,
    rationale: str | None = None,
    confidence: Confidence | None = None,
    suggest: bool = False,
) -> Proposal:
    """A ``github.issue_close_duplicate`` proposal (``rationale``/``confidence``: why it looks
    like a duplicate and how sure, sent with the close). The issue must be open, with no other
    close-as-duplicate in flight (``AlreadyExists`` naming it), and the original one that can be
    pointed to (no chain, no circle: ``gate/duplicate_checks.py``); both are checked again
    before the notice and before the close."""
    _require_proposer(principal)
    action = build_close_duplicate(
        repository, issue, original, grace_hours, comment, rationale, confidence, suggest
    )
    tenant_id, repository = principal.tenant_id, action.repository
    with db.tenant(tenant_id) as conn:
        _check_allowed(conn, tenant_id, repository)
        held = claims.holder(conn, tenant_id, repository, issue)
    if held is not None:  # said before GitHub is asked anything
        raise claims.in_flight(repository, issue, held)
    github = acting_for(github, tenant_id)
    target = github.get_issue(RepoName.parse(repository), issue)
    if target.state == "closed" or target.is_pull_request:
        what = "a pull request" if target.is_pull_request else "already closed"
        raise PolicyViolation(f"{repository}#{issue} is {what}")
    check_chain(github, db, tenant_id, action)
    # The insert claims the issue (migration 0036): of two proposals racing, one is refused here.
    with db.tenant(tenant_id) as conn, claims.refused_when_held(conn, tenant_id, repository, issue):
        return _insert_first_version_in(
            conn, principal, action, note, None, "principal", DEFAULT_QUIET
        )


def create_prepared_proposal(
    db: Database,
    principal: Principal,
    action: AnyAction,
    note: str | None = None,
    quiet: Quiet = DEFAULT_QUIET,
) -> Proposal:
    """A proposal of an action that ``ask/issues_prepare`` resolved from configuration."""
    with db.tenant(principal.tenant_id) as conn:
        return propose_prepared(conn, principal, action, note, quiet)


def propose_prepared(
    conn: Connection,
    principal: Principal,
    action: AnyAction,
    note: str | None = None,
    quiet: Quiet = DEFAULT_QUIET,
) -> Proposal:
    """``create_prepared_proposal`` in the caller's transaction (a draft's version and the
    proposal it becomes are one step: mail/drafts)."""
    _require_proposer(principal)
    return _insert_first_version_in(conn, principal, action, note, None, "principal", quiet)


def _insert_first_version(
    db: Database,
    principal: Principal,
    action: AnyAction,
    note: str | None,
    run_id: UUID | None,
    author_kind: str,
    quiet: Quiet,
) -> Proposal:
    with db.tenant(principal.tenant_id) as conn:
        return _insert_first_version_in(conn, principal, action, note, run_id, author_kind, quiet)


def _insert_first_version_in(
    conn: Connection,
    principal: Principal,
    action: AnyAction,
    note: str | None,
    run_id: UUID | None,
    author_kind: str,
    quiet: Quiet,
) -> Proposal:
    """The first version of a new lineage. What a product suggests is routed here, once, for
    every product (``gate/quiet.py``): refused when its kind is off in its place, put in the
    digest instead of the inbox when its kind goes there."""
    proposal_id = uuid.uuid4()
    _check_allowed(conn, principal.tenant_id, action.repository)
    branch = digest_store.run_branch(conn, principal.tenant_id, run_id) if run_id else None
    kind = suggestion_kind(action, author_kind, note, branch)
    routed = None
    if kind is not None:
        routed = quiet_service.route_in(conn, principal, quiet, action.repository, kind)
        quiet_service.refuse_off(quiet, routed, action)
    proposal = proposal_store.insert_proposal(
        conn,
        proposal_id=proposal_id,
        tenant_id=principal.tenant_id,
        lineage_id=proposal_id,
        version=1,
        action=action.canonical(),
        digest=action_digest(action),
        author_kind=author_kind,
        created_by=principal.id,
        run_id=run_id,
        note=note,
    )
    details: dict[str, Any] = {"digest": proposal.digest, "version": 1, "kind": action.kind}
    if routed is not None and routed.why is not None:
        quiet_service.record_in(conn, principal.tenant_id, proposal.id, routed)
        details["to_digest"] = routed.why.value
    audit.record(
        conn,
        tenant_id=principal.tenant_id,
        actor=actor_of(principal),
        event=AuditEvent.PROPOSAL_CREATED,
        subject_type="proposal",
        subject_id=proposal.id,
        run_id=run_id,
        details=details,
    )
    return proposal


def edit_proposal(
    db: Database, principal: Principal, proposal_id: UUID, changes: ActionChanges
) -> Proposal:
    """Write a new version from the latest one; it needs its own approval."""
    with db.tenant(principal.tenant_id) as conn:
        return edit_in(conn, principal, proposal_id, changes)


def edit_in(
    conn: Connection, principal: Principal, proposal_id: UUID, changes: ActionChanges
) -> Proposal:
    """``edit_proposal`` in the caller's transaction."""
    _require_proposer(principal)
    base = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
    # An edit reads the mail it changes (and answers with it): the grant holds first.
    kind_rules.require_readable(conn, principal, base.action)
    proposal_store.lock_lineage(conn, base.lineage_id)
    latest = proposal_store.latest_version(conn, principal.tenant_id, base.lineage_id)
    versions = proposal_store.lineage_versions(conn, principal.tenant_id, base.lineage_id)
    started = execution_store.carried_out_version(conn, principal.tenant_id, base.lineage_id)
    if started is not None:
        raise InvalidTransition(
            f"version {started.version} of this proposal was approved and its execution is"
            f" {started.state}:"
            " a proposal whose execution has started or ended cannot be edited (propose a"
            " new action instead)"
        )
    action = revise(parse_action(versions[-1].action), changes)
    if action_digest(action) == versions[-1].digest:
        raise InvalidInput("the edit changes nothing")
    proposal = proposal_store.insert_proposal(
        conn,
        proposal_id=uuid.uuid4(),
        tenant_id=principal.tenant_id,
        lineage_id=base.lineage_id,
        version=latest + 1,
        action=action.canonical(),
        digest=action_digest(action),
        author_kind="principal",
        created_by=principal.id,
        run_id=base.run_id,
    )
    audit.record(
        conn,
        tenant_id=principal.tenant_id,
        actor=actor_of(principal),
        event=AuditEvent.PROPOSAL_EDITED,
        subject_type="proposal",
        subject_id=proposal.id,
        run_id=base.run_id,
        details={
            "digest": proposal.digest,
            "version": proposal.version,
            "previous": str(versions[-1].id),
        },
    )
    return proposal


def drop_parts(db: Database, principal: Principal, proposal_id: UUID, drops: Drops) -> Proposal:
    """A new version of the lineage's latest without the parts, labels or items named
    (``gate/domain/parts.py``), through the edit path: it needs its own approval of its own
    digest, and the decisions then read each dropped part as rejected."""
    _require_proposer(principal)
    with db.tenant(principal.tenant_id) as conn:
        base = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
        kind_rules.require_readable(conn, principal, base.action)
        found = part_store.parts_of_lineages(conn, principal.tenant_id, [base.lineage_id])
        proposal_store.lock_lineage(conn, base.lineage_id)
        versions = proposal_store.lineage_versions(conn, principal.tenant_id, base.lineage_id)
        latest = parse_action(versions[-1].action)
        comment = getattr(latest, "comment", None)
        changes = dropped(comment, latest.labels, found.get(base.lineage_id, ()), drops)
        return edit_in(conn, principal, versions[-1].id, changes)


def carried_out(db: Database, principal: Principal, proposal_id: UUID) -> dict[str, Any] | None:
    """The version of ``proposal_id``'s lineage that was (or is being) carried out, which pages
    show as the proposal; None while none was. No version after it can be written or decided."""
    with db.tenant(principal.tenant_id) as conn:
        proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
        done = execution_store.carried_out_version(conn, principal.tenant_id, proposal.lineage_id)
    if done is None:
        return None
    return {"id": str(done.proposal_id), "version": done.version, "state": done.state.value}


def describe(db: Database, principal: Principal, proposal_id: UUID) -> dict[str, Any]:
    """Everything a reviewer needs to decide: the exact action, its digest, history and state."""
    with db.tenant(principal.tenant_id) as conn:
        proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
        # Like the tenant, the mailbox grant bounds who reads an email (403 without it); every
        # page, API answer and command that shows a proposal comes through here.
        kind_rules.require_readable(conn, principal, proposal.action)
        approval = proposal_store.approval_for_proposal(conn, principal.tenant_id, proposal.id)
        execution = execution_store.execution_for_proposal(conn, principal.tenant_id, proposal.id)
        versions = proposal_store.lineage_versions(conn, principal.tenant_id, proposal.lineage_id)
        like = feedback.like_this_in(conn, principal, proposal.lineage_id)
        parts = part_service.lineage_parts_in(conn, principal, proposal)
    action = parse_action(proposal.action)
    return {
        "id": str(proposal.id),
        "lineage_id": str(proposal.lineage_id),
        "version": proposal.version,
        "latest_version": versions[-1].version,
        "digest": proposal.digest,
        "kind": action.kind,
        "summary": action.summary,
        "canonical": canonical_json(action),
        "action": proposal.action,
        "author_kind": proposal.author_kind,
        "created_at": proposal.created_at.isoformat(),
        "run_id": str(proposal.run_id) if proposal.run_id else None,
        "decision": approval.decision.value if approval else None,
        "approval": _approval_view(approval),
        "execution": {"id": str(execution.id), "state": execution.state.value}
        if execution
        else None,
        "versions": [
            {
                "id": str(v.id),
                "version": v.version,
                "digest": v.digest,
                "decision": v.decision,
            }
            for v in versions
        ],
        # How suggestions like this one fared in its place (issue 31); None: a person's own.
        "like_this": _like_view(like),
        # The parts of the run that proposed it, each with its score, floor and band, and
        # whether it is still in this version (what may be dropped from it); [] for others.
        "parts": [part.as_json() for part in parts],
    }


def _like_view(like: feedback.LikeThis | None) -> dict[str, Any] | None:
    if like is None:
        return None
    figures = like.acceptance
    view: dict[str, Any] = {
        "kind": figures.kind.value,
        "detail": figures.detail,
        "approved": figures.approved,
        "edited": figures.edited,
        "rejected": figures.rejected,
        "decisions": figures.decisions,
        "days": feedback.DAYS,
        "score": None,
    }
    if like.score is not None and like.band is not None and like.in_band is not None:
        view["score"] = {
            "value": round(like.score, 4),
            "band": list(like.band),
            "approved": like.in_band.approved,
            "edited": like.in_band.edited,
            "rejected": like.in_band.rejected,
            "floor": like.floor,
        }
    return view


def _approval_view(approval: Approval | None) -> dict[str, Any] | None:
    if approval is None:
        return None
    return {
        "id": str(approval.id),
        "decision": approval.decision.value,
        "principal_id": str(approval.principal_id),
        "reason": approval.reason,
        "decided_at": approval.decided_at.isoformat(),
        "expires_at": approval.expires_at.isoformat() if approval.expires_at else None,
    }


def list_proposals(db: Database, principal: Principal, limit: int = 50) -> list[dict[str, Any]]:
    with db.tenant(principal.tenant_id) as conn:
        rows = proposal_store.list_proposals(conn, principal.tenant_id, limit)
    return [
        {
            "id": str(row.proposal.id),
            "version": row.proposal.version,
            "digest": row.proposal.digest,
            "kind": parse_action(row.proposal.action).kind,
            "target": parse_action(row.proposal.action).summary,
            "decision": row.decision,
            "execution_id": str(row.execution_id) if row.execution_id else None,
            "execution_state": row.execution_state,
            "created_at": row.proposal.created_at.isoformat(),
        }
        for row in rows
    ]
