"""The executor gate: the only code that writes to GitHub.

    pending --claim (conditional UPDATE + lease)--> sending --2xx--> sent
                                                        |-- definite 4xx --> failed (or partial)
                                                        |-- 403/429 rate limit --> pending, later
                                                        '-- timeout / 5xx / lost / malformed --> unknown

Each write is preceded by a committed attempt row, so after a crash we know whether a request may
have left. Before writing, the approval and proposal are re-read, the digest recomputed, the
approver and the policy checked again: nothing approved earlier is trusted blindly.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from uuid import UUID

from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.domain.actions import GitHubIssueAction, body_with_marker
from resolveflow.domain.policy import (
    check_approval_still_valid,
    check_labels_exist,
    check_repository_allowed,
)
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.errors import (
    InvalidInput,
    LeaseLost,
    NotAuthorized,
    PolicyViolation,
    ProviderError,
    ProviderOutcomeUnknown,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
    ResolveFlowError,
)
from resolveflow.execution.credentials import ApproverTokenLookup, approver_token
from resolveflow.execution.lease import GateSettings, new_owner_id
from resolveflow.execution.outcomes import Recorder
from resolveflow.store import executions as execution_store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.context import execution_context
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verified:
    action: GitHubIssueAction
    token: str | None  # the approver's own token, when they configured one
    credential: str


@dataclass(frozen=True)
class Prepared:
    execution: Execution
    verified: Verified
    attempt_id: UUID | None  # the comment attempt, when it was started with the claim


class Executor:
    def __init__(
        self,
        db: Database,
        github: GitHub,
        settings: GateSettings,
        owner: str | None = None,
        token_lookup: ApproverTokenLookup | None = None,
    ) -> None:
        self.db = db
        self.github = github
        self.settings = settings
        self.owner = owner or new_owner_id()
        self.token_lookup = token_lookup
        self.record = Recorder(db, self.owner, settings)

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
        claimed = self._claim(tenant_id, None)
        return None if claimed is None else self._continue(claimed)

    def execute_one(self, tenant_id: UUID, execution_id: UUID) -> Execution:
        """Try to claim one execution; whoever loses the race just reads the current state."""
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
        with self.db.tenant(tenant_id, pipelined=True) as conn:
            if execution_id is None:
                claimed = execution_store.claim_next_due(conn, tenant_id, self.owner, lease)
            else:
                claimed = execution_store.claim_by_id(
                    conn, tenant_id, execution_id, self.owner, lease
                )
            if claimed is None:
                return None
            return self._prepare(conn, claimed)

    def _prepare(self, conn: Connection, claimed: Execution) -> Prepared | Execution:
        try:
            verified = self._verify(conn, claimed)
        except ResolveFlowError as exc:
            return self.record.refused_in(conn, claimed, exc)
        attempt_id = None
        if verified.action.comment is not None and not verified.action.labels:
            attempt_id = execution_store.insert_attempt(
                conn,
                claimed,
                step="comment",
                owner=self.owner,
                credential=verified.credential,
                lease_seconds=self.settings.lease_seconds,
                with_claim=True,
            )
        return Prepared(claimed, verified, attempt_id)

    def _continue(self, prepared: Prepared | Execution) -> Execution:
        if isinstance(prepared, Execution):
            return prepared  # refused before sending
        execution, verified = prepared.execution, prepared.verified
        repo = RepoName.parse(verified.action.target.repository)
        if verified.action.labels and not execution.labels_done:
            try:
                known = self.github.list_repository_labels(repo, token=verified.token)
            except ProviderError as exc:
                return self.record.read_failed(execution, exc)
            except InvalidInput as exc:
                return self.record.refused(execution, exc)
            try:
                check_labels_exist(verified.action, known)
            except PolicyViolation as exc:
                return self.record.refused(execution, exc)
        if verified.action.comment is not None and execution.comment_id is None:
            after_comment = self._send_comment(execution, verified, repo, prepared.attempt_id)
            if (
                after_comment.state is not ExecutionState.SENDING
                or after_comment.comment_id is None
            ):
                return after_comment
            execution = after_comment
        if verified.action.labels and not execution.labels_done:
            return self._send_labels(execution, verified, repo)
        return self.record.finished(execution, ExecutionState.SENT, "sent")

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
            now=context.now,
        )
        if execution.digest != context.proposal.digest:
            raise NotAuthorized("the execution's digest differs from the proposal's")
        check_repository_allowed(action, context.allowed_repositories)
        token = approver_token(conn, context, self.token_lookup)
        return Verified(action=action, token=token, credential="approver" if token else "service")

    def _send_comment(
        self, execution: Execution, verified: Verified, repo: RepoName, attempt_id: UUID | None
    ) -> Execution:
        assert verified.action.comment is not None
        if attempt_id is None:
            try:
                attempt_id = self.record.attempt_started(execution, "comment", verified.credential)
            except LeaseLost:
                return execution
        body = body_with_marker(verified.action.comment, str(execution.id))
        try:
            posted = self.github.post_comment(
                repo, verified.action.target.issue, body, token=verified.token
            )
        except ProviderRateLimited as exc:
            return self.record.rate_limited(execution, attempt_id, exc)
        except (ProviderRejected, InvalidInput) as exc:
            return self.record.rejected(execution, attempt_id, exc)
        except ProviderUnavailable as exc:
            return self.record.unavailable(execution, attempt_id, exc)
        except ProviderOutcomeUnknown as exc:
            return self.record.unknown(execution, attempt_id, exc)
        except ProviderError as exc:
            return self.record.unknown(execution, attempt_id, exc)
        return self.record.comment_posted(
            execution, attempt_id, posted.id, posted.url, final=not verified.action.labels
        )

    def _send_labels(self, execution: Execution, verified: Verified, repo: RepoName) -> Execution:
        try:
            attempt_id = self.record.attempt_started(execution, "labels", verified.credential)
        except LeaseLost:
            return execution
        try:
            self.github.add_labels(
                repo,
                verified.action.target.issue,
                list(verified.action.labels),
                token=verified.token,
            )
        except ProviderRateLimited as exc:
            return self.record.rate_limited(execution, attempt_id, exc)
        except (ProviderRejected, InvalidInput) as exc:
            return self.record.rejected(execution, attempt_id, exc)
        except ProviderUnavailable as exc:
            return self.record.unavailable(execution, attempt_id, exc)
        except ProviderError as exc:
            return self.record.unknown(execution, attempt_id, exc)
        return self.record.labels_applied(execution, attempt_id)
