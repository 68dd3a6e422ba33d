"""What a model cost an evaluation: every call's purpose, time, tokens and outcome (issue 30).

``MeteredModel`` wraps any ``ChatModel`` and records each ``structured`` or ``text`` call as it
returns or fails; ``cost()`` sums them per purpose. The capability evaluations (``eval answers``,
``eval drafts``, ``eval diagnoses``) wrap the configured model in one, so a team measuring its own
model reads beside the figures what they cost: calls, failures by kind, tokens in and out, and the
median and slowest call. Nothing here changes what the inner model is asked or answers.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from resolveflow.llm.errors import ModelError
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import (
    Bounded,
    ChatModel,
    Completion,
    Purpose,
    SharedDeadline,
    Usage,
)

T = TypeVar("T", bound=BaseModel)
V = TypeVar("V")

OK = "ok"


@dataclass(frozen=True)
class CallRecord:
    purpose: Purpose
    outcome: str  # "ok", or the failing ModelError's ``outcome`` (invalid_output, timeout, ...)
    seconds: float
    usage: Usage
    served_model: str | None
    requests: int = 1  # sent for this call, the provider's re-asks included (a timeout: its last)

    def shown(self) -> str:
        """One line, for a test's or a log's account of what a model did."""
        tokens = "?" if self.usage.completion_tokens is None else self.usage.completion_tokens
        return f"{self.purpose.value} {self.outcome} {self.seconds:.1f}s {self.requests}req {tokens}tok"


@dataclass(frozen=True)
class PurposeCost:
    purpose: Purpose
    calls: int
    requests: int  # sent to the server for those calls, the provider's re-asks included
    failed: dict[str, int]  # outcome -> calls, the failures only
    prompt_tokens: int | None  # None when the provider reported none
    completion_tokens: int | None
    median_seconds: float
    max_seconds: float

    def as_json(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose.value,
            "calls": self.calls,
            "requests": self.requests,
            "failed": dict(self.failed),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "median_seconds": round(self.median_seconds, 3),
            "max_seconds": round(self.max_seconds, 3),
        }


@dataclass(frozen=True)
class ModelCost:
    provider: str
    model: str
    served_models: tuple[str, ...]  # what the server said answered, when it said
    purposes: tuple[PurposeCost, ...]

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.purposes)

    def usage(self) -> Usage:
        total = Usage()
        for p in self.purposes:
            total = total + Usage(p.prompt_tokens, p.completion_tokens)
        return total

    def as_json(self) -> dict[str, Any]:
        total = self.usage()
        return {
            "provider": self.provider,
            "model": self.model,
            "served_models": list(self.served_models),
            "calls": self.calls,
            "prompt_tokens": total.prompt_tokens,
            "completion_tokens": total.completion_tokens,
            "purposes": [p.as_json() for p in self.purposes],
        }


def summarize(provider: str, model: str, records: Sequence[CallRecord]) -> ModelCost:
    purposes = []
    for purpose in Purpose:
        mine = [r for r in records if r.purpose is purpose]
        if not mine:
            continue
        usage = sum((r.usage for r in mine), Usage())
        failed: dict[str, int] = {}
        for r in mine:
            if r.outcome != OK:
                failed[r.outcome] = failed.get(r.outcome, 0) + 1
        seconds = [r.seconds for r in mine]
        purposes.append(
            PurposeCost(
                purpose,
                len(mine),
                sum(r.requests for r in mine),
                failed,
                usage.prompt_tokens,
                usage.completion_tokens,
                statistics.median(seconds),
                max(seconds),
            )
        )
    served = tuple(sorted({r.served_model for r in records if r.served_model}))
    return ModelCost(provider, model, served, tuple(purposes))


class MeteredModel:
    """``inner`` with a record of every call; a ``ChatModel`` itself, ``Bounded`` and
    ``SharedDeadline`` as its inner model is (else those return it as it is). ``calls`` keeps
    each request's messages with ``keep_messages``, as ``ScriptedModel.calls`` does, for the
    safety checks that read what a real model was sent."""

    def __init__(
        self,
        inner: ChatModel,
        clock: Callable[[], float] = time.monotonic,
        records: list[CallRecord] | None = None,
        calls: list[tuple[str, list[ChatMessage]]] | None = None,
        *,
        keep_messages: bool = False,
    ) -> None:
        self.inner = inner
        self._clock = clock
        self.records: list[CallRecord] = [] if records is None else records
        self.calls: list[tuple[str, list[ChatMessage]]] = [] if calls is None else calls
        self._keep = keep_messages  # an evaluation's prompts are many: kept only when asked

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def model(self) -> str:
        return self.inner.model

    def bounded(self, timeout_seconds: float) -> MeteredModel:
        """The inner model's ``bounded`` (the planner's steps), metered into the same records."""
        if not isinstance(self.inner, Bounded):
            return self
        return self._sharing(self.inner.bounded(timeout_seconds))

    def sharing_deadline(self) -> MeteredModel:
        """The inner model's ``sharing_deadline`` (a product's re-asks), metered the same."""
        if not isinstance(self.inner, SharedDeadline):
            return self
        return self._sharing(self.inner.sharing_deadline())

    def _sharing(self, inner: ChatModel) -> MeteredModel:
        return MeteredModel(inner, self._clock, self.records, self.calls, keep_messages=self._keep)

    def structured(
        self, messages: Sequence[ChatMessage], schema: type[T], *, purpose: Purpose
    ) -> Completion[T]:
        if self._keep:
            self.calls.append((f"structured:{schema.__name__}", list(messages)))
        return self._metered(
            purpose, lambda: self.inner.structured(messages, schema, purpose=purpose)
        )

    def text(self, messages: Sequence[ChatMessage], *, purpose: Purpose) -> Completion[str]:
        if self._keep:
            self.calls.append(("text", list(messages)))
        return self._metered(purpose, lambda: self.inner.text(messages, purpose=purpose))

    def _metered(self, purpose: Purpose, call: Callable[[], Completion[V]]) -> Completion[V]:
        start = self._clock()
        try:
            completion = call()
        except ModelError as exc:
            usage = exc.context.get("usage")
            requests = int(exc.context.get("attempts", 1))
            spent = usage if isinstance(usage, Usage) else None
            self._record(purpose, exc.outcome, start, spent, requests=requests)
            raise
        self._record(
            purpose, OK, start, completion.usage, completion.served_model, completion.attempts
        )
        return completion

    def _record(
        self,
        purpose: Purpose,
        outcome: str,
        start: float,
        usage: Usage | None,
        served_model: str | None = None,
        requests: int = 1,
    ) -> None:
        seconds = self._clock() - start
        record = CallRecord(purpose, outcome, seconds, usage or Usage(), served_model, requests)
        self.records.append(record)

    def shown(self) -> list[str]:
        return [r.shown() for r in self.records]

    def cost(self) -> ModelCost:
        return summarize(self.provider, self.model, self.records)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
