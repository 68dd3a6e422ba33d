"""The executor gate: the only code that writes to an outside system.

    pending --claim (conditional UPDATE + lease)--> sending --2xx--> sent
                                                        |-- definite 4xx --> failed (or partial)
                                                        |-- 403/429 rate limit --> pending, later
                                                        '-- timeout / 5xx / lost / malformed --> unknown

Each write is preceded by a committed attempt row, so after a crash we know whether a request may
have left. Before writing, the approval and proposal are re-read, the digest recomputed, the
approver and the policy checked again: nothing approved earlier is trusted blindly. What the
requests are is each action kind's business (``execution/kinds``); the gate is the same for all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from uuid import UUID

from resolveflow.adapters.github.app_client import check_app_may_act
from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.domain.records import Execution
from resolveflow.errors import AppInstallationRefused, NotAuthorized, ResolveFlowError
from resolveflow.gate.credentials import ApproverTokenLookup, approver_token
from resolveflow.gate.domain.policy import (
    check_approval_still_valid,
    check_repository_allowed,
    github_repository,
)
from resolveflow.gate.kinds import KindRegistry
from resolveflow.gate.kinds.base import KindExecutor, KindOffer, Prepared, Verified
from resolveflow.gate.kinds.gitlab_issue_create import GitLabAccess
from resolveflow.gate.lease import Attempt, GateSettings, new_owner_id
from resolveflow.gate.pace import Pacer, Scheduler
from resolveflow.gate.recorder import Recorder
from resolveflow.gate.store import executions as execution_store
from resolveflow.gate.store.context import execution_context
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database
from resolveflow.telemetry import span

logger = logging.getLogger(__name__)


class Executor:
    def __init__(
        self,
        db: Database,
        github: GitHub,
        settings: GateSettings,
        owner: str | None = None,
        token_lookup: ApproverTokenLookup | None = None,
        clock: Callable[[], float] = time.monotonic,
        gitlab: GitLabAccess | None = None,
        schedule: Scheduler | None = None,
        offered: Sequence[KindOffer] = (),
    ) -> None:
        self.db = db
        self.github = github
        self.settings = settings
        self.owner = owner or new_owner_id()
        self.token_lookup = token_lookup
        self.clock = clock
        self.record = Recorder(db, self.owner, settings, clock)
        self.pacer = Pacer(db, self.owner, settings.pace, schedule)
        self.record.pacer = self.pacer
        self.kinds = KindRegistry(github, self.record, gitlab, offered)

    # --- entry points --------------------------------------------------------------------

    def run_due(self, tenant_ids: list[UUID] | None = None, limit: int | None = None) -> int:
        """Claim and process due executions until none is left (or ``limit`` were processed)."""
        processed = 0
        for tenant_id in tenant_ids if tenant_ids is not None else self._tenant_ids():
            while limit is None or processed < limit:
                if self.execute_next(tenant_id) is None:
                    break
                processed += 1
        return processed

    def execute_next(self, tenant_id: UUID) -> Execution | None:
        """Claim the tenant's next due execution and take it as far as it goes; None when none is due."""
        with span("execution.claim", tenant_id=str(tenant_id)):
            claimed = self._claim(tenant_id, None)
        return None if claimed is None else self._continue(claimed)

    def execute_one(self, tenant_id: UUID, execution_id: UUID) -> Execution:
        """Try to claim one execution; whoever loses the race just reads the current state."""
        with span("execution.claim", tenant_id=str(tenant_id), execution_id=str(execution_id)):
            claimed = self._claim(tenant_id, execution_id)
        if claimed is None:
            with self.db.tenant(tenant_id) as conn:
                return execution_store.execution_by_id(conn, tenant_id, execution_id)
        return self._continue(claimed)

    def _tenant_ids(self) -> list[UUID]:
        with self.db.unscoped() as conn:
            return [tenant.id for tenant in tenant_store.list_tenants(conn)]

    # --- one claimed execution -----------------------------------------------------------

    def _claim(self, tenant_id: UUID, execution_id: UUID | None) -> Prepared | Execution | None:
        """Claim, re-verify and (for a comment-only action) start the attempt in one transaction.

        Everything is committed before any request leaves, so other executors see the claim and
        a crash afterwards leaves a started attempt for reconciliation to examine.
        """
        lease = self.settings.lease_seconds
        begun = self.clock()  # before the claim: the attempt it may record is no older
        with self.db.tenant(tenant_id, pipelined=True) as conn:
            if execution_id is None:
                claimed = execution_store.claim_next_due(conn, tenant_id, self.owner, lease)
            else:
                claimed = execution_store.claim_by_id(
                    conn, tenant_id, execution_id, self.owner, lease
                )
            if claimed is None:
                return None
            return self._prepare(conn, claimed, begun)

    def _prepare(self, conn: Connection, claimed: Execution, begun: float) -> Prepared | Execution:
        try:
            verified = self._verify(conn, claimed)
            kind: KindExecutor = self.kinds.for_action(verified.action, claimed.tenant_id)
        except ResolveFlowError as exc:
            return self.record.refused_in(conn, claimed, exc)
        prior = tuple(execution_store.prior_uncertain(conn, claimed))
        step = kind.step_with_claim(verified.action)
        if step is None or prior:
            return Prepared(claimed, verified, None, prior)
        admitted = self.pacer.admit(conn, claimed, kind.spec.paced_as, verified.sent_with)
        if isinstance(admitted, Execution):
            return admitted  # back in the queue, holding a later slot
        wait = admitted.wait_seconds
        attempt_id = execution_store.insert_attempt(
            conn,
            claimed,
            step=step,
            owner=self.owner,
            credential=verified.sent_with.credential,
            token_fingerprint=verified.sent_with.token_fingerprint,
            lease_seconds=self.settings.lease_seconds,
            deadline_seconds=self.settings.in_flight_seconds + wait,
            with_claim=True,
        )
        send_at = self.clock() + wait
        attempt = Attempt(attempt_id, begun + wait + self.settings.send_slack_seconds, send_at)
        return Prepared(claimed, verified, attempt)

    def _continue(self, prepared: Prepared | Execution) -> Execution:
        if isinstance(prepared, Execution):
            return prepared  # refused before sending
        refused = self._app_refusal(prepared)
        if refused is not None:
            return refused
        action, tenant_id = prepared.verified.action, prepared.execution.tenant_id
        with span("execution.send", kind=action.kind, execution_id=str(prepared.execution.id)):
            return self.kinds.for_action(action, tenant_id).send(prepared)

    def _app_refusal(self, prepared: Prepared) -> Execution | None:
        """A write without the approver's own token goes out as the GitHub App, when there is
        one: the installation covering the repository must be this tenant's. Asked here, after
        the claim's commit (finding the installation may ask GitHub) and before any request."""
        execution, verified = prepared.execution, prepared.verified
        repository = github_repository(verified.action)
        if verified.token is not None or repository is None:
            return None
        try:
            check_app_may_act(self.github, execution.tenant_id, RepoName.parse(repository))
        except AppInstallationRefused as exc:
            if prepared.attempt is not None:  # started with the claim; it sends nothing
                return self.record.rejected(execution, prepared.attempt.id, exc)
            return self.record.refused(execution, exc)
        return None

    def _verify(self, conn: Connection, execution: Execution) -> Verified:
        """Re-read approval, proposal, approver and policy from the database, as they are now."""
        context = execution_context(conn, execution)
        if context.approval is None:
            raise NotAuthorized("the approval record is missing")
        action = check_approval_still_valid(
            approval=context.approval,
            approver=context.approver,
            proposal=context.proposal,
            latest_version=context.latest_version,
            # A close-as-duplicate whose notice is out was approved for notice, wait and close:
            # its approval is judged as of the notice, not at the end of the grace period.
            now=context.now
            if execution.notice_at is None
            else min(context.now, execution.notice_at),
        )
        if execution.digest != context.proposal.digest:
            raise NotAuthorized("the execution's digest differs from the proposal's")
        check_repository_allowed(action, context.allowed_repositories)
        token = approver_token(conn, context, self.token_lookup)
        return Verified(action=action, token=token)
