"""The records ResolveFlow keeps, as plain immutable values (the store maps rows onto them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID


class Role(StrEnum):
    REQUESTER = "requester"
    APPROVER = "approver"
    ADMIN = "admin"


class ExecutionState(StrEnum):
    PENDING = "pending"  # approved, waiting to be claimed (possibly not before a rate-limit reset)
    SENDING = "sending"  # claimed under a lease; a write may be in flight
    SENT = "sent"
    PARTIAL = "partial"  # comment posted, labels definitely refused: never resend the comment
    FAILED = "failed"  # definitely not written (refused by policy or by the provider)
    UNKNOWN = (
        "unknown"  # may or may not have been written; only reconciliation or a person moves it
    )
    NOT_SENT = "not_sent"  # a person confirmed it was not written

    @property
    def is_final(self) -> bool:
        return self in {self.SENT, self.PARTIAL, self.FAILED, self.NOT_SENT}


@dataclass(frozen=True)
class Tenant:
    id: UUID
    name: str


@dataclass(frozen=True)
class Principal:
    id: UUID
    tenant_id: UUID
    subject: str
    roles: frozenset[Role]
    has_github_token: bool = False

    def has(self, role: Role) -> bool:
        return role in self.roles or Role.ADMIN in self.roles


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
    decision: str
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
    extra: dict[str, Any] = field(default_factory=dict)
