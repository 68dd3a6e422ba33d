"""What every action kind's executor declares and receives.

The gate claims, re-verifies and records; a kind's executor knows its requests: which adapter
method writes, where the hidden marker goes, how reconciliation finds it, and what counts as
partial success. ``KindSpec`` states those in words (the docs and ``kinds list`` print them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep, Credential
from resolveflow.gate.domain.actions import ActionKind, AnyAction
from resolveflow.gate.domain.pace import PaceTarget
from resolveflow.gate.lease import Attempt
from resolveflow.gate.recorder import Recorder
from resolveflow.gate.store.executions import PriorExecution, SentWith


@dataclass(frozen=True)
class KindSpec:
    kind: ActionKind
    writes_with: tuple[str, ...]  # the @writes adapter methods it calls, in order
    steps: tuple[AttemptStep, ...]
    marker: str  # where the hidden marker goes
    reconciliation: str  # which listing, pages and window reconciliation reads
    partial: str  # what counts as partial success
    paced_as: PaceTarget  # whose write allowance its requests use (gate/pace.py)


def sent_with(token: str | None) -> SentWith:
    """The credential an attempt records: which kind of token, and a fingerprint of it (tokens
    are long and random, so 64 bits of their hash reveal nothing) to tell later whether the
    approver's token is still the one that wrote."""
    if token is None:
        return SentWith(Credential.SERVICE, None)
    return SentWith(Credential.APPROVER, hashlib.sha256(token.encode()).hexdigest()[:16])


@dataclass(frozen=True)
class Verified:
    action: AnyAction
    token: str | None  # the approver's own token, when they configured one

    @property
    def sent_with(self) -> SentWith:
        return sent_with(self.token)


@dataclass(frozen=True)
class Prepared:
    execution: Execution
    verified: Verified
    attempt: Attempt | None  # the first step's attempt, when it was started with the claim
    # Earlier executions of this digest or lineage that may have delivered it (issue 11):
    # before writing, their markers are looked for.
    prior: tuple[PriorExecution, ...] = ()


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
    token: str | None  # what to read with: the credential the marker's request was sent with
    attempted: frozenset[AttemptStep]  # steps whose request may have left
    first_started: dict[AttemptStep, datetime] = field(default_factory=dict)
    # False when that credential is gone (the approver's token changed): the author cannot be
    # checked, so marker and exact text alone decide.
    check_author: bool = True


class Settler(Protocol):
    """The reconciler's three ways to settle (``fields`` are the execution's result columns)."""

    def finish(
        self, execution: Execution, state: ExecutionState, detail: str, **fields: Any
    ) -> Settled | None: ...

    def leave_unknown(self, execution: Execution, detail: str, **fields: Any) -> Settled | None: ...

    def requeue(self, execution: Execution, detail: str, **fields: Any) -> Settled | None: ...


class KindExecutor(Protocol):
    spec: KindSpec

    def step_with_claim(self, action: AnyAction) -> AttemptStep | None:
        """The step whose attempt may be recorded in the claiming transaction (a single request
        with no read before it), else None."""
        ...

    def send(self, prepared: Prepared) -> Execution:
        """Take a claimed, verified execution as far as it goes, recording every outcome."""
        ...

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled | None:
        """Settle an execution whose outcome is unknown by reading the outside system; never
        resend anything."""
        ...


# A kind a package above the gate offers (mail's ``email.send``): its executor over the gate's
# recorder, with whatever it reaches outside already bound by the wiring.
KindOffer = Callable[[Recorder], KindExecutor]
