"""The JSON API (``/api/v1``): runs, proposals, decisions, executions, search and the audit trail.

Authenticate with ``Authorization: Bearer rf_...`` (the same API tokens as the CLI) or a browser
session (then unsafe requests need ``X-CSRF-Token``). Decisions are recorded at once and carried
out by the worker, so approve and reject answer 202.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from resolveflow.accounts import limits
from resolveflow.bootstrap.issue_check import check_issue
from resolveflow.domain.vocabulary import ExecutionState, RunStatus
from resolveflow.gate import decisions, feedback, quiet
from resolveflow.gate import executions as execution_service
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.actions import ActionChanges
from resolveflow.gate.domain.actions.github_issue_close_duplicate import (
    DEFAULT_GRACE_HOURS,
    MAX_GRACE_HOURS,
    MIN_GRACE_HOURS,
)
from resolveflow.gate.domain.parts import Drops
from resolveflow.triage import runs as run_service
from resolveflow.triage.domain.references import parse_issue_reference
from resolveflow.web import views
from resolveflow.web.security import Viewer, check_csrf, deciding, identify, wired

router = APIRouter(prefix="/api/v1", tags=["api"])

Json = dict[str, Any]


def viewer(request: Request) -> Viewer:
    # A request with a body was authenticated before its body was read (web/body_limits.py):
    # that answer is kept in the request's state, so the route does not look the token up again.
    known = getattr(request.state, "viewer", None)
    if isinstance(known, Viewer):
        return known
    found = identify(request)
    check_csrf(request, found)
    request.state.viewer = found
    return found


ViewerDep = Annotated[Viewer, Depends(viewer)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartRun(_Body):
    issue: str = Field(min_length=3, max_length=300, examples=["acme/widgets#42"])


class Approve(_Body):
    digest: str = Field(pattern=r"^[0-9a-f]{64}$", description="The SHA-256 you reviewed.")


class Reject(_Body):
    reason: str = Field(min_length=1, max_length=2000)


class Edit(_Body):
    comment: str | None = Field(default=None, max_length=65_000, description="'' drops it.")
    labels: list[Annotated[str, Field(min_length=1, max_length=50)]] | None = Field(
        default=None, max_length=50
    )
    title: str | None = Field(default=None, max_length=256, description="A new issue's title.")
    body: str | None = Field(default=None, max_length=65_000, description="A new issue's body.")
    assignees: list[Annotated[str, Field(min_length=1, max_length=39)]] | None = Field(
        default=None, max_length=10
    )

    def changes(self) -> ActionChanges:
        return ActionChanges(
            comment=self.comment,
            labels=tuple(self.labels) if self.labels is not None else None,
            title=self.title,
            body=self.body,
            assignees=tuple(self.assignees) if self.assignees is not None else None,
        )


_Name = Annotated[str, Field(min_length=1, max_length=120)]


class Drop(_Body):
    """What to take out of a run's proposal before approving: whole parts by name (``related``,
    ``missing_facts``, ``labels``...), single labels, single items as ``PART:REF``."""

    parts: list[_Name] = Field(default_factory=list, max_length=20)
    labels: list[Annotated[str, Field(min_length=1, max_length=50)]] = Field(
        default_factory=list, max_length=50
    )
    items: list[_Name] = Field(default_factory=list, max_length=50, examples=[["related:123"]])

    def drops(self) -> Drops:
        return Drops(tuple(self.parts), tuple(self.labels), tuple(self.items))


class CloseDuplicate(_Body):
    # Strict: ``true``, ``"1"`` and ``1.0`` are not an issue number or a number of hours (lax
    # pydantic would read each as 1), so a client's type mistake is refused, not guessed at.
    model_config = ConfigDict(extra="forbid", strict=True)

    issue: str = Field(min_length=3, max_length=300, examples=["acme/widgets#42"])
    original: int = Field(gt=0, lt=2**31, description="The issue it duplicates, same repository.")
    grace_hours: int = Field(default=DEFAULT_GRACE_HOURS, ge=MIN_GRACE_HOURS, le=MAX_GRACE_HOURS)
    comment: str | None = Field(
        default=None, max_length=65_000, description="The notice; must mention #ORIGINAL."
    )
    note: str | None = Field(default=None, max_length=2000)


class Resolve(_Body):
    was_sent: bool = Field(description="What you saw on GitHub.")
    note: str | None = Field(default=None, max_length=2000)


def _decided(result: decisions.Decided) -> Json:
    return {
        "decision": result.decision.value,
        "run_id": str(result.run_id) if result.run_id else None,
        "proposal_id": str(result.proposal_id),
        "approval_id": str(result.approval_id),
        "execution_id": str(result.execution_id) if result.execution_id else None,
        "queued": result.job_id is not None,
    }


@router.get("/me")
def me(request: Request, who: ViewerDep) -> Json:
    principal = who.principal
    return {
        "id": str(principal.id),
        "tenant_id": str(principal.tenant_id),
        "subject": principal.subject,
        "roles": sorted(role.value for role in principal.roles),
        "via": who.via,
        "usage_today": limits.usage(wired(request).db, principal),
    }


@router.get("/runs")
def list_runs(
    request: Request,
    who: ViewerDep,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[Json]:
    return run_service.list_runs(wired(request).db, who.principal, status, limit)


@router.post("/runs", status_code=201)
def start_run(request: Request, who: ViewerDep, body: StartRun) -> Json:
    """Start a triage run now (counts against the daily cap of runs)."""
    app = wired(request)
    decisions.reject_unstorable(body.issue)
    repository, number = parse_issue_reference(body.issue)
    # An issue GitHub does not have is a 404 and no run (nor a run counted against the cap).
    check_issue(app, who.principal, repository, number)
    runs_per_day = app.settings.limits.runs_per_day
    limits.consume(app.db, who.principal, limits.LimitKind.RUNS, runs_per_day)
    run_id = app.run_controller().start(who.principal, repository, number)
    return views.run_page(app.db, who.principal, run_id, app.settings.approval.ttl_seconds)


@router.get("/runs/{run_id}")
def show_run(request: Request, who: ViewerDep, run_id: UUID) -> Json:
    """The run: evidence, classification and rule, proposal, digest, approval checks, timeline."""
    app = wired(request)
    return views.run_page(app.db, who.principal, run_id, app.settings.approval.ttl_seconds)


@router.post("/runs/{run_or_proposal}/approve", status_code=202)
@router.post("/proposals/{run_or_proposal}/approve", status_code=202)
def approve(request: Request, who: ViewerDep, run_or_proposal: UUID, body: Approve) -> Json:
    return _decided(
        decisions.approve(
            wired(request).db, who.principal, run_or_proposal, body.digest, deciding(request)
        )
    )


@router.post("/runs/{run_or_proposal}/reject", status_code=202)
@router.post("/proposals/{run_or_proposal}/reject", status_code=202)
def reject(request: Request, who: ViewerDep, run_or_proposal: UUID, body: Reject) -> Json:
    return _decided(
        decisions.reject(
            wired(request).db, who.principal, run_or_proposal, body.reason, deciding(request)
        )
    )


@router.post("/runs/{run_or_proposal}/edit", status_code=201)
@router.post("/proposals/{run_or_proposal}/edit", status_code=201)
def edit(request: Request, who: ViewerDep, run_or_proposal: UUID, body: Edit) -> Json:
    """A new version of the latest proposal, with its own digest; it needs its own approval."""
    db = wired(request).db
    proposal = decisions.edit(db, who.principal, run_or_proposal, body.changes())
    return proposal_service.describe(db, who.principal, proposal.id)


@router.post("/runs/{run_or_proposal}/drop", status_code=201)
@router.post("/proposals/{run_or_proposal}/drop", status_code=201)
def drop(request: Request, who: ViewerDep, run_or_proposal: UUID, body: Drop) -> Json:
    """A new version of the latest proposal without the parts, labels or items named (the
    edit path: it has its own digest and needs its own approval)."""
    db = wired(request).db
    proposal = decisions.drop(db, who.principal, run_or_proposal, body.drops())
    return proposal_service.describe(db, who.principal, proposal.id)


@router.post("/proposals/close-duplicate", status_code=201)
def close_duplicate(request: Request, who: ViewerDep, body: CloseDuplicate) -> Json:
    """Propose closing an issue as a duplicate after a grace period (``github.issue_close_
    duplicate``): once approved, a notice is posted, and the issue is closed when the period is
    over unless someone commented, reacted with a thumbs-down, edited or reopened it."""
    app = wired(request)
    decisions.reject_unstorable(body.issue)
    repository, number = parse_issue_reference(body.issue)
    proposal = proposal_service.create_close_duplicate_proposal(
        app.db,
        who.principal,
        app.github,
        repository=repository,
        issue=number,
        original=body.original,
        grace_hours=body.grace_hours,
        comment=body.comment,
        note=body.note,
    )
    return proposal_service.describe(app.db, who.principal, proposal.id)


@router.post("/runs/{run_id}/close-duplicate", status_code=201)
def close_as_offered(request: Request, who: ViewerDep, run_id: UUID) -> Json:
    """Propose the close-after-grace a run's duplicate part offered (its issue, the original it
    names, the default notice and grace period): the run page's one click."""
    app = wired(request)
    proposal = run_service.close_as_offered(app.db, who.principal, app.github, run_id)
    return proposal_service.describe(app.db, who.principal, proposal.id)


