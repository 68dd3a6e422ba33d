"""What a draft looks like to the CLI, the API and the page: the request, each version with who
wrote it, the examples it came from, the checks, and the proposal a passing version became."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.mail.domain.recipients import ReceivedThread, new_recipients
from resolveflow.mail.store import drafts as store
from resolveflow.mail.store import messages as messages_store
from resolveflow.mail.store.drafts import DraftRecord, VersionRecord
from resolveflow.store.database import Database

AUTHORS = {
    "deterministic": "drafted without a model from the most similar past reply",
    "model": "drafted by a model",
    "reviewer": "edited by a reviewer",
}


def draft_view(
    db: Database, principal: Principal, record: DraftRecord, versions: list[VersionRecord]
) -> dict[str, Any]:
    request = record.request
    with db.tenant(principal.tenant_id) as conn:
        thread = messages_store.received_thread(conn, principal.tenant_id, record.mailbox, request)
    shown = [_version_view(db, principal, v) for v in versions]
    for version, view in zip(versions, shown, strict=True):
        view["new_recipients"] = _new(version, record.mailbox, thread)
    return {
        "id": str(record.id),
        "mailbox": record.mailbox,
        "created_at": record.created_at.isoformat(),
        "request": {
            "message_id": request.message_id,
            "from": request.from_address,
            "from_name": request.from_name,
            "to": list(request.to),
            "cc": list(request.cc),
            "subject": request.subject,
            "date": request.date.isoformat() if request.date else None,
            "text": request.text,
            # False: the mailbox never received it; its addresses are only the drafter's word.
            "received": thread.received,
        },
        # The latest version's: what its checks were run with (a reviewer's edit may add some).
        "facts": versions[-1].facts if versions else record.facts,
        "versions": shown,
        "latest": shown[-1] if shown else None,
    }


def _version_view(db: Database, principal: Principal, version: VersionRecord) -> dict[str, Any]:
    proposal = None
    if version.proposal_id is not None:
        with db.tenant(principal.tenant_id) as conn:
            found = proposal_store.proposal_by_id(conn, principal.tenant_id, version.proposal_id)
        proposal = {"id": str(found.id), "digest": found.digest, "version": found.version}
    return {
        "version": version.version,
        "author": version.author_kind,
        "author_text": AUTHORS.get(version.author_kind, version.author_kind),
        "based_on": version.based_on,
        "provider": version.provider,
        "model": version.model,
        "prompt_version": version.prompt_version,
        "subject": version.subject,
        "to": list(version.to),
        "cc": list(version.cc),
        "bcc": list(version.bcc),
        "body": version.body,
        "in_reply_to": version.in_reply_to,
        "references": list(version.references),
        "examples": list(version.examples),
        "missing_information": list(version.missing_information),
        "findings": list(version.findings),
        "facts": version.facts,
        "passed": version.passed,
        "proposal": proposal,
        "created_at": version.created_at.isoformat(),
    }


def proposal_mail(db: Database, principal: Principal, proposal_id: UUID) -> dict[str, Any] | None:
    """For an email proposal's page: the draft version it is (its request, the examples it came
    from, who wrote it, the checks), or None when no draft made it."""
    with db.tenant(principal.tenant_id) as conn:
        found = store.draft_of_proposal(conn, principal.tenant_id, proposal_id)
        if found is None:
            lineage = proposal_store.proposal_by_id(conn, principal.tenant_id, proposal_id)
            drafted = store.draft_of_lineage(conn, principal.tenant_id, lineage.lineage_id)
            return {"draft_id": str(drafted), "version": None} if drafted else None
        draft_id, number = found
        record = store.draft_by_id(conn, principal.tenant_id, draft_id)
        version = next(
            v for v in store.versions(conn, principal.tenant_id, draft_id) if v.version == number
        )
        thread = messages_store.received_thread(
            conn, principal.tenant_id, record.mailbox, record.request
        )
    request = record.request
    return {
        "draft_id": str(draft_id),
        "version": number,
        "author_text": AUTHORS.get(version.author_kind, version.author_kind),
        "model": version.model,
        "prompt_version": version.prompt_version,
        "examples": list(version.examples),
        "findings": list(version.findings),
        "missing_information": list(version.missing_information),
        "new_recipients": _new(version, record.mailbox, thread),
        "request": {
            "from": request.from_address,
            "subject": request.subject,
            "date": request.date.isoformat() if request.date else None,
            "received": thread.received,
        },
    }


def _new(version: VersionRecord, mailbox: str, thread: ReceivedThread) -> list[str]:
    """The version's recipients that no message the mailbox received names: each is shown as
    new, whatever the request said (only an allowed domain let it pass the checks)."""
    return new_recipients((*version.to, *version.cc, *version.bcc), mailbox, thread)
