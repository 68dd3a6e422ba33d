"""The OpenAI-compatible adapter (the official client) against a real local HTTP server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from uuid import UUID

import pytest

from resolveflow.accounts.model_budget import BudgetedModel, ModelCallBudget
from resolveflow.adapters.llm.openai_chat import OpenAIChatModel
from resolveflow.evals.safety import diagnosis
from resolveflow.llm.errors import ModelOutputInvalid, ModelRefused, ModelTimeout, ModelUnavailable
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import OUTPUT_TOKENS, Purpose, Usage
from resolveflow.llm.structured import structured_call
from resolveflow.sandbox.chat_server import FakeChatServer, HttpError, Refusal, Reply, Slow
from resolveflow.triage.domain.diagnosis import Diagnosis

MESSAGES = [ChatMessage("system", "You diagnose issues."), ChatMessage("user", "It crashes.")]
DIAGNOSIS, CRITIQUE = Purpose.DIAGNOSIS, Purpose.CRITIQUE
GOOD = json.dumps(diagnosis())


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as fake:
        yield fake


def model(
    server: FakeChatServer,
    *,
    timeout_seconds: float = 2.0,
    max_retries: int = 2,
    max_wait_seconds: float = 30.0,
) -> tuple[OpenAIChatModel, list[float]]:
    sleeps: list[float] = []
    client = OpenAIChatModel(
        server.base_url,
        "sk-test-secret",
        "fake-model",
        timeout_seconds=timeout_seconds,
        max_retries=max_retries,
        max_wait_seconds=max_wait_seconds,
        sleep=sleeps.append,
    )
    return client, sleeps


def test_success_sends_the_strict_schema_and_reports_tokens(server: FakeChatServer) -> None:
    server.queue(Reply(GOOD, prompt_tokens=321, completion_tokens=54, model="fake-model-2024"))
    client, _ = model(server)
    done = client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert done.value == Diagnosis.model_validate(diagnosis())
    assert (done.usage.prompt_tokens, done.usage.completion_tokens, done.attempts) == (321, 54, 1)
    assert done.served_model == "fake-model-2024"
    [sent] = server.requests
    assert sent["model"] == "fake-model"
    assert sent["messages"] == [
        {"role": "system", "content": "You diagnose issues."},
        {"role": "user", "content": "It crashes."},
    ]
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert server.authorized_requests == 1
    assert "sk-test-secret" not in json.dumps(server.requests)


def test_text_call(server: FakeChatServer) -> None:
    server.queue(Reply("The cause looks plausible."))
    client, _ = model(server)
    assert client.text(MESSAGES, purpose=CRITIQUE).value == "The cause looks plausible."
    assert "response_format" not in server.requests[0]


def test_refusal_is_not_retried(server: FakeChatServer) -> None:
    server.queue(Refusal("I can't help with that."), Reply(GOOD))
    client, _ = model(server)
    with pytest.raises(ModelRefused, match="can't help"):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert len(server.requests) == 1


def test_malformed_json_is_asked_again_then_fails_closed(server: FakeChatServer) -> None:
    server.queue(Reply("{not json"), Reply(GOOD))
    client, _ = model(server)
    done = client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert done.attempts == 2 and done.usage.prompt_tokens == 240  # both answers were paid for

    server.queue(Reply("{not json"), Reply(json.dumps(diagnosis(approved=True))), Reply(GOOD))
    with pytest.raises(ModelOutputInvalid, match="after 2 attempts") as caught:
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert "approved" in caught.value.message
    assert len(server.requests) == 4  # bounded: the third reply was never asked for


def test_429_waits_for_retry_after_then_succeeds(server: FakeChatServer) -> None:
    server.queue(HttpError(429, {"Retry-After": "3"}, "slow down"), Reply(GOOD))
    client, sleeps = model(server)
    done = client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert sleeps == [3.0] and done.attempts == 2


def test_429_longer_than_allowed_or_repeated_fails_closed(server: FakeChatServer) -> None:
    server.queue(HttpError(429, {"Retry-After": "3600"}))
    client, sleeps = model(server, max_wait_seconds=30.0)
    with pytest.raises(ModelUnavailable, match="rate limited"):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert sleeps == []
    server.queue(*[HttpError(429, {"Retry-After": "1"})] * 3)
    with pytest.raises(ModelUnavailable):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert sleeps == [1.0, 1.0] and len(server.requests) == 4  # 1 + (1 try + 2 retries)


def test_500_is_retried_with_backoff_and_bounded(server: FakeChatServer) -> None:
    server.queue(HttpError(500), HttpError(502), Reply(GOOD))
    client, sleeps = model(server)
    assert client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS).attempts == 3
    assert sleeps == [0.5, 1.0]
    server.queue(*[HttpError(500)] * 3)
    with pytest.raises(ModelUnavailable, match="kept failing"):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)


def test_a_400_is_not_retried(server: FakeChatServer) -> None:
    server.queue(HttpError(400, message="bad schema"), Reply(GOOD))
    client, _ = model(server)
    # The server's reason rides along: a local one says "exceeds the available context size".
    with pytest.raises(ModelUnavailable, match=r"refused the request \(400: bad schema\)"):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert len(server.requests) == 1


def test_a_slow_reply_times_out(server: FakeChatServer) -> None:
    server.queue(Slow(1.5, Reply(GOOD)))
    client, _ = model(server, timeout_seconds=0.3, max_retries=0)
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert time.monotonic() - started < 1.4


def test_an_unreachable_endpoint_is_unavailable() -> None:
    with FakeChatServer() as fake:
        url = fake.base_url
    client = OpenAIChatModel(
        url, None, "m", timeout_seconds=1.0, max_retries=1, sleep=lambda s: None
    )
    with pytest.raises(ModelUnavailable, match="could not be reached"):
        client.text(MESSAGES, purpose=CRITIQUE)


# --- issue 30: an output budget per purpose, a deadline over the whole call -------------------


def test_each_purpose_sends_its_output_budget_and_the_schemas_limits(
    server: FakeChatServer,
) -> None:
    server.queue(Reply(GOOD), Reply("Looks right."), Reply(GOOD))
    client = OpenAIChatModel(server.base_url, None, "m", output_tokens={DIAGNOSIS: 333})
    client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    client.text(MESSAGES, purpose=CRITIQUE)
    plain = OpenAIChatModel(server.base_url, None, "m", schema_limits=False)
    plain.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    limited, critique, unlimited = server.requests
    assert limited["max_tokens"] == 333
    assert critique["max_tokens"] == OUTPUT_TOKENS[CRITIQUE]
    assert unlimited["max_tokens"] == OUTPUT_TOKENS[DIAGNOSIS]
    # The grammar a server builds from the schema is what ends an array a small model would fill.
    assert '"maxItems"' in json.dumps(limited["response_format"])
    assert '"maxItems"' not in json.dumps(unlimited["response_format"])


def test_an_answer_cut_at_its_budget_is_invalid_even_when_it_parses(
    server: FakeChatServer,
) -> None:
    # Valid JSON that the server cut: taken as whole, it would be a truncated diagnosis.
    server.queue(Reply(GOOD, finish_reason="length"), Reply(GOOD, finish_reason="length"))
    client, _ = model(server)
    with pytest.raises(ModelOutputInvalid, match="cut at its output budget"):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert len(server.requests) == 2  # asked again once, as for any invalid output
    server.queue(Reply("The cause looks", finish_reason="length"))
    with pytest.raises(ModelOutputInvalid, match="400 tokens for critique"):
        client.text(MESSAGES, purpose=CRITIQUE)


class _Clock:
    """Time that moves only when the adapter sleeps or a request is sent (see ``tick``)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_deadline_bounds_the_retries_and_the_waits(server: FakeChatServer) -> None:
    clock = _Clock()
    client = OpenAIChatModel(
        server.base_url,
        None,
        "m",
        max_retries=10,
        max_wait_seconds=60,
        deadline_seconds=10,
        sleep=clock.sleep,
        clock=clock,
    )
    # Retry-After 4 s twice fits in 10 s; the third would pass the deadline and is not waited.
    server.queue(*[HttpError(429, {"retry-after": "4"}) for _ in range(5)])
    with pytest.raises(ModelTimeout, match="deadline of 10 s"):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert len(server.requests) == 3 and clock.now == 8