@router.get("/proposals")
def list_proposals(
    request: Request, who: ViewerDep, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[Json]:
    return proposal_service.list_proposals(wired(request).db, who.principal, limit)


@router.get("/proposals/{proposal_id}")
def show_proposal(request: Request, who: ViewerDep, proposal_id: UUID) -> Json:
    return proposal_service.describe(wired(request).db, who.principal, proposal_id)


@router.get("/decisions/acceptance")
def decisions_acceptance(
    request: Request,
    who: ViewerDep,
    last: Annotated[int, Query(ge=1, le=feedback.MAX_DECISIONS)] = feedback.LAST,
    days: Annotated[int, Query(ge=1, le=feedback.MAX_DAYS)] = feedback.DAYS,
) -> Json:
    """Per repository and kind of suggestion: approved, edited, rejected over its last decisions."""
    report = feedback.acceptance_report(wired(request).db, who.principal, last, days)
    return report.as_json()


@router.get("/decisions")
def decisions_list(
    request: Request,
    who: ViewerDep,
    days: Annotated[int, Query(ge=1, le=feedback.MAX_DAYS)] = feedback.DAYS,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[Json]:
    """Each decision on a suggestion, newest first, with what an edit changed and why."""
    found = feedback.decision_examples(wired(request).db, who.principal, days)
    return [example.as_json() for example in found[:limit]]


@router.get("/digest")
def digest(request: Request, who: ViewerDep, day: str = "") -> Json:
    """The daily digest (``day``: YYYY-MM-DD; else the last days), and the kinds that went
    there by themselves."""
    app = wired(request)
    found = quiet.digest(app.db, who.principal, quiet.parse_day(day))
    moved = quiet.notices(app.db, who.principal, app.quiet())
    return {**found.as_json(), "moved": [notice.as_json() for notice in moved]}


@router.get("/executions")
def list_executions(
    request: Request,
    who: ViewerDep,
    state: ExecutionState | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[Json]:
    return execution_service.list_executions(wired(request).db, who.principal, state, limit)


@router.get("/executions/{execution_id}")
def show_execution(request: Request, who: ViewerDep, execution_id: UUID) -> Json:
    return execution_service.show_execution(wired(request).db, who.principal, execution_id)


@router.post("/executions/{execution_id}/resolve")
def resolve(request: Request, who: ViewerDep, execution_id: UUID, body: Resolve) -> Json:
    """Settle an ``unknown`` execution after looking at GitHub; nothing is ever resent."""
    state = decisions.resolve(
        wired(request).db, who.principal, execution_id, was_sent=body.was_sent, note=body.note
    )
    return {"id": str(execution_id), "state": state}


@router.get("/search")
def search(
    request: Request,
    who: ViewerDep,
    q: Annotated[str, Query(min_length=1, max_length=4000)],
    k: Annotated[int, Query(ge=1, le=100)] = 10,
) -> list[Json]:
    """Hybrid search over the tenant's index."""
    decisions.reject_unstorable(q)
    searcher = wired(request).searcher()
    return [hit.as_json() for hit in searcher.search(who.principal.tenant_id, q, k=k)]


@router.get("/audit")
def audit_trail(
    request: Request, who: ViewerDep, limit: Annotated[int, Query(ge=1, le=1000)] = 200
) -> list[Json]:
    return views.audit_trail(wired(request).db, who.principal, limit)
