"""Starting triage runs and deciding on them: the run lease, the tenant check, the resume."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langgraph.types import Command

from resolveflow.domain.errors import InvalidInput, NotAuthorized, NotFound, RunBusy
from resolveflow.domain.records import Principal, Role
from resolveflow.execution.gate import new_owner_id
from resolveflow.service import proposals as proposal_service
from resolveflow.store import audit
from resolveflow.store import proposals as proposal_store
from resolveflow.store import runs as run_store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

_ISSUE_REF = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+)#(\d+)$")
_ISSUE_URL = re.compile(
    r"^https?://[^/]+/([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+)/(?:issues|pull)/(\d+)/?(?:[#?].*)?$"
)


def parse_issue_reference(text: str) -> tuple[str, int]:
    """``owner/repo#12`` or an issue / pull request URL -> ("owner/repo", 12)."""
    for pattern in (_ISSUE_REF, _ISSUE_URL):
        match = pattern.match(text.strip())
        if match:
            return f"{match.group(1)}/{match.group(2)}".lower(), int(match.group(3))
    raise InvalidInput(f"expected OWNER/REPO#N or an issue URL, got {text!r}")


@dataclass
class RunController:
    """Runs the triage graph for one process. ``graph`` is the compiled graph with checkpointer."""

    db: Database
    graph: Any
    lease_seconds: float
    approval_ttl_seconds: int

    @contextmanager
    def _leased(self, tenant_id: UUID, run_id: UUID) -> Iterator[None]:
        owner = new_owner_id()
        with self.db.tenant(tenant_id) as conn:
            if not run_store.acquire_lease(conn, tenant_id, run_id, owner, self.lease_seconds):
                raise RunBusy("run is already being resumed by another process")
        try:
            yield
        finally:
            with self.db.tenant(tenant_id) as conn:
                run_store.release_lease(conn, tenant_id, run_id, owner)

    def _config(self, run_id: UUID) -> dict[str, Any]:
        return {"configurable": {"thread_id": str(run_id)}}

    def start(self, principal: Principal, repository: str, number: int) -> UUID:
        if not (principal.has(Role.REQUESTER) or principal.has(Role.APPROVER)):
            raise NotAuthorized(f"{principal.subject} may not start runs")
        run_id = uuid.uuid4()
        with self.db.tenant(principal.tenant_id) as conn:
            if not tenant_store.repository_allowed(conn, principal.tenant_id, repository):
                raise NotAuthorized(f"repository {repository} is not on this tenant's allowlist")
            run_store.insert_run(
                conn,
                run_id=run_id,
                tenant_id=principal.tenant_id,
                workflow="triage",
                repository=repository,
                issue_number=number,
                requested_by=principal.id,
            )
            audit.record(
                conn,
                tenant_id=principal.tenant_id,
                actor=f"principal:{principal.subject}",
                event="run.started",
                subject_type="run",
                subject_id=run_id,
                run_id=run_id,
                details={"target": f"{repository}#{number}"},
            )
        state = {
            "tenant_id": str(principal.tenant_id),
            "run_id": str(run_id),
            "repository": repository,
            "issue_number": number,
            "requested_by": str(principal.id),
        }
        with self._leased(principal.tenant_id, run_id):
            self.graph.invoke(state, self._config(run_id))
        return run_id

    def find(self, principal: Principal, run_or_proposal: UUID) -> tuple[UUID | None, UUID]:
        """(run id, proposal id to decide) for a run id or a proposal id, in the principal's tenant."""
        with self.db.tenant(principal.tenant_id) as conn:
            run = run_store.find_run(conn, principal.tenant_id, run_or_proposal)
            if run is not None:
                latest = run_store.latest_proposal_for_run(conn, principal.tenant_id, run["id"])
                if latest is None:
                    raise NotFound(
                        f"run {run_or_proposal} has no proposal to decide (status {run['status']})"
                    )
                return run["id"], latest.id
            proposal = proposal_store.proposal_by_id(conn, principal.tenant_id, run_or_proposal)
            return proposal.run_id, proposal.id

    def approve(
        self, principal: Principal, run_or_proposal: UUID, digest: str
    ) -> proposal_service.ApprovalResult:
        run_id, proposal_id = self.find(principal, run_or_proposal)
        if run_id is None:
            return proposal_service.approve(
                self.db, principal, proposal_id, digest, self.approval_ttl_seconds
            )
        with self._leased(principal.tenant_id, run_id):
            result = proposal_service.approve(
                self.db, principal, proposal_id, digest, self.approval_ttl_seconds
            )
            self._resume(run_id, result.approval.id)
        return result

    def reject(self, principal: Principal, run_or_proposal: UUID, reason: str) -> Any:
        run_id, proposal_id = self.find(principal, run_or_proposal)
        if run_id is None:
            return proposal_service.reject(self.db, principal, proposal_id, reason)
        with self._leased(principal.tenant_id, run_id):
            rejection = proposal_service.reject(self.db, principal, proposal_id, reason)
            self._resume(run_id, rejection.id)
        return rejection

    def resume(self, principal: Principal, run_id: UUID) -> None:
        """Continue a paused run whose proposal was already decided (after a crash, say)."""
        with self.db.tenant(principal.tenant_id) as conn:
            run = run_store.run_by_id(conn, principal.tenant_id, run_id)  # the tenant check
            latest = run_store.latest_proposal_for_run(conn, principal.tenant_id, run_id)
            decision = (
                proposal_store.approval_for_proposal(conn, principal.tenant_id, latest.id)
                if latest
                else None
            )
        if run["status"] != "awaiting_approval":
            raise InvalidInput(f"run {run_id} is {run['status']}, not awaiting approval")
        if decision is None:
            raise InvalidInput("the run's proposal has not been decided yet")
        with self._leased(principal.tenant_id, run_id):
            self._resume(run_id, decision.id)

    def resume_with(self, principal: Principal, run_id: UUID, value: Any) -> None:
        """Resume with an arbitrary value (tests use this to forge one); the graph checks it."""
        with self.db.tenant(principal.tenant_id) as conn:
            run_store.run_by_id(conn, principal.tenant_id, run_id)
        with self._leased(principal.tenant_id, run_id):
            self.graph.invoke(Command(resume=value), self._config(run_id))

    def _resume(self, run_id: UUID, approval_id: UUID) -> None:
        snapshot = self.graph.get_state(self._config(run_id))
        if not snapshot.next:
            logger.info("run already finished; nothing to resume", extra={"run": str(run_id)})
            return
        self.graph.invoke(Command(resume={"approval_id": str(approval_id)}), self._config(run_id))
