"""The one structured model call (llm/structured.py): invalid output asked for again within the
bound, a product's refusal counted as invalid output, the budget consulted before every attempt,
fenced JSON forgiven. No I/O: a scripted model, one request per call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from pydantic import BaseModel, ConfigDict

from resolveflow.accounts.limits import LimitExceeded
from resolveflow.accounts.model_budget import BUDGET_SPENT, ModelCallBudget, counted_call
from resolveflow.adapters.llm.scripted import ScriptedModel
from resolveflow.llm.errors import ModelOutputInvalid, ModelTimeout
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import Completion, Purpose, Usage, parse_structured, strip_code_fence
from resolveflow.llm.structured import structured_call

ANSWER = Purpose.ANSWER

MESSAGES = [ChatMessage("system", "Answer in JSON."), ChatMessage("user", "How many?")]


class Count(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int


def model(*answers: Any) -> ScriptedModel:
    return ScriptedModel(list(answers), invalid_output_attempts=1)


def accept(count: Count) -> int:
    return count.n


def at_most(limit: int) -> Callable[[Count], int]:
    def check(count: Count) -> int:
        if count.n > limit:
            raise ModelOutputInvalid(f"{count.n} is more than {limit}")
        return count.n

    return check


def test_the_first_valid_answer_is_returned_with_its_attempts() -> None:
    scripted = model({"n": 3})
    answer = structured_call(scripted, MESSAGES, Count, accept, purpose=ANSWER, attempts=2)
    assert (answer.value, answer.attempts, answer.served_model) == (3, 1, "scripted")
    assert [kind for kind, _ in scripted.calls] == ["structured:Count"]


def test_invalid_output_is_asked_for_again_within_the_bound() -> None:
    scripted = model("not json", {"n": 4})
    answer = structured_call(scripted, MESSAGES, Count, accept, purpose=ANSWER, attempts=2)
    assert (answer.value, answer.attempts) == (4, 2)
    assert [sent for _, sent in scripted.calls] == [MESSAGES, MESSAGES]  # the same messages


def test_after_the_bound_the_last_reason_is_raised_and_nothing_more_is_asked() -> None:
    scripted = model("not json", {"count": 1}, {"n": 5})
    with pytest.raises(ModelOutputInvalid) as raised:
        structured_call(scripted, MESSAGES, Count, accept, purpose=ANSWER, attempts=2)
    assert raised.value.message.endswith("at n: Field required (after 2 attempts)")
    assert raised.value.context["attempts"] == 2
    assert scripted.remaining == 1


def test_a_checks_refusal_counts_as_an_invalid_attempt() -> None:
    scripted = model({"n": 9}, {"n": 2})
    assert (
        structured_call(scripted, MESSAGES, Count, at_most(5), purpose=ANSWER, attempts=2).value
        == 2
    )
    refused = model({"n": 9}, {"n": 8}, {"n": 1})
    with pytest.raises(ModelOutputInvalid, match=r"8 is more than 5 \(after 2 attempts\)"):
        structured_call(refused, MESSAGES, Count, at_most(5), purpose=ANSWER, attempts=2)
    assert refused.remaining == 1


def test_one_attempt_raises_the_providers_reason_as_it_is() -> None:
    with pytest.raises(ModelOutputInvalid) as raised:
        structured_call(model("[1]"), MESSAGES, Count, accept, purpose=ANSWER, attempts=1)
    assert "after" not in raised.value.message and raised.value.context["answer"] == "[1]"


def test_any_other_model_error_ends_the_call_at_once() -> None:
    scripted = model(ModelTimeout("no answer in time"), {"n": 1})
    with pytest.raises(ModelTimeout):
        structured_call(scripted, MESSAGES, Count, accept, purpose=ANSWER, attempts=3)
    assert scripted.remaining == 1


def test_the_hook_is_consulted_before_every_attempt_and_its_error_ends_the_loop() -> None:
    seen: list[int] = []

    def budget_of(calls: int) -> Callable[[Callable[[], Completion[Count]]], Completion[Count]]:
        def each_attempt(attempt: Callable[[], Completion[Count]]) -> Completion[Count]:
            seen.append(len(scripted.calls))  # requests made before this attempt
            if len(seen) > calls:
                raise LimitExceeded("the daily budget is spent")
            return attempt()

        return each_attempt

    scripted = model("not json", "not json", {"n": 1})
    with pytest.raises(LimitExceeded):
        structured_call(
            scripted, MESSAGES, Count, accept, purpose=ANSWER, attempts=3, each_attempt=budget_of(2)
        )
    assert seen == [0, 1, 2] and scripted.remaining == 1  # the third was never asked


def test_the_budget_records_each_attempt_and_a_spent_budget_stops_the_call() -> None:
    budget = ModelCallBudget.shadow(UUID(int=0))
    scripted = model("not json", {"n": 1})
    answer = structured_call(
        scripted,
        MESSAGES,
        Count,
        accept,
        purpose=ANSWER,
        attempts=2,
        each_attempt=lambda attempt: counted_call(budget, scripted, "count", attempt),
    )
    assert answer.value == 1
    assert [r.outcome for r in budget.records] == ["invalid_output", "ok"]
    spent = ModelCallBudget(None, UUID(int=0), daily_limit=0)
    spent.reserve = lambda: False  # type: ignore[method-assign]
    with pytest.raises(LimitExceeded, match="budget of 0 model calls"):
        structured_call(
            model({"n": 1}),
            MESSAGES,
            Count,
            accept,
            purpose=ANSWER,
            attempts=2,
            each_attempt=lambda attempt: counted_call(spent, scripted, "count", attempt),
        )
    assert [r.outcome for r in spent.records] == [BUDGET_SPENT]


def test_usage_and_requests_add_up_over_the_attempts() -> None:
    class Metered:
        provider, model = "metered", "m"

        def __init__(self) -> None:
            self.answers = ["nope", '{"n": 7}']

        def structured(
            self, messages: Any, schema: type[Count], *, purpose: Purpose
        ) -> Completion[Count]:
            content = self.answers.pop(0)
            try:
                return Completion(parse_structured(content, schema), Usage(10, 2), 1, "m-1")
            except ModelOutputInvalid as exc:
                raise ModelOutputInvalid(exc.message, attempts=2, usage=Usage(10, 1)) from None

        def text(self, messages: Any, *, purpose: Purpose) -> Completion[str]:
            raise AssertionError("not a text call")

    answer = structured_call(Metered(), MESSAGES, Count, accept, purpose=ANSWER, attempts=2)
    assert (answer.usage, answer.attempts, answer.served_model) == (Usage(20, 3), 3, "m-1")


@pytest.mark.parametrize(
    "text",
    ['```json\n{"n": 1}\n```', '```\n{"n": 1}\n```', '  ```{"n": 1}```  ', '{"n": 1}'],
)
def test_json_in_a_markdown_fence_is_forgiven(text: str) -> None:
    assert strip_code_fence(text) == '{"n": 1}'
    assert (
        structured_call(model(text), MESSAGES, Count, accept, purpose=ANSWER, attempts=1).value == 1
    )


def test_only_a_fence_around_the_whole_answer_is_stripped() -> None:
    with pytest.raises(ModelOutputInvalid, match="not valid JSON"):
        parse_structured('Here it is: ```json\n{"n": 1}\n```', Count)


class Sharing:
    """A model with a deadline (``SharedDeadline``): ``sharing_deadline`` hands out a view, and
    every attempt must go through that one view, so one deadline covers them all."""

    provider = "openai"
    model = "shared"

    def __init__(self, shared: Sharing | None = None) -> None:
        self.views: list[Sharing] = []
        self.asked = 0
        self.parent = shared

    def sharing_deadline(self) -> Sharing:
        view = Sharing(self)
        self.views.append(view)
        return view

    def structured(self, messages: Any, schema: Any, *, purpose: Purpose) -> Completion[Any]:
        self.asked += 1
        return Completion(schema(n=self.asked), Usage(), 1, None)

    def text(self, messages: Any, *, purpose: Purpose) -> Completion[str]:
        raise AssertionError("not asked")


def test_every_attempt_is_asked_within_one_shared_deadline() -> None:
    def refuse_until_third(count: Count) -> int:
        if count.n < 3:
            raise ModelOutputInvalid("not yet")
        return count.n

    sharing = Sharing()
    done = structured_call(sharing, MESSAGES, Count, refuse_until_third, purpose=ANSWER, attempts=4)
    assert done.value == 3
    [view] = sharing.views  # one deadline for the whole call, not one per attempt
    assert (view.asked, sharing.asked) == (3, 0)