def test_invalid_output_is_asked_again_only_within_the_deadline(server: FakeChatServer) -> None:
    clock = _Clock()
    client = OpenAIChatModel(
        server.base_url, None, "m", invalid_output_attempts=5, deadline_seconds=1.0,
        max_retries=3, sleep=clock.sleep, clock=clock,
    )  # fmt: skip
    # A 5xx costs a 0.5 s backoff; the invalid answer is asked for again; the next 5xx's backoff
    # would end at the deadline: one deadline covers the retries and the re-asks together.
    server.queue(HttpError(500), Reply("{not json"), HttpError(500), Reply(GOOD))
    with pytest.raises(ModelTimeout, match="would pass its deadline of 1 s"):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert len(server.requests) == 3 and clock.now == 0.5


def test_a_real_wait_never_runs_past_the_deadline(server: FakeChatServer) -> None:
    """On the wall clock: a reply slower than the whole deadline is cut at the deadline, not at
    the (longer) per-request timeout, and not asked again."""
    server.queue(Slow(3.0, Reply(GOOD)), Slow(3.0, Reply(GOOD)))
    client = OpenAIChatModel(
        server.base_url, None, "m", timeout_seconds=30, max_retries=3, deadline_seconds=0.5
    )
    # Without the deadline the call would wait the 3 s and return the good answer.
    with pytest.raises(ModelTimeout):
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert len(server.requests) == 1


