"""The mail pages: ``/mail`` (the drafts of your mailboxes and a form to draft a reply to a pasted
request) and ``/mail/drafts/{id}`` (the request, the reply exactly as the recipient will see it,
the examples it came from, the checks, the edit form, and the proposal to approve).

Every text here comes from outside (requests, past replies, model output): it is shown escaped
as plain text, never rendered as HTML or Markdown. Forms carry the session's CSRF token and work
without JavaScript.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from resolveflow.errors import InvalidInput
from resolveflow.gate.decisions import reject_unstorable
from resolveflow.mail.drafts import Edit
from resolveflow.web.api_mail import (
    MAX_BODY_CHARS,
    MAX_FACTS_CHARS,
    MAX_REQUEST_CHARS,
    drafts_for,
    parse_request,
    view_of,
)
from resolveflow.web.security import Viewer, check_csrf, identify

router = APIRouter(include_in_schema=False)


def _render(request: Request, template: str, viewer: Viewer, **values: Any) -> Response:
    response: Response = request.app.state.templates.TemplateResponse(
        request, template, {"viewer": viewer, "notice": None, **values}
    )
    return response


@router.get("/mail", response_class=HTMLResponse)
def mail_page(request: Request) -> Response:
    viewer = identify(request)
    service = drafts_for(request, viewer)
    return _render(
        request,
        "mail.html",
        viewer,
        mailboxes=sorted(service.permitted(viewer.principal)),
        drafts=service.recent(viewer.principal),
        max_request=MAX_REQUEST_CHARS,
        max_facts=MAX_FACTS_CHARS,
    )


@router.post("/mail/drafts")
def create_draft(
    request: Request,
    mailbox: str = Form(""),
    source: str = Form(""),
    facts: str = Form(""),
    csrf_token: str = Form(""),
) -> Response:
    viewer = identify(request)
    check_csrf(request, viewer, csrf_token)
    if not source.strip():
        raise InvalidInput("paste the request's full source (as in a .eml file)")
    if len(source) > MAX_REQUEST_CHARS or len(facts) > MAX_FACTS_CHARS:
        raise InvalidInput("the request or the facts are too long")
    reject_unstorable(mailbox, facts)
    service = drafts_for(request, viewer)
    record, _ = service.draft(viewer.principal, mailbox, parse_request(request, source), facts)
    return RedirectResponse(f"/mail/drafts/{record.id}", status_code=303)


@router.get("/mail/drafts/{draft_id}", response_class=HTMLResponse)
def draft_page(request: Request, draft_id: UUID) -> Response:
    viewer = identify(request)
    view = view_of(request, viewer, drafts_for(request, viewer), draft_id)
    return _render(
        request,
        "mail_draft.html",
        viewer,
        draft=view,
        max_body=MAX_BODY_CHARS,
        max_facts=MAX_FACTS_CHARS,
    )


def _addresses(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.replace(";", ",").split(",") if part.strip())


@router.post("/mail/drafts/{draft_id}/edit")
def edit_draft(
    request: Request,
    draft_id: UUID,
    version: int = Form(0),
    subject: str = Form(""),
    body: str = Form(""),
    to: str = Form(""),
    cc: str = Form(""),
    bcc: str = Form(""),
    facts: str = Form(""),
    csrf_token: str = Form(""),
) -> Response:
    viewer = identify(request)
    check_csrf(request, viewer, csrf_token)
    reject_unstorable(subject, body, to, cc, bcc, facts)
    if len(body) > MAX_BODY_CHARS or len(facts) > MAX_FACTS_CHARS:
        raise InvalidInput("the body or the facts are too long")
    change = Edit(
        subject=subject,
        body=body,
        to=_addresses(to),
        cc=_addresses(cc),
        bcc=_addresses(bcc),
        facts=facts,
    )
    drafts_for(request, viewer).edit(viewer.principal, draft_id, version, change)
    return RedirectResponse(f"/mail/drafts/{draft_id}#latest", status_code=303)
