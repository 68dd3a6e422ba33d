"""GitHub webhooks: verify, record once, queue; later, per tenant, start runs and update the index.

The HTTP side (``web/webhooks.py``) reads the body with a cap and hands it to ``accept``: the
signature is checked over the raw bytes before anything is parsed (with the global secret, or a
tenant's own from ``triage/webhook_secrets.py``), then ``triage/webhook_events.py`` says what the
body is, and ``record_delivery`` writes the delivery row, the event's claim and its job in one
transaction: a delivery is recorded with its job or not at all (the answer is then 503, and a
redelivery is processed as new). A delivery id seen before writes nothing and queues nothing; an
event already processed under another delivery id (a replay) is recorded as ignored.

The job (``fan_out``) maps the repository to every tenant whose allowlist holds it (only the
signing tenant, for a tenant's secret) and queues, per tenant, a triage run (``issues`` opened or
reopened), a refine of the new issue (``issues`` opened, when the repository's policy has
``refine.on_new_issues``; ``refine/propose.py``, its claim ``claim_new_issue``) and an index
update (issue opened, edited, closed, reopened, labelled; comments created, edited, deleted).
A delivery that may be a maintainer's decision on a GitHub suggestion (``labeled``, ``closed``
as a duplicate, ``suggestion_dismissed``) carries its signal in the job's arguments, and is
recorded in each such tenant whose execution sent that suggestion
(``gate/suggestion_decisions.py``).
Webhook runs and refine's proposals are requested by the tenant's service principal
``github-webhook`` (role requester), so any person with the approver role can approve them; the
daily run cap applies to that principal's runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from uuid import UUID

from resolveflow.accounts.auth import hash_token, new_token
from resolveflow.accounts.limits import LimitExceeded, LimitKind, consume
from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.domain.records import Principal, Role
from resolveflow.domain.vocabulary import (
    WEBHOOK_SUBJECT,
    AuditEvent,
    GitHubVerdict,
    SuggestedPart,
)
from resolveflow.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    ProviderRejected,
)
from resolveflow.gate.domain.suggestion_decisions import SuggestionSignal
from resolveflow.gate.suggestion_decisions import record_signal
from resolveflow.retrieval.chunking import CommentText
from resolveflow.retrieval.github_crawl import issue_document
from resolveflow.retrieval.ingest import Indexer
from resolveflow.store import audit, queue
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database
from resolveflow.triage.store import webhooks as webhook_store
from resolveflow.triage.webhook_events import TRIAGE_ACTIONS, Delivery, parse_delivery

logger = logging.getLogger(__name__)

WEBHOOK_ACTOR = "webhook:github"


class SignatureInvalid(Forbidden):
    """The webhook signature is missing or wrong; the delivery was ignored."""


class BodyTooLarge(InvalidInput):
    """The webhook body is larger than RESOLVEFLOW_WEBHOOK_MAX_BODY_BYTES; nothing more was read."""


def signature_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """``X-Hub-Signature-256`` is ``sha256=`` + hex HMAC-SHA256 of the raw body; compared in
    constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), header.strip().encode("ascii", "replace"))


@dataclass(frozen=True)
class Receipt:
    new: bool
    job_id: int | None
    ignored: str | None  # why a new delivery is not acted on; None when it is (or a redelivery)


@dataclass(frozen=True)
class Incoming:
    """A delivery as it arrived: the raw body and the headers that matter."""

    body: bytes
    signature: str | None
    delivery_id: str | None
    event: str | None
    tenant_id: UUID | None = None  # the tenant whose own secret is checked; None: the global one


