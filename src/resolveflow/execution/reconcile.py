"""Reconciliation: settle executions whose outcome is unknown by looking at GitHub itself.

Never resends anything. It reads every page of the issue's comments for the execution's hidden marker
(and the exact approved body), and the issue's labels; what it finds moves the execution forward, and
what it cannot prove is left ``unknown`` for a person.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from uuid import UUID

from resolveflow.adapters.github.protocol import GitHub, IssueComment, RepoName
from resolveflow.domain.actions import (
    GitHubIssueAction,
    body_with_marker,
    execution_marker,
    parse_action,
)
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.errors import ProviderError
from resolveflow.execution.credentials import ApproverTokenLookup, approver_token
from resolveflow.execution.lease import GateSettings, new_owner_id
from resolveflow.store import audit
from resolveflow.store import executions as store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.context import execution_context
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

_OPEN = (ExecutionState.SENDING, ExecutionState.UNKNOWN)


@dataclass(frozen=True)
class Settled:
    execution_id: UUID
    state: ExecutionState
    detail: str


class Reconciler:
    def __init__(
        self,
        db: Database,
        github: GitHub,
        settings: GateSettings,
        owner: str | None = None,
        token_lookup: ApproverTokenLookup | None = None,
    ) -> None:
        self.token_lookup = token_lookup
        self.db = db
        self.github = github
        self.settings = settings
        self.owner = owner or new_owner_id()
        self.actor = f"reconciler:{self.owner}"

    def run(
        self, tenant_ids: list[UUID] | None = None, min_age_seconds: float = 0
    ) -> list[Settled]:
        """Settle what can be settled. ``min_age_seconds`` spaces out re-checks of ``unknown``
        executions (a background worker passes its interval; a person running it passes 0)."""
        if tenant_ids is None:
            with self.db.unscoped() as conn:
                tenant_ids = [tenant.id for tenant in tenant_store.list_tenants(conn)]
        results: list[Settled] = []
        for tenant_id in tenant_ids:
            with self.db.tenant(tenant_id) as conn:
                candidates = store.reconcile_candidates(conn, tenant_id, min_age_seconds)
            for candidate in candidates:
                settled = self.reconcile_one(candidate)
                if settled is not None:
                    results.append(settled)
        return results

    def reconcile_one(self, candidate: Execution) -> Settled | None:
        tenant_id = candidate.tenant_id
        with self.db.tenant(tenant_id) as conn:
            execution = store.take_over_for_reconcile(
                conn, tenant_id, candidate.id, self.owner, self.settings.lease_seconds
            )
            if execution is None:
                return None  # someone else holds it, or it settled meanwhile
            context = execution_context(conn, execution)
            comment_tried = store.step_attempted(conn, execution, "comment")
            labels_tried = store.step_attempted(conn, execution, "labels")
            token = approver_token(conn, context, self.token_lookup)
        action = parse_action(context.proposal.action)
        if not comment_tried and not labels_tried:
            return self._requeue(execution, "no request had left; returned to the queue")
        try:
            return self._settle(execution, action, labels_tried, token)
        except ProviderError as exc:
            return self._leave_unknown(execution, f"could not check GitHub: {exc.message}")

    def _settle(
        self,
        execution: Execution,
        action: GitHubIssueAction,
        labels_tried: bool,
        token: str | None,
    ) -> Settled:
        repo = RepoName.parse(action.target.repository)
        comment_id, comment_url = execution.comment_id, execution.comment_url
        if action.comment is not None and comment_id is None:
            comments = self.github.list_issue_comments(repo, action.target.issue, token=token)
            poster = self.github.authenticated_login(token=token)
            found = find_marked_comment(comments, action.comment, str(execution.id), poster)
            if found is None:
                return self._leave_unknown(execution, "no comment with this execution's marker")
            comment_id, comment_url = found.id, found.url
        if action.labels and not execution.labels_done:
            if not labels_tried:
                return self._requeue(
                    execution,
                    "comment found; labels not yet applied",
                    comment_id=comment_id,
                    comment_url=comment_url,
                )
            present = set(self.github.list_issue_labels(repo, action.target.issue))
            if not set(action.labels) <= present:
                return self._leave_unknown(
                    execution,
                    "comment found but labels are missing",
                    comment_id=comment_id,
                    comment_url=comment_url,
                )
        return self._finish(
            execution,
            ExecutionState.SENT,
            "confirmed on GitHub by reconciliation",
            comment_id=comment_id,
            comment_url=comment_url,
            labels_done=True,
        )

    def _finish(
        self,
        execution: Execution,
        state: ExecutionState,
        detail: str,
        *,
        comment_id: int | None = None,
        comment_url: str | None = None,
        labels_done: bool = False,
    ) -> Settled:
        with self.db.tenant(execution.tenant_id) as conn:
            after = store.finish(
                conn,
                execution,
                owner=self.owner,
                state=state,
                detail=detail,
                from_states=_OPEN,
                comment_id=comment_id,
                comment_url=comment_url,
                labels_done=labels_done,
            )
            changed = (
                state is not execution.state
                or detail != execution.detail
                or (comment_id is not None and comment_id != execution.comment_id)
            )
            if after is not None and changed:  # a repeated "still unknown" is not news
                audit.record(
                    conn,
                    tenant_id=execution.tenant_id,
                    actor=self.actor,
                    event=f"execution.reconciled_{state.value}",
                    subject_type="execution",
                    subject_id=execution.id,
                    details={"detail": detail, "from": execution.state.value},
                )
        logger.info("reconciled", extra={"execution": str(execution.id), "state": state.value})
        return Settled(execution.id, state, detail)

    def _leave_unknown(
        self,
        execution: Execution,
        detail: str,
        *,
        comment_id: int | None = None,
        comment_url: str | None = None,
    ) -> Settled:
        return self._finish(
            execution,
            ExecutionState.UNKNOWN,
            f"{detail}; a person must decide (executions resolve)",
            comment_id=comment_id,
            comment_url=comment_url,
        )

    def _requeue(
        self,
        execution: Execution,
        detail: str,
        *,
        comment_id: int | None = None,
        comment_url: str | None = None,
    ) -> Settled:
        with self.db.tenant(execution.tenant_id) as conn:
            after = store.release_for_retry(
                conn,
                execution,
                owner=self.owner,
                wait_seconds=0,
                detail=detail,
                count_wait=False,
                from_states=_OPEN,
                comment_id=comment_id,
                comment_url=comment_url,
            )
            if after is not None:
                audit.record(
                    conn,
                    tenant_id=execution.tenant_id,
                    actor=self.actor,
                    event="execution.requeued",
                    subject_type="execution",
                    subject_id=execution.id,
                    details={"detail": detail},
                )
        return Settled(execution.id, ExecutionState.PENDING, detail)


def find_marked_comment(
    comments: list[IssueComment], approved_comment: str, execution_id: str, poster: str
) -> IssueComment | None:
    """The comment carrying this execution's marker, with exactly the approved text, written by
    the account the executor posts as.

    Exact body and author mean that nobody else, quoting the marker or even copying the whole
    comment from their own account, can make an undelivered action look delivered.
    """
    expected = body_with_marker(approved_comment, execution_id).strip()
    marker = execution_marker(execution_id)
    for comment in comments:
        if (
            marker in comment.body
            and comment.author.lower() == poster.lower()
            and comment.body.replace("\r\n", "\n").strip() == expected
        ):
            return comment
    return None
