"""GitHub webhooks: verify, record once, queue; later, per tenant, start runs and update the index.

The HTTP side (``web/webhooks.py``) verifies the signature over the raw body before anything is
parsed, then calls ``record_delivery``: the delivery row and its job are written in one
transaction, so a delivery is either recorded with its job or not at all (GitHub then redelivers).
A delivery id seen before writes nothing and queues nothing.

The job (``fan_out``) maps the repository to every tenant whose allowlist holds it and queues, per
tenant, a triage run (``issues`` opened or reopened) and an index update (issue opened, edited,
closed, reopened, labelled; comments created, edited, deleted). Webhook runs are requested by the
tenant's service principal ``github-webhook`` (role requester), so any person with the approver
role can approve them and the daily cap applies to that principal.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.domain.records import Principal, Role
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import Forbidden, InvalidInput, NotFound, ProviderRejected
from resolveflow.retrieval.chunking import CommentText
from resolveflow.retrieval.github_crawl import issue_document
from resolveflow.retrieval.ingest import Indexer
from resolveflow.service.auth import hash_token, new_token
from resolveflow.service.limits import LimitExceeded, LimitKind, consume
from resolveflow.store import audit, queue
from resolveflow.store import tenants as tenant_store
from resolveflow.store import webhooks as webhook_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

WEBHOOK_SUBJECT = "github-webhook"
WEBHOOK_ACTOR = "webhook:github"
TRIAGE_ACTIONS = frozenset({"opened", "reopened"})
INDEX_EVENTS = {
    "issues": frozenset({"opened", "edited", "closed", "reopened", "labeled", "unlabeled"}),
    "issue_comment": frozenset({"created", "edited", "deleted"}),
}
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,99}$")
_EVENT = re.compile(r"^[a-z_]{1,50}$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")


class SignatureInvalid(Forbidden):
    """The webhook signature is missing or wrong; the delivery was ignored."""


def signature_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """``X-Hub-Signature-256`` is ``sha256=`` + hex HMAC-SHA256 of the raw body; compared in
    constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), header.strip().encode("ascii", "replace"))


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    issue_number: int | None

    @property
    def triage(self) -> bool:
        return self.event == "issues" and self.action in TRIAGE_ACTIONS

    @property
    def index(self) -> bool:
        return self.action in INDEX_EVENTS.get(self.event, frozenset())

    @property
    def actionable(self) -> bool:
        return (
            self.repository is not None
            and self.issue_number is not None
            and (self.triage or self.index)
        )


def parse_delivery(delivery_id: str | None, event: str | None, body: bytes) -> Delivery:
    """Read only what routing needs from an (already verified) body; anything odd is InvalidInput."""
    if not delivery_id or not _DELIVERY_ID.match(delivery_id):
        raise InvalidInput("X-GitHub-Delivery is missing or malformed")
    if not event or not _EVENT.match(event):
        raise InvalidInput("X-GitHub-Event is missing or malformed")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("the body is not JSON") from None
    if not isinstance(payload, dict):
        raise InvalidInput("the body is not a JSON object")
    action = payload.get("action")
    repository = _dig(payload, "repository", "full_name")
    number = _dig(payload, "issue", "number")
    return Delivery(
        delivery_id=delivery_id,
        event=event,
        action=action if isinstance(action, str) and _EVENT.match(action) else None,
        repository=repository.lower()
        if isinstance(repository, str) and _REPOSITORY.match(repository)
        else None,
        issue_number=number
        if isinstance(number, int) and not isinstance(number, bool) and 0 < number < 2**31
        else None,
    )


def _dig(payload: dict[str, Any], outer: str, inner: str) -> Any:
    value = payload.get(outer)
    return value.get(inner) if isinstance(value, dict) else None


@dataclass(frozen=True)
class Receipt:
    new: bool
    job_id: int | None


def record_delivery(db: Database, delivery: Delivery) -> Receipt:
    """The delivery row and, when there is work, its job: one transaction."""
    with db.unscoped() as conn:
        new = webhook_store.insert_delivery(
            conn,
            delivery_id=delivery.delivery_id,
            event=delivery.event,
            action=delivery.action,
            repository=delivery.repository,
            issue_number=delivery.issue_number,
            queued=delivery.actionable,
        )
        job_id = None
        if new and delivery.actionable:
            job_id = queue.defer(conn, queue.HANDLE_DELIVERY, delivery_id=delivery.delivery_id)
    logger.info(
        "webhook delivery",
        extra={"delivery": delivery.delivery_id, "event": delivery.event, "new": new},
    )
    return Receipt(new=new, job_id=job_id)


# --- the jobs ---------------------------------------------------------------------------------


