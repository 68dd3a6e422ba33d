"""A scripted model: answers from a queue, or from a function of the messages.

For tests, the safety suite and demos. An item is a dict (sent through JSON, so it is validated
exactly like a real model's answer), a string (the raw answer text), or an exception instance (raised,
as a provider would: a timeout, a refusal). A callable item, or the ``responder``, is called with
``(messages, kind)`` where kind is ``structured:<Schema>`` or ``text`` and returns an item. An empty
queue without a responder is ``ModelUnavailable``: a script that ran out never invents an answer.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from resolveflow.errors import InvalidInput
from resolveflow.llm.errors import ModelOutputInvalid, ModelUnavailable
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import Completion, Purpose, Usage, last_invalid, parse_structured

T = TypeVar("T", bound=BaseModel)
Scripted = str | dict[str, Any] | BaseException | Callable[[Sequence[ChatMessage], str], Any]


class ScriptedModel:
    def __init__(
        self,
        outputs: Iterable[Scripted] = (),
        *,
        responder: Callable[[Sequence[ChatMessage], str], Any] | None = None,
        model: str = "scripted",
        invalid_output_attempts: int = 2,
    ) -> None:
        self._queue: deque[Scripted] = deque(outputs)
        self._responder = responder
        self._model = model
        self._attempts = max(1, invalid_output_attempts)
        self._lock = threading.Lock()
        self.calls: list[tuple[str, list[ChatMessage]]] = []  # what each request carried
        self.purposes: list[Purpose] = []  # what each request was for, in the same order

    @property
    def provider(self) -> str:
        return "scripted"

    @property
    def model(self) -> str:
        return self._model

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def _next(self, messages: Sequence[ChatMessage], kind: str, purpose: Purpose) -> Any:
        with self._lock:
            self.calls.append((kind, list(messages)))
            self.purposes.append(purpose)
            item: Any = self._queue.popleft() if self._queue else self._responder
        if item is None:
            raise ModelUnavailable("the scripted model has no answer left")
        if callable(item) and not isinstance(item, BaseException):
            item = item(messages, kind)
        if isinstance(item, BaseException):
            raise item
        return item

    def structured(
        self, messages: Sequence[ChatMessage], schema: type[T], *, purpose: Purpose
    ) -> Completion[T]:
        last: ModelOutputInvalid | None = None
        for attempt in range(1, self._attempts + 1):
            item = self._next(messages, f"structured:{schema.__name__}", purpose)
            content = item if isinstance(item, str) else json.dumps(item)
            try:
                return Completion(parse_structured(content, schema), Usage(), attempt, self._model)
            except ModelOutputInvalid as exc:
                last = exc
        assert last is not None
        raise last_invalid(last, self._attempts)

    def text(self, messages: Sequence[ChatMessage], *, purpose: Purpose) -> Completion[str]:
        item = self._next(messages, "text", purpose)
        content = item if isinstance(item, str) else json.dumps(item)
        return Completion(content, Usage(), 1, self._model)


def load_script(path: Path) -> list[Scripted]:
    """A JSON list of answers (objects for structured calls, strings for text calls)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"cannot read the scripted model file {path}: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(i, str | dict) for i in data):
        raise InvalidInput(f"{path}: expected a JSON list of objects and strings")
    return list(data)
