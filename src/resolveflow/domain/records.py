"""The records ResolveFlow keeps, as plain immutable values (the store maps rows onto them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from resolveflow.domain.vocabulary import Decision, ExecutionState

__all__ = [
    "Approval",
    "Decision",
    "Execution",
    "ExecutionState",
    "Principal",
    "Proposal",
    "Role",
    "Tenant",
]


class Role(StrEnum):
    REQUESTER = "requester"
    APPROVER = "approver"
    ADMIN = "admin"


@dataclass(frozen=True)
class Tenant:
    id: UUID
    name: str
    scratch: bool = False  # an evaluation's: the CLI never lists it nor picks it as the only one


@dataclass(frozen=True)
class Principal:
    id: UUID
    tenant_id: UUID
    subject: str
    roles: frozenset[Role]
    has_github_token: bool = False
    token_revoked_at: datetime | None = None  # the API token no longer authenticates since

    def has(self, role: Role) -> bool:
        return role in self.roles or Role.ADMIN in self.roles


def actor_of(principal: Principal) -> str:
    """How the audit trail names a principal that acted."""
    return f"principal:{principal.subject}"


@dataclass(frozen=True)
class Proposal:
    id: UUID
    tenant_id: UUID
    lineage_id: UUID
    version: int
    action: dict[str, Any]
    digest: str
    created_by: UUID | None
    author_kind: str
    created_at: datetime
    run_id: UUID | None = None


@dataclass(frozen=True)
class Approval:
    id: UUID
    tenant_id: UUID
    proposal_id: UUID
    decision: Decision
    digest: str
    principal_id: UUID
    reason: str | None
    decided_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True)
class Execution:
    id: UUID
    tenant_id: UUID
    proposal_id: UUID
    approval_id: UUID
    idempotency_key: str
    digest: str
    state: ExecutionState
    lease_owner: str | None
    lease_expires_at: datetime | None
    not_before: datetime
    rate_limit_waits: int
    comment_id: int | None
    comment_url: str | None
    labels_done: bool
    detail: str | None
    created_at: datetime
    updated_at: datetime
    result_ref: str | None = None  # what a kind created: an issue number, a message id
    result_url: str | None = None
    pace_slot_at: datetime | None = None  # the write slot it holds while back in the queue
    # github.issue_close_duplicate: when its notice went out (GitHub's time) and a digest of the
    # issue's title and body then; set once the grace period is being waited out
    notice_at: datetime | None = None
    watch_digest: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