def accept(
    db: Database,
    incoming: Incoming,
    secret: bytes | None,
    *,
    retention_days: int,
    app_secret: bytes | None = None,
) -> Receipt:
    """Verify, then parse, then record (in a worker thread: HMAC and JSON of up to the cap).
    A body signed with the GitHub App's secret is the App's (``triage/app_deliveries.py``)."""
    if app_secret is not None and signature_valid(app_secret, incoming.body, incoming.signature):
        from resolveflow.triage.app_deliveries import app_delivery

        found = app_delivery(db, incoming.delivery_id, incoming.event, incoming.body)
        return record_delivery(db, found, retention_days=retention_days)
    if secret is None or not signature_valid(secret, incoming.body, incoming.signature):
        logger.info(
            "webhook signature refused",
            extra={"has_signature": incoming.signature is not None, "tenant": incoming.tenant_id},
        )
        raise SignatureInvalid()
    delivery = parse_delivery(
        incoming.delivery_id, incoming.event, incoming.body, tenant_id=incoming.tenant_id
    )
    return record_delivery(db, delivery, retention_days=retention_days)


class DeliveryRecorded(Conflict):
    """That delivery id is already recorded; nothing new happens."""


def record_delivery(db: Database, delivery: Delivery, *, retention_days: int) -> Receipt:
    """The delivery row, its event's claim and, when there is work, its job: one transaction.

    A delivery id already recorded writes nothing: seen first, or found only when its row is
    inserted (one that raced in, or one this scope cannot see: another tenant's), in which case
    the event's claim is rolled back with the rest.
    """
    try:
        return _record(db, delivery, retention_days)
    except DeliveryRecorded:
        return Receipt(new=False, job_id=None, ignored=None)


def _record(db: Database, delivery: Delivery, retention_days: int) -> Receipt:
    with _scope(db, delivery.tenant_id) as conn:
        if webhook_store.delivery_by_id(conn, delivery.delivery_id) is not None:
            raise DeliveryRecorded()
        ignored = delivery.ignored
        key = delivery.key()
        if key is not None and not webhook_store.claim_event(
            conn, key, delivery.delivery_id, retention_days
        ):
            earlier = webhook_store.event_claimed_by(conn, key)
            ignored = (
                f"already processed under delivery {earlier} (a replay, or the same event "
                "through another webhook): it starts nothing"
                if earlier
                else f"updated_at is not within the last {retention_days} days "
                "(RESOLVEFLOW_WEBHOOK_RETENTION_DAYS): it cannot be told apart from a replay"
            )
        row = webhook_store.NewDelivery(
            delivery_id=delivery.delivery_id,
            event=delivery.event,
            action=delivery.action,
            repository=delivery.repository,
            issue_number=delivery.issue_number,
            tenant_id=delivery.tenant_id,
            ignored=ignored,
        )
        if not webhook_store.insert_delivery(conn, row):
            raise DeliveryRecorded()  # leaves the block: the claim above is rolled back
        job_id = None
        if ignored is None:
            signal = delivery.signal
            job_id = queue.defer(
                conn,
                queue.HANDLE_DELIVERY,
                delivery_id=delivery.delivery_id,
                tenant_id=str(delivery.tenant_id) if delivery.tenant_id else None,
                # what it says a maintainer did with a GitHub suggestion (the row keeps routing)
                suggestion_part=signal.part.value if signal else None,
                suggestion_label=signal.label if signal else None,
                suggestion_verdict=signal.verdict.value if signal else None,
                suggestion_login=signal.login if signal else None,
            )
    logger.info(
        "webhook delivery",
        extra={"delivery": delivery.delivery_id, "event": delivery.event, "ignored": ignored},
    )
    return Receipt(new=True, job_id=job_id, ignored=ignored)


def signal_of(
    part: str | None, label: str | None, verdict: str | None, login: str | None
) -> SuggestionSignal | None:
    """A delivery's suggestion signal from its job's arguments (``_record`` writes them)."""
    if part is None or label is None or verdict is None:
        return None
    return SuggestionSignal(SuggestedPart(part), label, GitHubVerdict(verdict), login)


def _scope(db: Database, tenant_id: UUID | None) -> AbstractContextManager[Connection]:
    """A delivery on a tenant's URL is that tenant's row (row-level security); a delivery of the
    global hook belongs to no tenant and is read and written unscoped."""
    return db.unscoped() if tenant_id is None else db.tenant(tenant_id)


def prune_deliveries(db: Database, older_than_days: int) -> int:
    """Deliveries, their run claims and event records older than the age; nothing else."""
    with db.unscoped() as conn:
        return webhook_store.prune_deliveries(conn, older_than_days)


