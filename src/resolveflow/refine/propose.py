"""Refine's Markdown as a comment proposal, and refine on new issues arriving by webhook.

``propose_enrichment`` turns a finished document of a GitHub issue into an ordinary ``github.issue``
proposal (a comment, no labels) through the same path as ``issues_prepare``: it waits in the inbox
for a person's approval of its digest like every write, and nothing is sent here.

``refine_new_issue`` is the worker's job for one (delivery, tenant) when the repository's policy
has ``refine.on_new_issues``: at most once, by a claim committed before refine starts (a crash in
between loses that enrichment rather than proposing two). The claim is a row of the webhook
events acted on (``webhook_events``), keyed by the delivery, so it is pruned with the delivery.
A refine that fails is logged with the delivery and its one line; it fails nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal, Role
from resolveflow.errors import InvalidInput, NotAuthorized, ResolveFlowError
from resolveflow.gate import proposals
from resolveflow.gate.domain.actions import build_action
from resolveflow.refine.domain.document import RefineDocument, RefineStep, Ticket, TicketSource
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database
from resolveflow.triage import webhooks
from resolveflow.triage.store import webhooks as webhook_store

logger = logging.getLogger(__name__)

REFINE_NOTE = "refine enrichment"
# The claim's event name in ``webhook_events``: no GitHub event is called that.
_CLAIM_EVENT = "resolveflow.refine"


def check_proposable(ticket: Ticket) -> tuple[str, int]:
    """The issue a refine comment would go to; refused for anything but a GitHub issue."""
    if ticket.source is not TicketSource.GITHUB or not ticket.repository or not ticket.number:
        raise InvalidInput(
            "a refine comment can be proposed only on a GitHub issue; "
            f"this ticket is {ticket.source.value}"
        )
    return ticket.repository, ticket.number


def propose_enrichment(db: Database, principal: Principal, doc: RefineDocument) -> dict[str, Any]:
    """Propose the document's Markdown as a comment on its issue; the proposal's view (as
    ``proposals show``), waiting for approval."""
    if not principal.has(Role.REQUESTER):
        raise NotAuthorized(f"{principal.subject} does not have the requester role")
    repository, number = check_proposable(doc.ticket)
    if RefineStep.OUTPUT not in doc.done or not (doc.markdown or "").strip():
        raise InvalidInput("the refine document has no Markdown yet: run its output step first")
    try:
        action = build_action(repository, number, doc.markdown, [])
    except InvalidInput as exc:  # the action's own checks: the comment limit, a marker
        raise InvalidInput(f"the enrichment cannot be proposed: {_one_line(exc.message)}") from None
    proposal = proposals.create_prepared_proposal(db, principal, action, note=REFINE_NOTE)
    return proposals.describe(db, principal, proposal.id)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def tenant_name(db: Database, tenant_id: UUID) -> str:
    with db.unscoped() as conn:
        for tenant in tenant_store.list_tenants(conn):
            if tenant.id == tenant_id:
                return tenant.name
    raise InvalidInput("no such tenant")


# --- new issues by webhook --------------------------------------------------------------------


def _claim(db: Database, delivery_id: str, tenant_id: UUID, retention_days: int) -> str | None:
    """The issue (``OWNER/REPO#N``) of an ``issues opened`` delivery, for the one caller that may
    refine it in this tenant; None for everyone else."""
    with db.tenant(tenant_id) as conn:
        row = webhook_store.delivery_by_id(conn, delivery_id)
        if row is None or (row["event"], row["action"]) != ("issues", "opened"):
            return None
        if row["repository"] is None or row["issue_number"] is None:
            return None
        key = webhook_store.EventKey(
            tenant_id=tenant_id,
            event=_CLAIM_EVENT,
            repository=row["repository"],
            issue_number=row["issue_number"],
            action="opened",
            subject=f"delivery:{delivery_id}",
            updated_at=row["received_at"],  # fixed per delivery: the key is the same each time
        )
        if not webhook_store.claim_event(conn, key, delivery_id, retention_days):
            return None
    return f"{row['repository']}#{row['issue_number']}"


def refine_new_issue(
    db: Database,
    refine: Callable[[str], RefineDocument],
    *,
    delivery_id: str,
    tenant_id: UUID,
    retention_days: int,
) -> UUID | None:
    """Refine the delivery's new issue and propose the enrichment as the tenant's webhook
    principal, at most once per (delivery, tenant); the proposal's id, or None."""
    ref = _claim(db, delivery_id, tenant_id, retention_days)
    if ref is None:
        logger.info("refine of the delivery already claimed", extra={"delivery": delivery_id})
        return None
    try:
        doc = refine(ref)
        view = propose_enrichment(db, webhooks.webhook_principal(db, tenant_id), doc)
    except ResolveFlowError as exc:
        logger.warning(
            "refine of %s for delivery %s failed: %s", ref, delivery_id, _one_line(exc.message)
        )
        return None
    logger.info("refine proposed", extra={"delivery": delivery_id, "proposal": view["id"]})
    return UUID(view["id"])
