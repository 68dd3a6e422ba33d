"""``/api/v1/mail/drafts``: draft a reply to a request from a mailbox's past replies, read a
draft, and edit it (``mail/drafts.py``, docs/email.md).

Who may: a requester or approver of the tenant who holds a grant for the mailbox
(``principals grant --mailbox``). A draft whose checks pass becomes an ``email.send`` proposal,
approved by its digest like any other (``POST /api/v1/proposals/{id}/approve``); an edit is a new
version, checked again, and needs its own approval.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from resolveflow.errors import InvalidInput
from resolveflow.mail.domain.message import MailMessage
from resolveflow.mail.drafts import Edit, MailDrafts
from resolveflow.mail.views import draft_view
from resolveflow.web.api import ViewerDep
from resolveflow.web.security import Viewer, wired

router = APIRouter(prefix="/api/v1", tags=["mail"])

MAX_REQUEST_CHARS = 2_000_000  # one message's source, attachments included
MAX_FACTS_CHARS = 20_000
MAX_BODY_CHARS = 1_000_000


class DraftIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mailbox: str = Field(min_length=3, max_length=320, examples=["support@acme.example"])
    request: str = Field(
        min_length=1,
        max_length=MAX_REQUEST_CHARS,
        description="The request to answer: the message's full source (RFC 5322, as in a .eml file).",
    )
    facts: str = Field(
        default="",
        max_length=MAX_FACTS_CHARS,
        description="Staff facts for the reply, one 'name: value' per line.",
    )


class EditIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1, description="The version you read and are editing.")
    subject: str | None = Field(default=None, max_length=998)
    body: str | None = Field(default=None, max_length=MAX_BODY_CHARS)
    to: list[str] | None = Field(default=None, max_length=100)
    cc: list[str] | None = Field(default=None, max_length=100)
    bcc: list[str] | None = Field(default=None, max_length=100)
    facts: str | None = Field(
        default=None,
        max_length=MAX_FACTS_CHARS,
        description="Replace the staff facts ('name: value' lines) the new version is checked with.",
    )


def drafts_for(request: Request, who: Viewer) -> MailDrafts:
    from resolveflow.bootstrap.mail_drafts import mail_drafts

    return mail_drafts(wired(request), who.principal)


def parse_request(request: Request, source: str) -> MailMessage:
    """The request's source as a parsed message within the mail bounds, or one clear reason."""
    from resolveflow.mail.loader import parse_message

    if "\x00" in source:
        raise InvalidInput("the request may not contain NUL characters (U+0000)")
    try:
        data = source.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("the request is not valid text (lone surrogates)") from None
    return parse_message(data, "the request", wired(request).settings.mail.bounds())


def view_of(request: Request, who: Viewer, service: MailDrafts, draft_id: UUID) -> dict[str, Any]:
    return draft_view(wired(request).db, who.principal, *service.load(who.principal, draft_id))


@router.post(
    "/mail/drafts",
    status_code=201,
    responses={
        400: {
            "description": "a request that is not a message, or facts that are not 'name: value'"
        },
        403: {"description": "no grant for the mailbox, or not a requester or approver"},
        422: {"description": "not JSON, or a field too long"},
    },
)
def create_draft(request: Request, who: ViewerDep, body: DraftIn) -> dict[str, Any]:
    """Draft a reply from the mailbox's most similar past replies. The draft is checked (no
    invented commitments, missing information as visible [[placeholders]], recipients only from
    the thread or allowed domains); one that passes is proposed, with its digest."""
    service = drafts_for(request, who)
    record, _ = service.draft(
        who.principal, body.mailbox, parse_request(request, body.request), body.facts
    )
    return view_of(request, who, service, record.id)


@router.get("/mail/drafts/{draft_id}")
def get_draft(request: Request, who: ViewerDep, draft_id: UUID) -> dict[str, Any]:
    """A draft: the request, every version with its examples, checks and proposal."""
    service = drafts_for(request, who)
    return view_of(request, who, service, draft_id)


@router.post("/mail/drafts/{draft_id}/versions", status_code=201)
def edit_draft(request: Request, who: ViewerDep, draft_id: UUID, body: EditIn) -> dict[str, Any]:
    """Edit the latest version (name it in ``version``): a new version, checked again and, if it
    passes, proposed again; the earlier approval does not cover it."""
    service = drafts_for(request, who)
    change = Edit(
        subject=body.subject,
        body=body.body,
        to=tuple(body.to) if body.to is not None else None,
        cc=tuple(body.cc) if body.cc is not None else None,
        bcc=tuple(body.bcc) if body.bcc is not None else None,
        facts=body.facts,
    )
    service.edit(who.principal, draft_id, body.version, change)
    return view_of(request, who, service, draft_id)