def tenants_allowing(db: Database, repository: str) -> list[UUID]:
    with db.unscoped() as conn:
        tenants = tenant_store.list_tenants(conn)
    allowed = []
    for tenant in tenants:
        with db.tenant(tenant.id) as conn:
            if tenant_store.repository_allowed(conn, tenant.id, repository):
                allowed.append(tenant.id)
    return allowed


def fan_out(db: Database, delivery_id: str, *, auto_triage: bool) -> int:
    """Queue the per-tenant work of one delivery; returns how many jobs were queued.

    Safe to retry: a second triage job for the same (delivery, tenant) finds the claim, and an
    index update already waiting for the same issue is not queued twice.
    """
    with db.unscoped() as conn:
        row = webhook_store.delivery_by_id(conn, delivery_id)
    if row is None:
        raise NotFound(f"no webhook delivery {delivery_id}")
    delivery = Delivery(
        row["delivery_id"], row["event"], row["action"], row["repository"], row["issue_number"]
    )
    if not delivery.actionable:
        return 0
    assert delivery.repository is not None and delivery.issue_number is not None
    queued = 0
    for tenant_id in tenants_allowing(db, delivery.repository):
        with db.tenant(tenant_id) as conn:
            if delivery.triage and auto_triage:
                queue.defer(
                    conn,
                    queue.START_WEBHOOK_RUN,
                    delivery_id=delivery_id,
                    tenant_id=str(tenant_id),
                )
                queued += 1
            if delivery.index:
                target = f"{delivery.repository}#{delivery.issue_number}"
                job = queue.defer(
                    conn,
                    queue.UPDATE_INDEX,
                    queueing_lock=f"index:{tenant_id}:{target}",
                    tenant_id=str(tenant_id),
                    repository=delivery.repository,
                    issue_number=delivery.issue_number,
                )
                queued += job is not None
    return queued


def webhook_principal(db: Database, tenant_id: UUID) -> Principal:
    """The tenant's service principal for runs that a webhook started (made on first use)."""
    with db.tenant(tenant_id) as conn:
        try:
            return tenant_store.principal_by_subject(conn, tenant_id, WEBHOOK_SUBJECT)
        except NotFound:
            principal = tenant_store.insert_principal(
                conn,
                tenant_id=tenant_id,
                subject=WEBHOOK_SUBJECT,
                roles=[Role.REQUESTER],
                token_hash=hash_token(new_token(tenant_id)),  # never shown: no API access
            )
            audit.record(
                conn,
                tenant_id=tenant_id,
                actor=WEBHOOK_ACTOR,
                event=AuditEvent.PRINCIPAL_CREATED,
                subject_type="principal",
                subject_id=principal.id,
                details={"subject": WEBHOOK_SUBJECT, "roles": ["requester"]},
            )
            return principal


def start_webhook_run(
    db: Database,
    start: Callable[[Principal, str, int], UUID],
    *,
    delivery_id: str,
    tenant_id: UUID,
    runs_per_day: int,
) -> UUID | None:
    """At most one run per (delivery, tenant): the claim is committed before the run starts, so a
    crash in between loses that run rather than starting two (the next delivery starts one)."""
    with db.unscoped() as conn:
        row = webhook_store.delivery_by_id(conn, delivery_id)
    if row is None or row["repository"] is None or row["issue_number"] is None:
        return None
    with db.tenant(tenant_id) as conn:
        if not webhook_store.claim_webhook_run(conn, delivery_id, tenant_id):
            logger.info("webhook run already claimed", extra={"delivery": delivery_id})
            return None
    principal = webhook_principal(db, tenant_id)
    try:
        consume(
            db,
            principal,
            LimitKind.RUNS,
            runs_per_day,
            setting="RESOLVEFLOW_LIMIT_WEBHOOK_RUNS_PER_DAY",
        )
    except LimitExceeded as exc:
        with db.tenant(tenant_id) as conn:
            audit.record(
                conn,
                tenant_id=tenant_id,
                actor=WEBHOOK_ACTOR,
                event=AuditEvent.WEBHOOK_RUN_REFUSED,
                subject_type="webhook_delivery",
                subject_id=delivery_id,
                details={"reason": exc.message},
            )
        return None
    return start(principal, row["repository"], row["issue_number"])


def index_issue(
    indexer: Indexer, github: GitHub, tenant_id: UUID, repository: str, number: int
) -> bool:
    """Re-read the issue and its comments from GitHub and upsert it; False if it is gone."""
    repo = RepoName.parse(repository)
    try:
        issue = github.get_issue(repo, number)
        comments = github.list_issue_comments(repo, number)
    except ProviderRejected as exc:
        if exc.status in (404, 410):
            logger.info("issue gone; index left as is", extra={"issue": f"{repository}#{number}"})
            return False
        raise
    document = issue_document(repo, issue, [CommentText(c.author, c.body) for c in comments])
    indexer.upsert(tenant_id, [document])
    return True
