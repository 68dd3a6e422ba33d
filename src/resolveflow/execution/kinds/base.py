"""What every action kind's executor declares and receives.

The gate claims, re-verifies and records; a kind's executor knows its requests: which adapter
method writes, where the hidden marker goes, how reconciliation finds it, and what counts as
partial success. ``KindSpec`` states those in words (the docs and ``kinds list`` print them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from resolveflow.domain.actions import ActionKind, AnyAction
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep, Credential


@dataclass(frozen=True)
class KindSpec:
    kind: ActionKind
    writes_with: tuple[str, ...]  # the @writes adapter methods it calls, in order
    steps: tuple[AttemptStep, ...]
    marker: str  # where the hidden marker goes
    reconciliation: str  # which listing, pages and window reconciliation reads
    partial: str  # what counts as partial success


@dataclass(frozen=True)
class Verified:
    action: AnyAction
    token: str | None  # the approver's own token, when they configured one
    credential: Credential


@dataclass(frozen=True)
class Prepared:
    execution: Execution
    verified: Verified
    attempt_id: UUID | None  # the first step's attempt, when it was started with the claim


@dataclass(frozen=True)
class Settled:
    execution_id: UUID
    state: ExecutionState
    detail: str


@dataclass(frozen=True)
class Evidence:
    """What reconciliation knows of an execution before it looks outside."""

    execution: Execution
    action: AnyAction
    token: str | None
    attempted: frozenset[AttemptStep]  # steps whose request may have left
    first_started: dict[AttemptStep, datetime] = field(default_factory=dict)


class Settler(Protocol):
    """The reconciler's three ways to settle (``fields`` are the execution's result columns)."""

    def finish(
        self, execution: Execution, state: ExecutionState, detail: str, **fields: Any
    ) -> Settled: ...

    def leave_unknown(self, execution: Execution, detail: str, **fields: Any) -> Settled: ...

    def requeue(self, execution: Execution, detail: str, **fields: Any) -> Settled: ...


class KindExecutor(Protocol):
    spec: KindSpec

    def step_with_claim(self, action: AnyAction) -> AttemptStep | None:
        """The step whose attempt may be recorded in the claiming transaction (a single request
        with no read before it), else None."""
        ...

    def send(self, prepared: Prepared) -> Execution:
        """Take a claimed, verified execution as far as it goes, recording every outcome."""
        ...

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled:
        """Settle an execution whose outcome is unknown by reading the outside system; never
        resend anything."""
        ...