# --- the jobs ---------------------------------------------------------------------------------


def tenants_allowing(db: Database, repository: str, among: UUID | None = None) -> list[UUID]:
    """The tenants whose allowlist holds ``repository`` (only ``among``, when given)."""
    if among is None:
        with db.unscoped() as conn:
            candidates = [tenant.id for tenant in tenant_store.list_tenants(conn)]
    else:
        candidates = [among]
    allowed = []
    for tenant_id in candidates:
        with db.tenant(tenant_id) as conn:
            if tenant_store.repository_allowed(conn, tenant_id, repository):
                allowed.append(tenant_id)
    return allowed


def fan_out(
    db: Database,
    delivery_id: str,
    *,
    auto_triage: bool,
    tenant_id: UUID | None = None,
    refine_new: Callable[[str], bool] | None = None,
    retention_days: int,
    signal: SuggestionSignal | None = None,
) -> int:
    """Queue the per-tenant work of one delivery; returns how many jobs were queued.

    A delivery signed with a tenant's own secret (``tenant_id``) concerns that tenant only. Safe
    to retry: a second triage or refine job for the same (delivery, tenant) finds its claim, and
    an index update already waiting for the same issue is not queued twice. ``refine_new`` says
    whether a repository's policy refines its new issues (``refine.on_new_issues``). ``signal``:
    what the delivery says a maintainer did with a GitHub suggestion, recorded in each tenant
    whose execution sent it (``gate/suggestion_decisions.py``; once, whatever the retries).

    One event reaches a tenant once, whichever hooks brought it: a delivery of the global hook
    claims its event again in each tenant's scope (``claim_in_tenant``), where the GitHub App's
    and the tenant's own hook claim theirs; a tenant whose claim another delivery holds is left
    to that delivery.
    """
    with _scope(db, tenant_id) as conn:
        row = webhook_store.delivery_by_id(conn, delivery_id)
    if row is None:
        raise NotFound(f"no webhook delivery {delivery_id}")
    if not row.queued or row.repository is None or row.issue_number is None:
        return 0
    repository: str = row.repository
    number: int = row.issue_number
    triage = row.event == "issues" and row.action in TRIAGE_ACTIONS
    refine = row.event == "issues" and row.action == "opened"
    refine = refine and refine_new is not None and refine_new(repository)
    tenants = tenants_allowing(db, repository, among=row.tenant_id)
    if not tenants:
        logger.info("no tenant allows the repository", extra={"delivery": delivery_id})
    queued = 0
    for tenant in tenants:
        with db.tenant(tenant) as conn:
            handled_by = claim_in_tenant(conn, row, tenant, retention_days)
            if handled_by is not None:
                logger.info(
                    "event already handled in this tenant",
                    extra={"delivery": delivery_id, "handled_by": handled_by},
                )
                continue
            if signal is not None:
                record_signal(conn, tenant, repository, number, signal, row.received_at)
            if triage and auto_triage:
                queue.defer(
                    conn, queue.START_WEBHOOK_RUN, delivery_id=delivery_id, tenant_id=str(tenant)
                )
                queued += 1
            if refine:
                job = queue.defer(
                    conn,
                    queue.REFINE_NEW_ISSUE,
                    queueing_lock=f"refine:{tenant}:{delivery_id}",
                    delivery_id=delivery_id,
                    tenant_id=str(tenant),
                )
                queued += job is not None
            job = queue.defer(
                conn,
                queue.UPDATE_INDEX,
                queueing_lock=f"index:{tenant}:{repository}#{number}",
                tenant_id=str(tenant),
                repository=repository,
                issue_number=number,
            )
            queued += job is not None
    return queued


