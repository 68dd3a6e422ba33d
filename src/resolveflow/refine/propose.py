"""Refine's Markdown as a comment proposal, and refine on new issues arriving by webhook.

``propose_enrichment`` turns a finished document of a GitHub issue into an ordinary ``github.issue``
proposal (a comment, no labels) through the same path as ``issues_prepare``: it waits in the inbox
for a person's approval of its digest like every write, and nothing is sent here.

``refine_new_issue`` is the worker's job for one (delivery, tenant) when the repository's policy
has ``refine.on_new_issues``: at most once, by a claim committed before refine starts (a crash in
between loses that enrichment rather than proposing two). The claim is triage's (the webhook
events acted on, ``triage.webhooks.claim_new_issue``), handed in by the worker, which composes
the two. A refine that fails is logged with the delivery and its one line; it fails nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal, Role
from resolveflow.domain.vocabulary import REFINE_PROPOSAL_NOTE
from resolveflow.errors import InvalidInput, NotAuthorized, ResolveFlowError
from resolveflow.gate import proposals
from resolveflow.gate.domain.actions import build_action
from resolveflow.gate.quiet import DEFAULT_QUIET, Quiet
from resolveflow.refine.domain.document import RefineDocument, RefineStep, Ticket, TicketSource
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

# The note that marks refine's proposals as its suggestions (gate/feedback.py counts them).
REFINE_NOTE = REFINE_PROPOSAL_NOTE
# The claim's event name among the webhook events acted on: no GitHub event is called that.
CLAIM_EVENT = "resolveflow.refine"


def check_proposable(ticket: Ticket) -> tuple[str, int]:
    """The issue a refine comment would go to; refused for anything but a GitHub issue."""
    if ticket.source is not TicketSource.GITHUB or not ticket.repository or not ticket.number:
        raise InvalidInput(
            "a refine comment can be proposed only on a GitHub issue; "
            f"this ticket is {ticket.source.value}"
        )
    return ticket.repository, ticket.number


def propose_enrichment(
    db: Database, principal: Principal, doc: RefineDocument, quiet: Quiet = DEFAULT_QUIET
) -> dict[str, Any]:
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
    proposal = proposals.create_prepared_proposal(db, principal, action, REFINE_NOTE, quiet)
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


def refine_new_issue(
    db: Database,
    refine: Callable[[str], RefineDocument],
    *,
    claim: Callable[[str], str | None],
    principal: Principal,
    delivery_id: str,
    quiet: Quiet = DEFAULT_QUIET,
) -> UUID | None:
    """Refine the delivery's new issue and propose the enrichment as ``principal`` (the tenant's
    webhook principal), at most once: ``claim`` (triage's webhook events, given the claim's event
    name) gives the issue to the one caller that may refine it, None to everyone else. The
    proposal's id, or None."""
    ref = claim(CLAIM_EVENT)
    if ref is None:
        logger.info("refine of the delivery already claimed", extra={"delivery": delivery_id})
        return None
    try:
        doc = refine(ref)
        view = propose_enrichment(db, principal, doc, quiet)
    except ResolveFlowError as exc:
        logger.warning(
            "refine of %s for delivery %s failed: %s", ref, delivery_id, _one_line(exc.message)
        )
        return None
    logger.info("refine proposed", extra={"delivery": delivery_id, "proposal": view["id"]})
    return UUID(view["id"])
