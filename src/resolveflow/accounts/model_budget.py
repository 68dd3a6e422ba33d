"""Model calls counted against the principal's daily budget, and recorded.

A call is reserved before it is made (one conditional UPSERT, so concurrent runs cannot overspend)
and recorded afterwards with provider, model, tokens, latency, attempts and outcome
(``counted_call``: an investigation's calls); ``BudgetedModel`` only counts (ask, refine, mail).
A spent budget is ``LimitExceeded``, the one error of every daily limit; each product decides what
it means for it. A shadow ``ModelCallBudget`` (backtests, the safety suite) counts nothing and
writes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel

from resolveflow.accounts.limits import LimitExceeded
from resolveflow.llm.errors import ModelError
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import Bounded, ChatModel, Completion, Purpose, SharedDeadline, Usage
from resolveflow.store import model_calls as store
from resolveflow.store.database import Database
from resolveflow.telemetry import model_span, record_usage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallRecord:
    purpose: str
    provider: str
    model: str
    served_model: str | None
    usage: Usage
    latency_ms: float
    attempts: int
    outcome: str
    error: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose,
            "provider": self.provider,
            "model": self.model,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "latency_ms": round(self.latency_ms, 1),
            "attempts": self.attempts,
            "outcome": self.outcome,
            "error": self.error,
        }


@dataclass
class ModelCallBudget:
    """One run's model calls: counted against the daily budget of the principal who started the
    run, and recorded. ``db=None`` is shadow mode."""

    db: Database | None
    tenant_id: UUID
    daily_limit: int
    principal_id: UUID | None = None
    run_id: UUID | None = None
    records: list[CallRecord] = field(default_factory=list)

    @classmethod
    def shadow(cls, tenant_id: UUID) -> ModelCallBudget:
        """Keeps the records in memory only; with nothing counted, no limit applies."""
        return cls(None, tenant_id, daily_limit=0)

    def reserve(self) -> bool:
        if self.db is None or self.principal_id is None:
            return True
        with self.db.tenant(self.tenant_id) as conn:
            return store.reserve_model_call(
                conn, self.tenant_id, self.principal_id, self.daily_limit
            )

    def record(self, call: CallRecord) -> None:
        self.records.append(call)
        logger.info("model call", extra=call.as_json())
        if self.db is None:
            return
        with self.db.tenant(self.tenant_id) as conn:
            store.insert_model_call(
                conn,
                store.ModelCallRow(
                    tenant_id=self.tenant_id,
                    run_id=self.run_id,
                    principal_id=self.principal_id,
                    purpose=call.purpose,
                    provider=call.provider,
                    model=call.model,
                    served_model=call.served_model,
                    prompt_tokens=call.usage.prompt_tokens,
                    completion_tokens=call.usage.completion_tokens,
                    latency_ms=call.latency_ms,
                    attempts=call.attempts,
                    outcome=call.outcome,
                    error=call.error,
                ),
            )


BUDGET_SPENT = "budget_spent"  # the outcome recorded for a call the budget refused
V = TypeVar("V")


def counted_call(
    budget: ModelCallBudget, model: ChatModel, purpose: str, call: Callable[[], Completion[V]]
) -> Completion[V]:
    """One call counted against the budget and recorded, whatever its outcome;
    ``LimitExceeded`` when the budget is spent (nothing is called), the model's own error when
    it fails. It wraps one attempt of ``llm.structured.structured_call`` as it is."""
    if not budget.reserve():
        reason = (
            f"the daily budget of {budget.daily_limit} model calls of the person who started "
            "this run is spent"
        )
        budget.record(
            CallRecord(
                purpose, model.provider, model.model, None, Usage(), 0.0, 0, BUDGET_SPENT, reason
            )
        )
        raise LimitExceeded(reason)
    started = time.perf_counter()
    with model_span(model.provider, model.model) as current:
        completion = _call_recorded(budget, model, purpose, call, started)
        record_usage(current, completion.served_model, completion.usage.prompt_tokens,
                     completion.usage.completion_tokens)  # fmt: skip
    return completion


def _call_recorded(
    budget: ModelCallBudget,
    model: ChatModel,
    purpose: str,
    call: Callable[[], Completion[V]],
    started: float,
) -> Completion[V]:
    try:
        completion = call()
    except (ModelError, LimitExceeded) as exc:  # a budgeted model's own budget, too
        elapsed = (time.perf_counter() - started) * 1000
        usage = exc.context.get("usage")
        budget.record(
            CallRecord(
                purpose,
                model.provider,
                model.model,
                None,
                usage if isinstance(usage, Usage) else Usage(),
                elapsed,
                int(exc.context.get("attempts", 1)),
                exc.outcome if isinstance(exc, ModelError) else BUDGET_SPENT,
                exc.message,
            )
        )
        raise
    elapsed = (time.perf_counter() - started) * 1000
    budget.record(
        CallRecord(
            purpose,
            model.provider,
            model.model,
            completion.served_model,
            completion.usage,
            elapsed,
            completion.attempts,
            "ok",
            None,
        )
    )
    return completion


BUDGET_SETTING = "RESOLVEFLOW_MODEL_DAILY_CALLS_PER_PRINCIPAL"
T = TypeVar("T", bound=BaseModel)


class BudgetedModel:
    """A model whose every call is first counted against the asker's daily budget."""

    def __init__(self, inner: ChatModel, budget: ModelCallBudget, subject: str) -> None:
        self.inner, self.budget, self.subject = inner, budget, subject

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def model(self) -> str:
        return self.inner.model

    def bounded(self, timeout_seconds: float) -> BudgetedModel:
        """The inner model's ``bounded`` view (the planner's steps), counted the same."""
        if not isinstance(self.inner, Bounded):
            return self
        return BudgetedModel(self.inner.bounded(timeout_seconds), self.budget, self.subject)

    def sharing_deadline(self) -> BudgetedModel:
        """The inner model's one deadline for several calls (a product's re-asks), counted the
        same: without it, every attempt would get a fresh deadline."""
        if not isinstance(self.inner, SharedDeadline):
            return self
        return BudgetedModel(self.inner.sharing_deadline(), self.budget, self.subject)

    def structured(
        self, messages: Sequence[ChatMessage], schema: type[T], *, purpose: Purpose
    ) -> Completion[T]:
        self._reserve()
        return self.inner.structured(messages, schema, purpose=purpose)

    def text(self, messages: Sequence[ChatMessage], *, purpose: Purpose) -> Completion[str]:
        self._reserve()
        return self.inner.text(messages, purpose=purpose)

    def _reserve(self) -> None:
        # LimitExceeded is not a ModelError: ask and mail let it through, so the caller hears
        # 429 instead of a silent abstention; refine catches it and falls back to its rules.
        if not self.budget.reserve():
            raise LimitExceeded(
                f"daily limit reached: {self.subject} may have {self.budget.daily_limit} model "
                f"calls per day ({BUDGET_SETTING}); the count starts again at 00:00 UTC"
            )
