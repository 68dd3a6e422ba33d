"""The worker's notification round: find waiting proposals, send what is due, record each outcome.

A scan, not a hook in the gate: proposing never waits on (or fails because of) a webhook, and a
proposal made while the worker was down is still found. Each step is its own short transaction;
the HTTP call happens outside any transaction, under a lease on the row (a worker killed mid-send
leaves the row to the next round once the lease runs out: a message may then go out twice, never
not at all until its attempts are spent). Attempts are bounded; each failure waits longer
(``retry_after``), and the last leaves the row ``failed``, which ``/readyz`` and ``/metrics`` show.

Each tenant is told through its own webhook when it has one (``notify set``), else through the
process's (``RESOLVEFLOW_NOTIFY_URL``); a tenant with neither is not scanned at all, and a tenant
whose own webhook does not decrypt is skipped (with a warning), never told through another's.

One tenant's receiver never costs another anything: each message is claimed alone, under a lease
longer than its send's deadline (the sender ends every delivery by it); a tenant's first failure
ends its turn; tenants whose webhook failed last go last; and the round starts no tenant after
``round_seconds``. The worker runs the round on a queue of its own (``store/queue.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol
from uuid import UUID

from resolveflow.domain.counted import counted
from resolveflow.domain.vocabulary import NotificationKind, NotificationState
from resolveflow.errors import ResolveFlowError
from resolveflow.metrics import NOTIFICATION_DELIVERIES
from resolveflow.notify.domain.destination import Destination
from resolveflow.notify.domain.message import Notice, describe, encoded, retry_after
from resolveflow.notify.store import notifications as store
from resolveflow.notify.store.webhooks import destination_for
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher, TokenUnreadable

logger = logging.getLogger(__name__)


class Sender(Protocol):
    def send(self, body: bytes) -> None:
        """Deliver one body, or raise a ``ResolveFlowError`` saying why not."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class NotifyConfig:
    inbox_base_url: str  # the web app's address; the link is <base>/proposals/<id>
    ttl_seconds: int  # the approval window (RESOLVEFLOW_APPROVAL_TTL_SECONDS)
    remind_before_seconds: int  # 0: no reminder
    max_attempts: int = 5
    retry_base_seconds: float = 60.0
    retry_max_seconds: float = 3600.0
    batch: int = 20  # messages per tenant per round, claimed one at a time
    # Each claimed message's lease: longer than one send's deadline (bootstrap/notify.py sizes
    # it from the timeout), so a send never outlives the claim it was made under.
    lease_seconds: float = 70.0
    # A round stops starting tenants after this long (the rest wait a minute for the next), so
    # that rounds, a minute apart, never pile up behind slow webhooks.
    round_seconds: float = 45.0


@dataclass
class NotifyRound:
    queued: int = 0
    sent: int = 0
    retrying: int = 0
    failed: int = 0  # gave up on
    dropped: int = 0
    deferred_tenants: int = 0  # not reached before the round's time ran out


