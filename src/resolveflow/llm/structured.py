"""The one structured model call every product makes: ask for an answer in a schema, let the
product check it, ask again within a bound.

An attempt is one ``model.structured`` call (a provider may send more than one request for it:
its own retries). Invalid output, the provider's ``ModelOutputInvalid`` or the product's check
refusing the parsed answer with one, is asked for again with the same messages, at most
``attempts`` times in all; then ``ModelOutputInvalid`` with the last reason. Any other error (a
refusal, a timeout, an unreachable model, a spent budget) ends the call at once: the provider has
already retried what can be retried. ``each_attempt`` wraps every attempt, so it is consulted
before each one: the budget reserves a call there, or raises its error, which ends the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel

from resolveflow.llm.errors import ModelOutputInvalid
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import (
    ChatModel,
    Completion,
    Purpose,
    SharedDeadline,
    Usage,
    last_invalid,
)

S = TypeVar("S", bound=BaseModel)
V = TypeVar("V")
A = TypeVar("A")

# Wraps one attempt: called with the attempt, returns (or raises) what it does.
Attempt = Callable[[Callable[[], Completion[V]]], Completion[V]]


def _direct(attempt: Callable[[], Completion[V]]) -> Completion[V]:
    return attempt()


def structured_call(
    model: ChatModel,
    messages: Sequence[ChatMessage],
    schema: type[S],
    check: Callable[[S], A],
    *,
    purpose: Purpose,
    attempts: int,
    each_attempt: Attempt[S] = _direct,
) -> Completion[A]:
    """The first answer ``check`` accepts, with the usage and the requests of every attempt.

    A model with a deadline keeps one over the whole call, every attempt included
    (``SharedDeadline``): a later attempt gets what is left, and a ``ModelTimeout`` when nothing
    is, so asking again never holds the caller past the model's own deadline (issue 30)."""
    usage, sent = Usage(), 0
    last: ModelOutputInvalid | None = None
    asked = model.sharing_deadline() if isinstance(model, SharedDeadline) else model
    for _ in range(max(1, attempts)):
        try:
            completion = each_attempt(partial(asked.structured, messages, schema, purpose=purpose))
        except ModelOutputInvalid as exc:
            usage, sent = usage + _usage(exc), sent + int(exc.context.get("attempts", 1))
            last = exc
            continue
        usage, sent = usage + completion.usage, sent + completion.attempts
        try:
            value = check(completion.value)
        except ModelOutputInvalid as exc:
            last = exc
            continue
        return Completion(value, usage, sent, completion.served_model)
    assert last is not None
    raise last_invalid(last, attempts, attempts=sent, usage=usage)


def _usage(exc: ModelOutputInvalid) -> Usage:
    usage: Any = exc.context.get("usage")
    return usage if isinstance(usage, Usage) else Usage()
