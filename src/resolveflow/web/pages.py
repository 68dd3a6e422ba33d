"""The pages: sign-in, the inbox, a run, a proposal, executions and the audit trail (Jinja2,
htmx-boosted).

Every form posts with the session's CSRF token and answers with a redirect (303) back to a page,
so the pages work without JavaScript too; htmx only makes them smoother (boosted navigation,
inbox filters, and the run and proposal pages following their execution until it settles).
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from resolveflow.domain.vocabulary import Decision, ExecutionState, RunStatus
from resolveflow.errors import AuthenticationFailed, InvalidInput
from resolveflow.gate import decisions, feedback, posting, quiet
from resolveflow.gate import executions as execution_service
from resolveflow.gate.approvals import RepositoryLabels
from resolveflow.gate.domain.actions import ActionChanges
from resolveflow.gate.domain.parts import Drops
from resolveflow.gate.outcome_words import GITLAB_KIND
from resolveflow.triage import runs as run_service
from resolveflow.web import views
from resolveflow.web.security import Viewer, check_csrf, deciding, identify, wired
from resolveflow.web.words import words

router = APIRouter(include_in_schema=False)

NOTICES = {
    "approved": "Approved. The worker posts it; this page follows along.",
    "rejected": "Rejected. Nothing will be posted.",
    "edited": "A new version was written; it needs its own approval.",
    "resolved": "Recorded. Nothing was resent.",
}
_SETTLED_RUN = {status.value for status in RunStatus if status.is_settled}
# Unknown is not final, but only a person or reconciliation moves it on: stop following.
_SETTLED_EXECUTION = {state.value for state in ExecutionState if state.is_final} | {"unknown"}


def _render(request: Request, template: str, viewer: Viewer | None, **values: Any) -> Response:
    templates = request.app.state.templates
    notice = NOTICES.get(request.query_params.get("notice", ""))
    response: Response = templates.TemplateResponse(
        request, template, {"viewer": viewer, "notice": notice, **values}
    )
    return response


def _back(path: str, notice: str) -> RedirectResponse:
    return RedirectResponse(f"{path}?notice={notice}", status_code=303)


def _form_viewer(request: Request, csrf_token: str) -> Viewer:
    viewer = identify(request)
    check_csrf(request, viewer, csrf_token)
    return viewer


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/inbox", status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> Response:
    try:
        identify(request)
        return RedirectResponse("/inbox", status_code=303)
    except AuthenticationFailed:
        pass
    settings = wired(request).settings
    return _render(
        request,
        "login.html",
        None,
        oauth=bool(settings.github.oauth_client_id),
        signed_out=request.query_params.get("signed_out") == "1",
    )


@router.get("/inbox", response_class=HTMLResponse)
def inbox(
    request: Request,
    repository: str = "",
    classification: str = "",
    status: str = "awaiting_approval",
) -> Response:
    viewer = identify(request)
    data = views.inbox(
        wired(request).db,
        viewer.principal,
        status=status or None,
        repository=repository or None,
        classification=classification or None,
    )
    if request.headers.get("HX-Target") == "inbox-body":
        return _render(request, "_inbox_rows.html", viewer, heading=_heading(data), **data)
    # The kinds that went to the digest by themselves: one line each, above the list.
    moved = quiet.notices(wired(request).db, viewer.principal, wired(request).quiet())
    return _render(request, "inbox.html", viewer, heading=_heading(data), quiet=moved, **data)


def _heading(data: dict[str, Any]) -> str:
    """The inbox's heading says what the filters show."""
    filters = data["filters"]
    status = filters["status"]
    if status == RunStatus.AWAITING_APPROVAL.value:
        shown = "Waiting for a decision"
    elif status:
        shown = f"Runs: {words(status, 'RunStatus')}"
    else:
        shown = "All runs and proposals"
    if filters["classification"]:
        shown += f" · {words(filters['classification'], 'Classification')}"
    if filters["repository"]:
        shown += f" · {filters['repository']}"
    return shown


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: UUID) -> Response:
    return _run(request, run_id, "run.html")