class Notifier:
    def __init__(
        self,
        db: Database,
        config: NotifyConfig,
        make_sender: Callable[[Destination], Sender],
        *,
        default: Destination | None = None,
        cipher: TokenCipher | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.config = config
        self.make_sender = make_sender
        self.default = default  # the process's webhook, for tenants without their own
        self.cipher = cipher  # None: no tenant can have its own (they are stored encrypted)
        self._senders: dict[Destination, Sender] = {}
        self._failing: set[UUID] = set()  # tenants whose webhook failed in their last turn
        self._monotonic = monotonic

    def close(self) -> None:
        for sender in self._senders.values():
            sender.close()
        self._senders.clear()

    def _sender(self, destination: Destination) -> Sender:
        if destination not in self._senders:
            self._senders[destination] = self.make_sender(destination)
        return self._senders[destination]

    def _destination(self, conn: Any, tenant_id: UUID) -> Destination | None:
        """The tenant's own webhook, else the process's; None: nobody to tell."""
        try:
            _, where = destination_for(conn, self.cipher, tenant_id, self.default)
        except TokenUnreadable as exc:
            logger.warning(
                "notifications skipped: %s", exc.message, extra={"tenant": str(tenant_id)}
            )
            return None
        return where

    def run(self) -> NotifyRound:
        """One round over every tenant, within ``round_seconds``: tenants whose webhook failed
        last round go last, so one bad receiver delays nobody else's messages."""
        done = NotifyRound()
        with self.db.unscoped() as conn:
            tenants = [tenant.id for tenant in tenant_store.list_tenants(conn)]
        tenants.sort(key=lambda tenant_id: tenant_id in self._failing)
        ends_at = self._monotonic() + self.config.round_seconds
        used: set[Destination] = set()
        for tenant_id in tenants:
            if self._monotonic() >= ends_at:
                done.deferred_tenants += 1  # its messages wait for the next round
                continue
            self._tenant_round(tenant_id, done, used, ends_at)
        self._close_unused(used)
        if done.deferred_tenants:
            logger.warning(
                "notification round out of time: %s wait for the next round",
                counted(done.deferred_tenants, "tenant"),
            )
        return done

    def _close_unused(self, used: set[Destination]) -> None:
        """A webhook no tenant is told through any more (replaced, removed) loses its client: a
        long-running worker keeps one per destination in use, not one per destination ever."""
        for destination in set(self._senders) - used:
            self._senders.pop(destination).close()

    def _tenant_round(
        self, tenant_id: UUID, done: NotifyRound, used: set[Destination], ends_at: float
    ) -> None:
        destination = self._queue(tenant_id, done)
        if destination is None:
            return
        used.add(destination)
        self._failing.discard(tenant_id)
        # One message claimed at a time, each under a lease that outlasts its send's deadline:
        # a claimed message is never held past its lease, so no other round sends it again.
        # The first failure ends the tenant's turn: its webhook is not tried again this round.
        for _ in range(self.config.batch):
            if self._monotonic() >= ends_at:
                return
            with self.db.tenant(tenant_id) as conn:
                due = store.claim_due(
                    conn, tenant_id, limit=1, lease_seconds=self.config.lease_seconds
                )
            if not due:
                return
            if not self._deliver(tenant_id, destination, due[0], done):
                self._failing.add(tenant_id)
                return

    def _queue(self, tenant_id: UUID, done: NotifyRound) -> Destination | None:
        """Queue what is newly due for the tenant and drop what no longer waits; where its
        messages go (None: nowhere, and nothing is queued)."""
        config = self.config
        with self.db.tenant(tenant_id) as conn:
            destination = self._destination(conn, tenant_id)
            if destination is None:
                return None
            done.queued += store.enqueue(
                conn,
                tenant_id,
                NotificationKind.WAITING,
                ttl_seconds=config.ttl_seconds,
                remind_before_seconds=config.ttl_seconds,  # due at once
            )
            if 0 < config.remind_before_seconds < config.ttl_seconds:
                done.queued += store.enqueue(
                    conn,
                    tenant_id,
                    NotificationKind.CLOSING,
                    ttl_seconds=config.ttl_seconds,
                    remind_before_seconds=config.remind_before_seconds,
                )
            done.dropped += store.drop_settled(conn, tenant_id, config.ttl_seconds)
        return destination

    def _notice(self, row: store.Due) -> Notice:
        return Notice(
            kind=row.kind,
            tenant=row.tenant,
            proposal_id=row.proposal_id,
            action_kind=str(row.action.get("kind", "github.issue")),
            what=describe(row.action),
            inbox_url=f"{self.config.inbox_base_url}/proposals/{row.proposal_id}",
            window_closes_at=row.proposal_created_at + timedelta(seconds=self.config.ttl_seconds),
        )

    def _deliver(
        self, tenant_id: UUID, destination: Destination, row: store.Due, done: NotifyRound
    ) -> bool:
        """Whether the message arrived (its outcome recorded either way)."""
        try:
            self._sender(destination).send(encoded(self._notice(row), destination.format))
        except ResolveFlowError as exc:  # the webhook's failure, in our words
            self._failed(tenant_id, row, exc.message, done)
            return False
        with self.db.tenant(tenant_id) as conn:
            store.record_sent(conn, tenant_id, row.id)
        done.sent += 1
        NOTIFICATION_DELIVERIES.labels("sent").inc()
        return True

    def _failed(self, tenant_id: UUID, row: store.Due, why: str, done: NotifyRound) -> None:
        config = self.config
        wait = retry_after(row.attempts, config.retry_base_seconds, config.retry_max_seconds)
        with self.db.tenant(tenant_id) as conn:
            state = store.record_failure(
                conn,
                tenant_id,
                row.id,
                error=why,
                retry_seconds=wait,
                max_attempts=config.max_attempts,
            )
        gave_up = state is NotificationState.FAILED
        done.failed += gave_up
        done.retrying += not gave_up
        NOTIFICATION_DELIVERIES.labels("failed" if gave_up else "retry").inc()
        # The reason only: never the URL, the body or the secret.
        logger.warning(
            "notification not delivered: %s",
            why,
            extra={
                "notification": str(row.id),
                "attempt": row.attempts,
                "gave_up": gave_up,
            },
        )
