"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp) through the official client.

Structured calls send ``response_format = json_schema`` (strict, unless the schema holds an object
of any keys, which strict mode cannot express) and validate the answer again here: a server may
ignore the schema. The client's own retries are off so that every wait is ours
and bounded: a 429 is waited out for its Retry-After when that is at most ``max_wait_seconds``,
a 5xx, a timeout or a dropped connection is retried after a short backoff, at most
``max_retries`` times; invalid output is asked again at most ``invalid_output_attempts`` times in
all. Model calls only read, so a retry can never duplicate an effect. The API key is never logged.

Every call is bounded twice (issue 30: a small model looped inside a JSON array until the 300 s
client timeout, then was asked again, and held a worker for over ten minutes): its output by the
purpose's ``max_tokens`` (an answer cut there is invalid output, never parsed as if whole), and
the whole call, retries, waits and re-asks included, by ``deadline_seconds``: each request's
timeout is what is left of it, and a wait that would pass it is not waited.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import openai
from pydantic import BaseModel

from resolveflow.domain.counted import counted
from resolveflow.llm.errors import (
    ModelError,
    ModelOutputInvalid,
    ModelRefused,
    ModelTimeout,
    ModelUnavailable,
)
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import (
    OUTPUT_TOKENS,
    Completion,
    Purpose,
    Usage,
    as_openai_messages,
    free_form,
    last_invalid,
    parse_structured,
    strict_schema,
)

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
BACKOFF_SECONDS = 0.5


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class OpenAIChatModel:
    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        *,
        timeout_seconds: float = 60.0,
        max_retries: int = 2,
        max_wait_seconds: float = 30.0,
        invalid_output_attempts: int = 2,
        temperature: float | None = 0.0,
        output_tokens: Mapping[Purpose, int] | None = None,
        deadline_seconds: float = 120.0,
        schema_limits: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # A local server needs no key, but the client insists on one.
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url,
            timeout=timeout_seconds,
            max_retries=0,
        )
        self._model = model
        self._timeout = timeout_seconds
        self._max_retries = max(0, max_retries)
        self._max_wait = max_wait_seconds
        self._invalid_attempts = max(1, invalid_output_attempts)
        self._temperature = temperature
        self._output_tokens = {**OUTPUT_TOKENS, **(output_tokens or {})}
        self._deadline_seconds = deadline_seconds
        self._schema_limits = schema_limits
        self._sleep = sleep
        self._clock = clock
        self._ends: float | None = None  # a deadline shared by every call (``sharing_deadline``)

    @property
    def provider(self) -> str:
        return "openai"

    @property
    def model(self) -> str:
        return self._model

    def close(self) -> None:
        self._client.close()

    def sharing_deadline(self) -> OpenAIChatModel:
        """This model with its deadline started now and ending every call made through it: a
        product that asks again after refusing an answer asks within what is left (issue 30).
        Shares the connection pool."""
        if self._ends is not None:
            return self
        shared = copy.copy(self)
        shared._ends = self._clock() + self._deadline_seconds
        return shared

    def _call_deadline(self) -> float:
        """When the call starting now must end, on ``clock``."""
        own = self._clock() + self._deadline_seconds
        return own if self._ends is None else min(own, self._ends)

    def bounded(self, timeout_seconds: float) -> OpenAIChatModel:
        """This model with one request per call, cut after ``timeout_seconds``: a caller with a
        deadline (the planner) passes what is left of it, and no retry or wait can overrun it
        (invalid output is not asked for again either: the caller decides). Shares the
        connection pool."""
        bounded = copy.copy(self)
        bounded._client = self._client.with_options(timeout=timeout_seconds)
        bounded._timeout = min(self._timeout, timeout_seconds)
        bounded._max_retries = 0
        bounded._invalid_attempts = 1
        bounded._deadline_seconds = min(self._deadline_seconds, timeout_seconds)
        return bounded

    def max_tokens(self, purpose: Purpose) -> int:
        return self._output_tokens[purpose]

    def _create(
        self, messages: Sequence[ChatMessage], purpose: Purpose, deadline: float, **extra: Any
    ) -> tuple[Any, int]:
        """One answer, after the bounded retries, before ``deadline`` (of ``clock``); (response,
        requests sent)."""
        sent = 0
        while True:
            sent += 1
            retry = sent <= self._max_retries
            left = self._left(deadline, sent - 1)
            try:
                kwargs: dict[str, Any] = {"model": self._model, **extra}
                if self._temperature is not None:
                    kwargs["temperature"] = self._temperature
                # max_tokens, not max_completion_tokens: it is the one llama.cpp, vLLM and Ollama
                # read, and OpenAI's chat models take it too.
                client = self._client.with_options(timeout=min(self._timeout, left))
                response = client.chat.completions.create(
                    messages=as_openai_messages(messages),  # type: ignore[arg-type]
                    max_tokens=self._output_tokens[purpose],
                    **kwargs,
                )
                return response, sent
            except openai.RateLimitError as exc:
                wait = _retry_after(exc)
                if not retry or wait is None or wait > self._max_wait:
                    raise ModelUnavailable(
                        f"the model endpoint is rate limited (Retry-After {wait}s)",
                        attempts=sent,
                    ) from None
                logger.info("model rate limited, waiting", extra={"seconds": wait})
                self._wait(wait, deadline, sent)
            except openai.InternalServerError as exc:
                if not retry:
                    raise ModelUnavailable(
                        f"the model endpoint kept failing ({exc.status_code})", attempts=sent
                    ) from None
                self._wait(BACKOFF_SECONDS * 2 ** (sent - 1), deadline, sent)
            except openai.APITimeoutError:
                if not retry:
                    raise ModelTimeout(
                        f"the model did not answer in time ({counted(sent, 'request')})",
                        attempts=sent,
                    ) from None
            except openai.APIConnectionError:
                if not retry:
                    raise ModelUnavailable(
                        "the model endpoint could not be reached", attempts=sent
                    ) from None
                self._wait(BACKOFF_SECONDS * 2 ** (sent - 1), deadline, sent)
            except openai.APIStatusError as exc:
                raise ModelUnavailable(
                    f"the model endpoint refused the request ({exc.status_code}{_said(exc)})",
                    attempts=sent,
                ) from None
            except openai.APIError as exc:
                raise ModelError(
                    f"the model endpoint answered oddly: {type(exc).__name__}"
                ) from None

    def _left(self, deadline: float, sent: int) -> float:
        """Seconds left before ``deadline``; ``ModelTimeout`` when none are."""
        left = deadline - self._clock()
        if left <= 0:
            raise ModelTimeout(
                f"the model call passed its deadline of {self._deadline_seconds:g} s "
                f"({counted(sent, 'request')})",
                attempts=sent,
            )
        return left

    def _wait(self, seconds: float, deadline: float, sent: int) -> None:
        """Wait before the next request, unless that would pass the deadline."""
        if self._clock() + seconds >= deadline:
            raise ModelTimeout(
                f"the model call would pass its deadline of {self._deadline_seconds:g} s "
                f"waiting to retry ({counted(sent, 'request')})",
                attempts=sent,
            )
        self._sleep(seconds)

    def structured(
        self, messages: Sequence[ChatMessage], schema: type[T], *, purpose: Purpose
    ) -> Completion[T]:
        deadline = self._call_deadline()
        sent_schema = strict_schema(schema, limits=self._schema_limits)
        response_format = {
            "type": "json_schema",
            "json_schema": {
                "name": schema.__name__,
                "schema": sent_schema,
                "strict": not free_form(sent_schema),
            },
        }
        usage, sent = Usage(), 0
        last: ModelOutputInvalid | None = None
        for _ in range(self._invalid_attempts):
            try:
                response, n = self._create(
                    messages, purpose, deadline, response_format=response_format
                )
            except ModelError as exc:
                # A re-ask that failed: the call's error counts every request and token of it.
                exc.context["attempts"] = sent + int(exc.context.get("attempts", 1))
                exc.context["usage"] = usage
                raise
            sent += n
            usage = usage + _usage(response)
            message = _message(response)
            if getattr(message, "refusal", None):
                raise ModelRefused(
                    f"the model refused: {str(message.refusal)[:200]}", attempts=sent, usage=usage
                )
            try:
                self._check_whole(response, purpose)
                value = parse_structured(message.content, schema)
            except ModelOutputInvalid as exc:
                last = exc
                logger.info("invalid model output", extra={"reason": exc.message})
                continue
            return Completion(value, usage, sent, getattr(response, "model", None))
        assert last is not None
        raise last_invalid(last, self._invalid_attempts, attempts=sent, usage=usage)

    def text(self, messages: Sequence[ChatMessage], *, purpose: Purpose) -> Completion[str]:
        response, sent = self._create(messages, purpose, self._call_deadline())
        message = _message(response)
        usage = _usage(response)  # a failed answer cost its tokens too
        if getattr(message, "refusal", None):
            raise ModelRefused(
                f"the model refused: {str(message.refusal)[:200]}", attempts=sent, usage=usage
            )
        if not message.content:
            raise ModelOutputInvalid("the answer was empty", attempts=sent, usage=usage)
        self._check_whole(response, purpose, attempts=sent, usage=usage)
        return Completion(message.content, usage, sent, getattr(response, "model", None))

    def _check_whole(self, response: Any, purpose: Purpose, **context: Any) -> None:
        """An answer the server cut at ``max_tokens`` is not the answer: a cut JSON may still
        parse (an array closed early by a lenient parser), and a cut text reads as finished."""
        choices = getattr(response, "choices", None) or []
        if choices and getattr(choices[0], "finish_reason", None) == "length":
            raise ModelOutputInvalid(
                f"the answer was cut at its output budget ({self._output_tokens[purpose]} "
                f"tokens for {purpose.value})",
                answer=getattr(choices[0].message, "content", None),
                **context,
            )


def _said(exc: openai.APIStatusError) -> str:
    """What the server said of a refused request, one short line: a local server's reason (a
    prompt longer than its context: raise ``RESOLVEFLOW_MODEL_CONTEXT_TOKENS``) is the fix."""
    body = exc.body
    said = body.get("message") if isinstance(body, dict) else None
    if not isinstance(said, str) or not said.strip():
        return ""
    return ": " + " ".join(said.split())[:200]


def _message(response: Any) -> Any:
    choices = getattr(response, "choices", None)
    if not choices:
        raise ModelOutputInvalid("the answer had no choices")
    return choices[0].message


def _usage(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage()
    return Usage(getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