@router.get("/runs/{run_id}/status", response_class=HTMLResponse)
def run_status(request: Request, run_id: UUID, seen: str = "") -> Response:
    """The part of the run page that changes while the worker runs (polled by htmx). A run that
    was gathering evidence when the page loaded and has moved on reloads the whole page, which
    now has a proposal (or says why not)."""
    response = _run(request, run_id, "_run_status.html")
    if seen == RunStatus.RUNNING.value and response.headers.get("X-Run-Status") != seen:
        response.headers["HX-Refresh"] = "true"
    return response


def _run(request: Request, run_id: UUID, template: str) -> Response:
    viewer = identify(request)
    app = wired(request)
    ttl, labels = app.settings.approval.ttl_seconds, RepositoryLabels(app.github)
    view = views.run_page(app.db, viewer.principal, run_id, ttl, labels)
    proposal = view.get("proposal") or {}
    posting = _posting(request, viewer, proposal, (proposal.get("execution") or {}).get("id"))
    shown = _shown_status(view)
    response = _render(
        request,
        template,
        viewer,
        run=view,
        shown_status=shown,
        fragment=template == "_run_status.html",
        **_progress(view),
        **posting,
    )
    response.headers["X-Run-Status"] = view["status"]
    return response


# A decision is taken at once, and the worker moves the run on a moment later: until it has,
# the run's stored status still says it waits for one. The page says what is already true.
_AFTER_DECISION = {
    Decision.APPROVED.value: RunStatus.EXECUTING.value,
    Decision.REJECTED.value: RunStatus.REJECTED.value,
}


def _shown_status(view: dict[str, Any]) -> str:
    status: str = view["status"]
    decision = (view.get("proposal") or {}).get("decision")
    if status == RunStatus.AWAITING_APPROVAL.value and decision in _AFTER_DECISION:
        return _AFTER_DECISION[decision]
    return status


def _posting(
    request: Request, viewer: Viewer, proposal: dict[str, Any], execution_id: str | None
) -> dict[str, Any]:
    """Who would post if the viewer approved (before a decision), and what came of it (after)."""
    if not proposal:
        return {"poster": None, "outcome": None}
    app = wired(request)
    lookup = app.token_lookup()
    gitlab = app.gitlab() if proposal.get("kind") == GITLAB_KIND else None
    if proposal.get("decision") is None:
        principal = viewer.principal
        poster = posting.who_posts(
            app.db,
            principal.tenant_id,
            principal.id,
            app.github,
            lookup,
            kind=proposal.get("kind"),
            gitlab=gitlab,
            mailbox=(proposal.get("action") or {}).get("mailbox"),
        )
        return {"poster": poster, "outcome": None}
    found = posting.outcome(
        app.db, viewer.principal, proposal.get("approval"), execution_id, app.github, lookup, gitlab
    )
    return {"poster": None, "outcome": found}


def _progress(view: dict[str, Any]) -> dict[str, Any]:
    """Whether the page keeps asking for its status: while evidence is gathered, and after a
    decision until the run settles. The execution settles first (the comment is posted, then
    the run records it and completes): stopping then would leave the page saying "being
    carried out" under a posted comment. An unknown outcome waits for a person: stop."""
    proposal = view.get("proposal") or {}
    execution = proposal.get("execution") or {}
    state = execution.get("state")
    running = view["status"] == RunStatus.RUNNING.value
    following = running or (
        bool(proposal.get("decision"))
        and view["status"] not in _SETTLED_RUN
        and state != ExecutionState.UNKNOWN.value
    )
    return {"following": following, "execution_state": state}


@router.post("/runs/{target_id}/approve")
@router.post("/proposals/{target_id}/approve")
def approve(
    request: Request, target_id: UUID, digest: str = Form(""), csrf_token: str = Form("")
) -> Response:
    viewer = _form_viewer(request, csrf_token)
    decisions.approve(
        wired(request).db, viewer.principal, target_id, digest.strip(), deciding(request)
    )
    return _back(_page_of(request, target_id), "approved")


@router.post("/runs/{target_id}/reject")
@router.post("/proposals/{target_id}/reject")
def reject(
    request: Request, target_id: UUID, reason: str = Form(""), csrf_token: str = Form("")
) -> Response:
    viewer = _form_viewer(request, csrf_token)
    decisions.reject(wired(request).db, viewer.principal, target_id, reason, deciding(request))
    return _back(_page_of(request, target_id), "rejected")


