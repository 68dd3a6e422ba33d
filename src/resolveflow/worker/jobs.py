"""The worker's jobs, on procrastinate over the application's Postgres.

- ``handle_delivery``: maps a webhook delivery to tenants, queues their runs and index updates.
  Retried: both are deduplicated (run claims, queueing locks).
- ``start_webhook_run``: one triage run for (delivery, tenant). Never retried: the claim makes it
  at-most-once.
- ``refine_new_issue``: refine on a new issue for (delivery, tenant), when the repository's policy
  has ``refine.on_new_issues``: the whole refine graph, then its Markdown proposed as a comment
  (waiting for approval). Never retried: a claim makes it at-most-once; a refine that fails is
  logged with the delivery and fails nothing (triage runs on its own).
- ``update_index``: re-reads the issue and its comments and upserts them. Retried: an upsert.
- ``resume_run``: continues a run whose proposal was decided (the gate posts once). Retried only
  while another process holds the run.
- ``execute``: claims and sends an approved action that has no run. Not retried: a pending
  execution is picked up by maintenance. One with no credential to write with (on GitHub: no
  service token and no approver's own; on GitLab: no URL or no tenant token) is left pending,
  untouched, with one logged error naming the setting (as ``resolveflow execute`` refuses it);
  maintenance sends it once the setting is there.
- ``maintenance`` (periodic): reconciles ``unknown`` and expired-lease executions, drains due
  executions, resumes stalled runs, prunes old webhook deliveries (and nothing else).
- ``notify`` (periodic, every minute): messages about waiting proposals to each tenant's
  webhook (``notify/notifier.py``), on a queue of its own that one slot works, so that a slow
  or hostile webhook never holds up approvals, runs or maintenance. Nothing to do without a
  webhook (``RESOLVEFLOW_NOTIFY_URL`` or a tenant's own).

No job ever resends an ``unknown`` action: that is the executor gate's rule, and only
reconciliation (reading GitHub) or a person settles one.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any
from uuid import UUID

import procrastinate
from psycopg import AsyncConnection

from resolveflow.bootstrap.app import App
from resolveflow.domain.records import Execution
from resolveflow.errors import (
    InvalidInput,
    NotFound,
    ResolveFlowError,
    RunBusy,
    StoreUnavailable,
)
from resolveflow.gate.credentials import due_credentials, no_credential_message
from resolveflow.gate.suggestion_decisions import reconcile_issue
from resolveflow.refine.domain.document import RefineDocument
from resolveflow.refine.domain.rules import repository_refine
from resolveflow.store import queue
from resolveflow.store import tenants as tenant_store
from resolveflow.store.queries import q
from resolveflow.telemetry import continued, span
from resolveflow.triage import webhooks
from resolveflow.triage.store import runs as run_store
from resolveflow.worker.report import WorkReport

logger = logging.getLogger(__name__)

STALLED_AFTER_SECONDS = 30.0
NOTIFY_CRON = "* * * * *"  # the notification round: a retry's shortest useful wait
STALLED_WORKER_SECONDS = 60.0  # procrastinate's workers beat every 10 s; 6 missed beats: dead
_SAFE_RETRY = procrastinate.RetryStrategy(max_attempts=6, exponential_wait=2)
_BUSY_RETRY = procrastinate.RetryStrategy(
    max_attempts=10, exponential_wait=2, retry_exceptions={RunBusy, StoreUnavailable}
)
# Claimed jobs (a run per delivery, a refine per issue): a database that went away before the
# claim leaves nothing done, so they are tried again; after the claim a retry finds it taken.
_STORE_RETRY = procrastinate.RetryStrategy(
    max_attempts=6, exponential_wait=2, retry_exceptions={StoreUnavailable}
)


class Jobs:
    """The job bodies, on one wired ``App`` (whose run controller and embedder they share with
    the web app when both run in one process)."""

    def __init__(self, app: App, report: WorkReport | None = None) -> None:
        self.app = app
        self.report = report  # kept by ``worker --once``; the long-running worker only logs

    def job_failed(self, task: str, exc: BaseException) -> None:
        if self.report is not None:
            self.report.job_failed(task, exc)

    def handle_delivery(
        self,
        delivery_id: str,
        tenant_id: str | None = None,
        suggestion_part: str | None = None,
        suggestion_label: str | None = None,
        suggestion_verdict: str | None = None,
        suggestion_login: str | None = None,
    ) -> int:
        # tenant_id: the delivery came on that tenant's own URL (jobs queued before it existed
        # have none, like every delivery of the global hook). suggestion_*: what it says a
        # maintainer did with a GitHub suggestion (``webhooks.signal_arguments``).
        return webhooks.fan_out(
            self.app.db,
            delivery_id,
            auto_triage=self.app.settings.webhooks.auto_triage,
            tenant_id=UUID(tenant_id) if tenant_id else None,
            refine_new=self.refines_new_issues,
            retention_days=self.app.settings.webhooks.retention_days,
            signal=webhooks.signal_of(
                suggestion_part, suggestion_label, suggestion_verdict, suggestion_login
            ),
        )

    def refines_new_issues(self, repository: str) -> bool:
        # An unreadable policy file must not stop triage and the index: no refine, and a warning.
        try:
            return repository_refine(self.app.policy(), repository).on_new_issues
        except ResolveFlowError as exc:
            logger.warning("refine on new issues is off: %s", exc.message)
            return False

    def refine_new_issue(self, delivery_id: str, tenant_id: str) -> str | None:
        # Refine reads no webhook: triage's claim and principal are handed to it here.
        from resolveflow.bootstrap.refine import step_deps
        from resolveflow.refine.graph import refine_document
        from resolveflow.refine.load import ticket_for
        from resolveflow.refine.propose import refine_new_issue, tenant_name

        tenant = UUID(tenant_id)
        principal = webhooks.webhook_principal(self.app.db, tenant)

        def claim(event: str) -> str | None:
            return webhooks.claim_new_issue(
                self.app.db,
                delivery_id,
                tenant,
                claim_event=event,
                retention_days=self.app.settings.webhooks.retention_days,
            )

        def refine(ref: str) -> RefineDocument:
            deps = step_deps(self.app, lambda: tenant_name(self.app.db, tenant), None, principal)
            return refine_document(RefineDocument(ticket=ticket_for(ref)), deps)

        proposal = refine_new_issue(
            self.app.db,
            refine,
            claim=claim,
            principal=principal,
            delivery_id=delivery_id,
            quiet=self.app.quiet(),
        )
        return str(proposal) if proposal else None

    def start_webhook_run(self, delivery_id: str, tenant_id: str) -> str | None:
        run_id = webhooks.start_webhook_run(
            self.app.db,
            self.app.run_controller().start,
            delivery_id=delivery_id,
            tenant_id=UUID(tenant_id),
            runs_per_day=self.app.settings.limits.webhook_runs_per_day,
        )
        logger.info("webhook run", extra={"delivery": delivery_id, "run": str(run_id)})
        return str(run_id) if run_id else None

    def update_index(self, tenant_id: str, repository: str, issue_number: int) -> bool:
        tenant = UUID(tenant_id)
        indexed = webhooks.index_issue(
            self.app.indexer(), self.app.github, tenant, repository, issue_number
        )
        # Something happened on the issue: where a suggestion of ours there is undecided, read
        # what GitHub says of it (a dismissal may come with no delivery of its own).
        reconcile_issue(self.app.db, self.app.github, tenant, repository, issue_number)
        return indexed

    def resume_run(self, tenant_id: str, run_id: str, principal_id: str) -> str:
        tenant, run = UUID(tenant_id), UUID(run_id)
        with self.app.db.tenant(tenant) as conn:
            principal = tenant_store.principal_by_id(conn, tenant, UUID(principal_id))
        if principal is None:
            raise NotFound("the principal who decided no longer exists")
        try:
            self.app.run_controller().resume(principal, run)
        except InvalidInput as exc:  # already resumed by someone else: nothing left to do
            logger.info("nothing to resume", extra={"run": run_id, "reason": exc.message})
            return "nothing to do"
        return "resumed"

    def execute(self, tenant_id: str, execution_id: str) -> str:
        tenant, execution = UUID(tenant_id), UUID(execution_id)
        why = self.due_credentials(tenant).get(execution)
        if why is not None:
            self.wait_for_credential({execution: why})
            return "waiting for a credential"
        return self.executed(self.app.executor().execute_one(tenant, execution)).state.value

    def due_credentials(self, tenant_id: UUID) -> dict[UUID, str | None]:
        """The tenant's due executions, each with why it cannot be written (or ``None``)."""
        with self.app.db.tenant(tenant_id) as conn:
            return due_credentials(conn, tenant_id, self.app.configured_credentials())

    def wait_for_credential(self, problems: dict[UUID, str]) -> None:
        # Claimed, these would fail (or go out unauthenticated); left alone, they stay approved.
        # Said once per round (and once per `--once`: the execute job and maintenance both look).
        new = problems if self.report is None else self.report.wait_for_credential(problems)
        if new:
            logger.error("%s", no_credential_message(new))

    def executed(self, execution: Execution) -> Execution:
        if self.report is not None:
            self.report.executed(execution)
        return execution

    def drain_due(self) -> tuple[int, int]:
        """Send the due executions that have a credential; the others wait (one logged error).
        Returns (processed, waiting)."""
        executor = self.app.executor()
        processed, waiting = 0, dict[UUID, str]()
        for tenant_id in self._tenant_ids():
            due = self.due_credentials(tenant_id)
            blocked = {key: why for key, why in due.items() if why is not None}
            if not blocked:  # the usual case: drain the queue, including what arrives meanwhile
                while (done := executor.execute_next(tenant_id)) is not None:
                    self.executed(done)
                    processed += 1
                continue
            waiting.update(blocked)
            for execution_id in (key for key, why in due.items() if why is None):
                self.executed(executor.execute_one(tenant_id, execution_id))
                processed += 1
        if waiting:
            self.wait_for_credential(waiting)
        return processed, len(waiting)

    def _tenant_ids(self) -> list[UUID]:
        with self.app.db.unscoped() as conn:
            return [tenant.id for tenant in tenant_store.list_tenants(conn)]

    def maintenance(self) -> dict[str, int]:
        """Each step on its own: one that fails is logged and counted, and the others still run
        (an unreadable token must not stop due executions or stalled resumes). A database that
        does not answer ends the round instead, in one line: every later step would wait for a
        connection in turn, and the worker would notice the outage that much later."""
        interval = self.app.settings.executor.reconcile_interval_seconds
        result = {"failed": 0, "waiting": 0}

        def drain() -> int:
            processed, result["waiting"] = self.drain_due()
            return processed

        steps: dict[str, Callable[[], int]] = {
            "reconciled": lambda: len(self.app.reconciler().run(min_age_seconds=interval)),
            "executed": drain,
            "resumed": self.resume_stalled,
            "restarted": self.restart_interrupted,
            "requeued": self.requeue_stalled_jobs,
            "pruned": self.prune_webhook_deliveries,
        }
        for name, step in steps.items():
            try:
                result[name] = step()
            except StoreUnavailable as exc:
                logger.error("maintenance stopped: %s", exc.message, extra={"step": name})
                self.job_failed(f"maintenance ({name})", exc)
                result["failed"] += 1
                break
            except ResolveFlowError as exc:
                logger.exception("maintenance step failed", extra={"step": name})
                self.job_failed(f"maintenance ({name})", exc)
                result[name] = 0
                result["failed"] += 1
        return result

    def notify(self) -> dict[str, int]:
        """One notification round; with no webhook configured, nothing."""
        notifier = self.app.notifier()
        if notifier is None:
            return {}
        done = notifier.run()
        return {
            "queued": done.queued,
            "sent": done.sent,
            "retrying": done.retrying,
            "failed": done.failed,
            "dropped": done.dropped,
        }

    def prune_webhook_deliveries(self) -> int:
        """Webhook deliveries older than RESOLVEFLOW_WEBHOOK_RETENTION_DAYS. Nothing else is ever
        pruned: executions, attempts, approvals and audit events are kept, so an execution that
        could still be ``unknown`` never loses its record."""
        days = self.app.settings.webhooks.retention_days
        return webhooks.prune_deliveries(self.app.db, days)

    def requeue_stalled_jobs(self) -> int:
        """Jobs a killed worker left ``doing`` (its heartbeat stopped) go back to the queue: every
        task is safe to run again (claims, leases, upserts, the gate)."""
        with self.app.db.unscoped() as conn:
            return queue.requeue_stalled_jobs(conn, STALLED_WORKER_SECONDS)

    def restart_interrupted(self) -> int:
        """Runs a dead process left ``running`` (its run lease lapsed) are driven on from their
        last checkpoint, as `resolveflow runs resume` would."""
        min_age = self.app.settings.triage.run_lease_seconds
        return self._resume_each(
            lambda conn, tenant_id: run_store.interrupted_runs(conn, tenant_id, min_age)
        )

    def resume_stalled(self, min_age_seconds: float = STALLED_AFTER_SECONDS) -> int:
        """Runs decided long enough ago that their resume job must have been lost."""
        return self._resume_each(
            lambda conn, tenant_id: run_store.stalled_runs(conn, tenant_id, min_age_seconds)
        )

    def _resume_each(self, find: Callable[[Any, UUID], list[run_store.ResumableRun]]) -> int:
        """Resume every run ``find`` lists in each tenant, as the principal it names; one that
        is busy is left to its holder, one that fails has it recorded on the run and does not
        stop the others. Returns how many were resumed."""
        resumed = 0
        for tenant_id in self._tenant_ids():
            with self.app.db.tenant(tenant_id) as conn:
                rows = find(conn, tenant_id)
            for row in rows:
                try:
                    outcome = self.resume_run(str(tenant_id), str(row.id), str(row.resume_as))
                except RunBusy:
                    continue
                except ResolveFlowError:
                    logger.exception("could not resume a run", extra={"run": str(row.id)})
                    continue
                resumed += outcome == "resumed"
        return resumed


