"""The model port: ``structured(messages, schema)`` and ``text(messages)``.

Providers: ``llm_openai.OpenAIChatModel`` (any OpenAI-compatible chat endpoint, JSON-schema
structured output), ``llm_scripted.ScriptedModel`` (queued outputs or a function, for tests and the
safety suite) and ``none`` (no model at all: the investigation then works from retrieval alone and
no port object exists). A model only ever reads what it is given and returns data; no provider has
a way to write anywhere.

Every provider validates structured output with the same code (``parse_structured``): invalid JSON
or a schema violation is ``ModelOutputInvalid``. Providers retry invalid output a bounded number of
times and then raise, and the caller fails closed (the investigation escalates to a person).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from resolveflow.llm.errors import ModelOutputInvalid, parse_model_output
from resolveflow.llm.messages import ChatMessage

T = TypeVar("T", bound=BaseModel)
V = TypeVar("V")


@dataclass(frozen=True)
class Usage:
    """Token counts as the provider reported them; None when it did not (unknown, not zero)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            add(self.prompt_tokens, other.prompt_tokens),
            add(self.completion_tokens, other.completion_tokens),
        )


@dataclass(frozen=True)
class Completion(Generic[V]):
    value: V
    usage: Usage
    attempts: int  # requests sent for this call (retries included)
    served_model: str | None = None  # what the server says answered, when it says


class ChatModel(Protocol):
    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    def structured(self, messages: Sequence[ChatMessage], schema: type[T]) -> Completion[T]:
        """A validated instance of ``schema``; raises a ``ModelError`` otherwise."""
        ...

    def text(self, messages: Sequence[ChatMessage]) -> Completion[str]:
        """Plain text; raises a ``ModelError`` when there is none."""
        ...


def parse_structured(content: str | None, schema: type[T]) -> T:
    """Validate a model's raw answer; one readable reason when it is not valid."""
    if content is None or not content.strip():
        raise ModelOutputInvalid("the answer was empty")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise ModelOutputInvalid(f"the answer is not valid JSON ({exc.msg})") from None
    return parse_model_output(schema, data, "the answer")


# Not every server's strict mode accepts these; our own validation (parse_structured) checks them.
_DROPPED_KEYWORDS = frozenset(
    {"default", "title", "minLength", "maxLength", "minItems", "maxItems", "pattern", "format"}
)


def strict_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the form strict structured output wants: every property
    required, no additional properties; length limits are left to our own validation."""

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            cleaned = {k: visit(v) for k, v in node.items() if k not in _DROPPED_KEYWORDS}
            if cleaned.get("type") == "object" and "properties" in cleaned:
                cleaned["additionalProperties"] = False
                cleaned["required"] = list(cleaned["properties"])
            return cleaned
        if isinstance(node, list):
            return [visit(item) for item in node]
        return node

    result: dict[str, Any] = visit(schema.model_json_schema())
    return result


def as_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]