def test_a_products_re_asks_share_the_models_deadline(server: FakeChatServer) -> None:
    """``structured_call`` asks through ``sharing_deadline()``: an answer the product refuses is
    asked for again within what is left of the one deadline, not within a new one."""
    clock = _Clock()
    client = OpenAIChatModel(
        server.base_url, None, "m", deadline_seconds=1.0, max_retries=3,
        sleep=clock.sleep, clock=clock,
    )  # fmt: skip

    def refuse(answer: Diagnosis) -> Diagnosis:
        raise ModelOutputInvalid("the product's check refused it")

    # The first attempt: a 5xx (0.5 s backoff), then a valid answer the check refuses. The
    # second: another 5xx, whose backoff would end at the shared deadline: not waited. The same
    # through the daily budget's wrapper, as the mail, web ask and refine paths call it.
    budgeted = BudgetedModel(client, ModelCallBudget.shadow(UUID(int=0)), "rita")
    for n, asked in enumerate((client, budgeted), start=1):
        server.queue(HttpError(500), Reply(GOOD), HttpError(500), Reply(GOOD))
        start = clock.now
        with pytest.raises(ModelTimeout, match="would pass its deadline of 1 s"):
            structured_call(asked, MESSAGES, Diagnosis, refuse, purpose=DIAGNOSIS, attempts=3)
        assert len(server.requests) == 3 * n and clock.now - start == 0.5
        with server.state.lock:  # the last Reply was never asked for
            server.state.answers.clear()
    # Each call on its own still has a whole deadline: the shared one was the call's alone.
    server.queue(Reply(GOOD))
    client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)


def test_a_failed_re_ask_reports_every_request_and_token_of_the_call(
    server: FakeChatServer,
) -> None:
    # A cut answer (800 tokens spent), then a re-ask the endpoint refuses: the error still
    # says two requests and the 800 tokens, so what the call cost is not lost.
    server.queue(Reply(GOOD, completion_tokens=800, finish_reason="length"), HttpError(400))
    client, _ = model(server)
    with pytest.raises(ModelUnavailable) as raised:
        client.structured(MESSAGES, Diagnosis, purpose=DIAGNOSIS)
    assert raised.value.context["attempts"] == 2
    assert raised.value.context["usage"] == Usage(120, 800)