def claim_in_tenant(
    conn: Connection,
    delivery: webhook_store.RecordedDelivery,
    tenant_id: UUID,
    retention_days: int,
) -> str | None:
    """None when ``delivery`` acts on its event in ``tenant_id``; otherwise the delivery that
    does (or why none can). The claim is a row of the events acted on in the tenant's scope, the
    same row the App's or the tenant's own hook claims on receipt, so the database keeps one."""
    key = webhook_store.event_of_delivery(conn, delivery.delivery_id, delivery.tenant_id)
    if key is None or key.tenant_id == tenant_id:
        return None  # claimed in this tenant on receipt, or a delivery from before claims
    mine = dataclasses.replace(key, tenant_id=tenant_id)
    if webhook_store.claim_event(conn, mine, delivery.delivery_id, retention_days):
        return None
    earlier = webhook_store.event_claimed_by(conn, mine)
    if earlier == delivery.delivery_id:
        return None  # this job's earlier attempt claimed it
    return earlier or f"updated_at is not within the last {retention_days} days"


def webhook_principal(db: Database, tenant_id: UUID) -> Principal:
    """The tenant's service principal for runs that a webhook started (made on first use). Two
    jobs of a new tenant's first deliveries may both find it missing: the database keeps one
    insert, and the loser reads the winner's."""
    try:
        return _webhook_principal(db, tenant_id)
    except AlreadyExists:
        with db.tenant(tenant_id) as conn:
            return tenant_store.principal_by_subject(conn, tenant_id, WEBHOOK_SUBJECT)


def _webhook_principal(db: Database, tenant_id: UUID) -> Principal:
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


def claim_new_issue(
    db: Database, delivery_id: str, tenant_id: UUID, *, claim_event: str, retention_days: int
) -> str | None:
    """The issue (``OWNER/REPO#N``) of an ``issues opened`` delivery, for the one caller that may
    act on it under ``claim_event`` (a name no GitHub event has) in this tenant; None for everyone
    else. The claim is a row of the events acted on, keyed by the delivery, so it is pruned with
    the delivery."""
    with db.tenant(tenant_id) as conn:
        row = webhook_store.delivery_by_id(conn, delivery_id)
        if row is None or (row.event, row.action) != ("issues", "opened"):
            return None
        if row.repository is None or row.issue_number is None:
            return None
        key = webhook_store.EventKey(
            tenant_id=tenant_id,
            event=claim_event,
            repository=row.repository,
            issue_number=row.issue_number,
            action="opened",
            subject=f"delivery:{delivery_id}",
            updated_at=row.received_at,  # fixed per delivery: the key is the same each time
        )
        if not webhook_store.claim_event(conn, key, delivery_id, retention_days):
            return None
    return f"{row.repository}#{row.issue_number}"


def start_webhook_run(
    db: Database,
    start: Callable[[Principal, str, int, UUID], UUID],
    *,
    delivery_id: str,
    tenant_id: UUID,
    runs_per_day: int,
) -> UUID | None:
    """At most one run per (delivery, tenant): the claim names the run's id and is committed
    before the run starts. A worker killed in between leaves a claim with no run: the job, run
    again (maintenance requeues it), starts that run under that id, so it exists once."""
    with db.tenant(tenant_id) as conn:  # the global hook's deliveries, and this tenant's own
        row = webhook_store.delivery_by_id(conn, delivery_id)
    if row is None or row.repository is None or row.issue_number is None:
        return None
    run_id = uuid.uuid4()
    with db.tenant(tenant_id) as conn:
        claimed = webhook_store.claim_webhook_run(conn, delivery_id, tenant_id, run_id)
        unstarted = None if claimed else webhook_store.unstarted_claim(conn, delivery_id, tenant_id)
    principal = webhook_principal(db, tenant_id)
    if not claimed:
        if unstarted is None:
            logger.info("webhook run already claimed", extra={"delivery": delivery_id})
            return None
        run_id = unstarted  # counted with its claim (or not at all, if the worker died first)
    else:
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
    try:
        return start(principal, row.repository, row.issue_number, run_id)
    except AlreadyExists:  # another job started the same claim's run meanwhile
        logger.info("webhook run started elsewhere", extra={"run": str(run_id)})
        return None


def index_issue(
    indexer: Indexer, github: GitHub, tenant_id: UUID, repository: str, number: int
) -> bool:
    """Re-read the issue and its comments from GitHub and upsert it; False if it is gone."""
    repo, github = RepoName.parse(repository), acting_for(github, tenant_id)
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