@router.post("/runs/{run_id}/close-duplicate")
def close_as_offered(request: Request, run_id: UUID, csrf_token: str = Form("")) -> Response:
    """The run page's offer to close its issue as a duplicate after a grace period: creates
    that proposal (``triage/runs.py::close_as_offered``) and shows it."""
    viewer = _form_viewer(request, csrf_token)
    app = wired(request)
    proposal = run_service.close_as_offered(app.db, viewer.principal, app.github, run_id)
    return RedirectResponse(f"/proposals/{proposal.id}", status_code=303)


def _page_of(request: Request, target_id: UUID) -> str:
    """The page a decision form was on: the run's or the proposal's (from the matched route)."""
    section = request.scope["route"].path.split("/")[1]  # "runs" or "proposals"
    return f"/{section}/{target_id}"


@router.post("/runs/{run_id}/edit")
def edit(
    request: Request,
    run_id: UUID,
    comment: str = Form(""),
    labels: str = Form(""),
    csrf_token: str = Form(""),
) -> Response:
    viewer = _form_viewer(request, csrf_token)
    names = [name.strip() for name in labels.split(",") if name.strip()]
    if len(comment) > 65_000 or len(names) > 50:
        raise InvalidInput("the comment or the label list is too long")
    changes = ActionChanges(comment=comment, labels=tuple(names))
    decisions.edit(wired(request).db, viewer.principal, run_id, changes)
    return _back(f"/runs/{run_id}", "edited")


@router.get("/proposals/{proposal_id}", response_class=HTMLResponse)
def proposal_page(request: Request, proposal_id: UUID) -> Response:
    return _proposal(request, proposal_id, "proposal.html")


@router.get("/proposals/{proposal_id}/status", response_class=HTMLResponse)
def proposal_status(request: Request, proposal_id: UUID) -> Response:
    return _proposal(request, proposal_id, "_proposal_status.html")


def _waiting_out_grace(outcome: dict[str, Any] | None) -> bool:
    """Queued again after writing something: a close as a duplicate whose notice is out (read
    from the outcome, the same read the page's state line shows)."""
    found = outcome or {}
    return found.get("state") == ExecutionState.PENDING.value and bool(found.get("url"))


def _proposal(request: Request, proposal_id: UUID, template: str) -> Response:
    """The page follows the execution once the proposal is approved, until it settles."""
    viewer = identify(request)
    app = wired(request)
    ttl = app.settings.approval.ttl_seconds
    labels = RepositoryLabels(app.github)  # "labels exist" without a run: read once here
    view = views.proposal_page(
        app.db, viewer.principal, proposal_id, ttl, labels, app.mailbox_lookup(), app.alias_lookup()
    )
    state = (view["execution"] or {}).get("state")
    following = view["decision"] == "approved" and state not in _SETTLED_EXECUTION
    posting = _posting(request, viewer, view, (view["execution"] or {}).get("id"))
    waiting_out_grace = _waiting_out_grace(posting["outcome"])
    if waiting_out_grace:
        following = False  # days, not seconds: the page is read again when someone comes back
    return _render(
        request,
        template,
        viewer,
        waiting_out_grace=waiting_out_grace,
        proposal=view,
        following=following,
        execution_state=state,
        **posting,
    )


@router.post("/proposals/{proposal_id}/edit")
def edit_proposal(
    request: Request,
    proposal_id: UUID,
    comment: str | None = Form(None),
    title: str | None = Form(None),
    body: str | None = Form(None),
    labels: str | None = Form(None),
    assignees: str | None = Form(None),
    csrf_token: str = Form(""),
) -> Response:
    """The form sends the fields of its kind (a field left out stays as it was); a field the
    kind lacks is refused by the domain."""
    viewer = _form_viewer(request, csrf_token)
    changes = ActionChanges(
        comment=comment,
        title=title,
        body=body,
        labels=None if labels is None else _names(labels),
        assignees=None if assignees is None else _names(assignees),
    )
    if any(len(text) > 65_000 for text in changes.texts()):
        raise InvalidInput("the text is too long")
    edited = decisions.edit(wired(request).db, viewer.principal, proposal_id, changes)
    return _back(f"/proposals/{edited.id}", "edited")