async def _as_runtime_role(conn: AsyncConnection[Any]) -> None:
    # The worker's own connections also run as the non-superuser role, like the pool's.
    await conn.execute(q("queue", "set_runtime_role"))
    await conn.commit()


def build_queue(app: App, jobs: Jobs | None = None) -> procrastinate.App:
    """A procrastinate app whose tasks run ``jobs`` (made from ``app`` when not given)."""
    body = jobs or Jobs(app)
    connect_timeout = app.settings.database.connect_timeout_seconds
    connector = queue.QueueConnector(
        conninfo=app.db.url,
        min_size=1,
        # The jobs' slots, the notification lane's one, and each worker's listener and beat.
        max_size=app.settings.worker.concurrency + 4,
        timeout=connect_timeout,
        configure=_as_runtime_role,
        kwargs={"connect_timeout": max(1, int(connect_timeout))},
    )
    proc = procrastinate.App(connector=connector)

    def task(
        name: str, retry: procrastinate.RetryStrategy | None = None, lane: str = queue.QUEUE
    ) -> Any:
        def register(job: Callable[..., Any]) -> Any:
            @functools.wraps(job)
            def run(*args: Any, **kwargs: Any) -> Any:
                parent = kwargs.pop(queue.TRACEPARENT, None)  # the request that queued it
                with (
                    continued({"traceparent": parent} if parent else None),
                    span(f"job {name}", job=name),
                ):
                    try:
                        return job(*args, **kwargs)
                    except Exception as exc:  # procrastinate records and logs it; `--once` says so
                        body.job_failed(name, exc)
                        raise

            return proc.task(name=name, queue=lane, retry=retry or False)(run)

        return register

    task(queue.HANDLE_DELIVERY, _SAFE_RETRY)(body.handle_delivery)
    task(queue.START_WEBHOOK_RUN, _STORE_RETRY)(body.start_webhook_run)
    task(queue.REFINE_NEW_ISSUE, _STORE_RETRY)(body.refine_new_issue)
    task(queue.UPDATE_INDEX, _SAFE_RETRY)(body.update_index)
    task(queue.RESUME_RUN, _BUSY_RETRY)(body.resume_run)
    task(queue.EXECUTE)(body.execute)

    def maintenance(timestamp: int) -> dict[str, int]:
        return body.maintenance()

    proc.periodic(cron=app.settings.worker.reconcile_cron, periodic_id="maintenance")(
        task(queue.MAINTENANCE)(maintenance)
    )

    def notify(timestamp: int) -> dict[str, int]:
        return body.notify()

    # Its own lane (queue), worked by a worker of its own with one slot: a slow webhook never
    # takes a slot from approvals and runs, and rounds never run side by side in one process.
    proc.periodic(cron=NOTIFY_CRON, periodic_id="notify")(
        task(queue.NOTIFY, lane=queue.NOTIFY_QUEUE)(notify)
    )
    return proc
