"""``MeteredModel`` (issue 30): every call of the wrapped model recorded as it returns or fails,
summed per purpose; the inner model's answers passed through unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from resolveflow.adapters.llm.metered import MeteredModel
from resolveflow.llm.errors import ModelOutputInvalid, ModelTimeout
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import Completion, Purpose, Usage


class Verdict(BaseModel):
    ok: bool


class Model:
    """A model at the outer edge: each call takes ``step`` seconds on the test's clock and
    answers, or raises, what the queue says."""

    provider = "openai"
    model = "tiny"

    def __init__(self, clock: list[float], queue: list[Any], step: float) -> None:
        self.clock, self.queue, self.step = clock, queue, step
        self.closed = False

    def _next(self) -> Any:
        self.clock[0] += self.step
        item = self.queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def structured(
        self, messages: Sequence[ChatMessage], schema: type[Any], *, purpose: Purpose
    ) -> Completion[Any]:
        return Completion(schema.model_validate(self._next()), Usage(100, 20), 1, "tiny-q4")

    def text(self, messages: Sequence[ChatMessage], *, purpose: Purpose) -> Completion[str]:
        return Completion(self._next(), Usage(), 1, None)

    def close(self) -> None:
        self.closed = True


def test_each_call_is_recorded_with_its_purpose_time_tokens_and_outcome() -> None:
    clock = [0.0]
    inner = Model(
        clock,
        [
            {"ok": True},
            ModelOutputInvalid("cut", usage=Usage(90, 800), attempts=2),
            ModelTimeout("late"),
            "fine",
        ],
        step=2.0,
    )
    model = MeteredModel(inner, clock=lambda: clock[0])
    asked = [ChatMessage(role="user", content="?")]
    assert model.structured(asked, Verdict, purpose=Purpose.DIAGNOSIS).value == Verdict(ok=True)
    with pytest.raises(ModelOutputInvalid):
        model.structured(asked, Verdict, purpose=Purpose.DIAGNOSIS)
    with pytest.raises(ModelTimeout):
        model.structured(asked, Verdict, purpose=Purpose.DIAGNOSIS)
    assert model.text(asked, purpose=Purpose.CRITIQUE).value == "fine"

    cost = model.cost()
    assert (cost.provider, cost.model, cost.served_models, cost.calls) == (
        "openai",
        "tiny",
        ("tiny-q4",),
        4,
    )
    diagnosis, critique = cost.purposes
    assert diagnosis.purpose is Purpose.DIAGNOSIS and diagnosis.calls == 3
    assert diagnosis.failed == {"invalid_output": 1, "timeout": 1}
    assert diagnosis.requests == 4  # 1, then 2 (the provider asked again), then 1
    # The timeout reported no tokens: it adds nothing, it is not a zero that hides the others.
    assert (diagnosis.prompt_tokens, diagnosis.completion_tokens) == (190, 820)
    assert (diagnosis.median_seconds, diagnosis.max_seconds) == (2.0, 2.0)
    assert critique.failed == {} and critique.prompt_tokens is None
    assert cost.usage() == Usage(190, 820)
    assert cost.as_json()["purposes"][0]["failed"] == {"invalid_output": 1, "timeout": 1}
    model.close()
    assert inner.closed


def test_a_model_never_called_costs_nothing() -> None:
    model = MeteredModel(Model([0.0], [], step=1.0))
    assert model.cost().as_json() == {
        "provider": "openai",
        "model": "tiny",
        "served_models": [],
        "calls": 0,
        "prompt_tokens": None,
        "completion_tokens": None,
        "purposes": [],
    }