@router.post("/proposals/{proposal_id}/drop")
def drop_parts(
    request: Request,
    proposal_id: UUID,
    part: Annotated[list[str], Form()] = [],  # noqa: B006 - FastAPI reads the default, never shares it
    label: Annotated[list[str], Form()] = [],  # noqa: B006
    item: Annotated[list[str], Form()] = [],  # noqa: B006
    csrf_token: str = Form(""),
) -> Response:
    """The ticked parts, labels and links taken out: a new version, with its own digest, that
    needs its own approval (the page of the new version is shown)."""
    viewer = _form_viewer(request, csrf_token)
    if len(part) + len(label) + len(item) > 100:
        raise InvalidInput("too many things to drop at once")
    drops = Drops(tuple(part), tuple(label), tuple(item))
    edited = decisions.drop(wired(request).db, viewer.principal, proposal_id, drops)
    return _back(f"/proposals/{edited.id}", "edited")


def _names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if len(names) > 50:
        raise InvalidInput("the list is too long")
    return names


@router.get("/decisions", response_class=HTMLResponse)
def decisions_page(request: Request, last: str = "", days: str = "") -> Response:
    """How each kind of suggestion fared per repository, and the latest decisions."""
    viewer = identify(request)
    db = wired(request).db
    wanted_last = _bounded(last, "last", feedback.LAST, feedback.MAX_DECISIONS)
    wanted_days = _bounded(days, "days", feedback.DAYS, feedback.MAX_DAYS)
    found = feedback.decision_examples(db, viewer.principal, wanted_days)  # read once, for both
    report = feedback.report_of(found, wanted_last, wanted_days)
    return _render(request, "decisions.html", viewer, report=report, recent=found[:DECISIONS_SHOWN])


DECISIONS_SHOWN = 50


@router.get("/digest", response_class=HTMLResponse)
def digest_page(request: Request, day: str = "") -> Response:
    """The daily digest: the suggestions sent there instead of the inbox, per day, place and
    kind, each linking to its proposal (where it is decided as any other)."""
    viewer = identify(request)
    found = quiet.digest(wired(request).db, viewer.principal, quiet.parse_day(day))
    moved = quiet.notices(wired(request).db, viewer.principal, wired(request).quiet())
    return _render(request, "digest.html", viewer, digest=found, day=day, quiet=moved)


def _bounded(value: str, name: str, default: int, most: int) -> int:
    """A whole number from a query string, or the default when it is empty."""
    if not value.strip():
        return default
    if not value.strip().isdigit() or not 1 <= int(value) <= most:
        raise InvalidInput(f"{name} must be a whole number from 1 to {most}")
    return int(value)


@router.get("/executions", response_class=HTMLResponse)
def executions_page(request: Request, state: str = "") -> Response:
    viewer = identify(request)
    known = {state.value for state in ExecutionState}
    rows = execution_service.list_executions(
        wired(request).db, viewer.principal, state if state in known else None
    )
    return _render(request, "executions.html", viewer, executions=rows, state=state)


@router.get("/executions/{execution_id}", response_class=HTMLResponse)
def execution_page(request: Request, execution_id: UUID) -> Response:
    viewer = identify(request)
    app = wired(request)
    view = views.execution_page(app.db, viewer.principal, execution_id)
    approval = {"decision": "approved", "principal_id": view["approver_id"]}
    gitlab = app.gitlab() if view["kind"] == GITLAB_KIND else None
    found = posting.outcome(
        app.db, viewer.principal, approval, view["id"], app.github, app.token_lookup(), gitlab
    )
    return _render(request, "execution.html", viewer, execution=view, outcome=found)


@router.post("/executions/{execution_id}/resolve")
def resolve(
    request: Request,
    execution_id: UUID,
    outcome: str = Form(""),
    note: str = Form(""),
    csrf_token: str = Form(""),
) -> Response:
    viewer = _form_viewer(request, csrf_token)
    if outcome not in ("sent", "not_sent"):
        raise InvalidInput("say whether it was sent or not")
    decisions.resolve(
        wired(request).db,
        viewer.principal,
        execution_id,
        was_sent=outcome == "sent",
        note=note.strip()[:2000] or None,
    )
    return _back(f"/executions/{execution_id}", "resolved")


@router.get("/audit", response_class=HTMLResponse)
def audit_page(request: Request) -> Response:
    viewer = identify(request)
    return _render(
        request, "audit.html", viewer, events=views.audit_trail(wired(request).db, viewer.principal)
    )
