"""The model port: ``structured(messages, schema)`` and ``text(messages)``.

Providers: ``llm_openai.OpenAIChatModel`` (any OpenAI-compatible chat endpoint, JSON-schema
structured output), ``llm_scripted.ScriptedModel`` (queued outputs or a function, for tests and the
safety suite) and ``none`` (no model at all: the investigation then works from retrieval alone and
no port object exists). A model only ever reads what it is given and returns data; no provider has
a way to write anywhere.

Every provider validates structured output with the same code (``parse_structured``): invalid JSON
or a schema violation is ``ModelOutputInvalid`` (JSON in a Markdown code fence is forgiven).
Providers retry invalid output a bounded number of times and then raise. The products call a
model through ``llm.structured.structured_call`` (their checks, their bound, the budget) and fail
closed on a ``ModelError`` (the investigation escalates to a person).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from resolveflow.llm.errors import ModelOutputInvalid, parse_model_output
from resolveflow.llm.messages import ChatMessage

T = TypeVar("T", bound=BaseModel)
V = TypeVar("V")


class Purpose(StrEnum):
    """What a model call is for: each has its own output budget (``max_tokens``), so a model that
    never stops is cut where an answer of that kind has long ended (issue 30)."""

    DIAGNOSIS = "diagnosis"  # triage's investigation (``Diagnosis``)
    CRITIQUE = "critique"  # its second look at the diagnosis, plain text
    ANSWER = "answer"  # ask's answer from the retrieved passages
    PLAN_STEP = "plan_step"  # one step of the bounded planner
    RELEVANCE = "relevance"  # refine's judgement of the related tasks
    SUMMARY = "summary"  # refine's summary with scopes
    MAIL_DRAFT = "mail_draft"  # a reply's subject and body


# Output tokens per purpose: each several times the longest valid answer seen with the scripted
# and real models (a diagnosis of the trial ended by itself at 208 tokens), so a valid
# answer is never cut, and small enough that a looping model stops in seconds, not minutes.
OUTPUT_TOKENS: Mapping[Purpose, int] = {
    Purpose.DIAGNOSIS: 800,
    Purpose.CRITIQUE: 400,
    Purpose.ANSWER: 800,
    Purpose.PLAN_STEP: 400,
    Purpose.RELEVANCE: 800,
    Purpose.SUMMARY: 800,
    Purpose.MAIL_DRAFT: 1000,
}


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

    def structured(
        self, messages: Sequence[ChatMessage], schema: type[T], *, purpose: Purpose
    ) -> Completion[T]:
        """A validated instance of ``schema``; raises a ``ModelError`` otherwise."""
        ...

    def text(self, messages: Sequence[ChatMessage], *, purpose: Purpose) -> Completion[str]:
        """Plain text; raises a ``ModelError`` when there is none."""
        ...


@runtime_checkable
class Bounded(Protocol):
    """A model whose calls can be given a timeout (the openai provider): ``bounded(t)`` is the
    same model sending one request per call, cut after ``t`` seconds (the planner's steps)."""

    def bounded(self, timeout_seconds: float) -> ChatModel: ...


@runtime_checkable
class SharedDeadline(Protocol):
    """A model with a deadline per call (the openai provider) that can hold one deadline over
    several calls: ``sharing_deadline()`` is the same model whose deadline starts now and ends
    every call made through it, so a product that asks again asks within what is left."""

    def sharing_deadline(self) -> ChatModel: ...


def strip_code_fence(text: str) -> str:
    """``text`` without the Markdown code fence around it, if that is all there is around it."""
    # Many models wrap JSON in a fence even when asked not to; only that is forgiven.
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) >= 6:
        inner = stripped[3:-3]
        first_line, _, rest = inner.partition("\n")
        return (rest if first_line.strip().isalpha() or not first_line.strip() else inner).strip()
    return stripped


def parse_structured(content: str | None, schema: type[T]) -> T:
    """Validate a model's raw answer; one readable reason when it is not valid (the answer
    itself rides along in the error's context, for a trace)."""
    if content is None or not content.strip():
        raise ModelOutputInvalid("the answer was empty", answer=content)
    try:
        data = json.loads(strip_code_fence(content))
    except json.JSONDecodeError as exc:
        raise ModelOutputInvalid(
            f"the answer is not valid JSON ({exc.msg})", answer=content
        ) from None
    try:
        return parse_model_output(schema, data, "the answer")
    except ModelOutputInvalid as exc:
        raise ModelOutputInvalid(exc.message, answer=content) from None


def last_invalid(last: ModelOutputInvalid, tries: int, **context: Any) -> ModelOutputInvalid:
    """``ModelOutputInvalid`` once ``tries`` attempts are used: the last reason (and answer),
    with what ``context`` says of all of them (requests sent, usage)."""
    message = last.message if tries <= 1 else f"{last.message} (after {tries} attempts)"
    return ModelOutputInvalid(message, answer=last.context.get("answer"), **context)


# Not every server's strict mode accepts these; our own validation (parse_structured) checks them.
_DROPPED_KEYWORDS = frozenset({"default", "title", "pattern", "format"})
# Length and count limits: a server that turns the schema into a grammar (llama.cpp, vLLM)
# enforces them, which is what ends an array a small model would otherwise fill until its output
# budget runs out. Sent unless ``limits=False``, for a server whose strict mode refuses them.
LIMIT_KEYWORDS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})


def strict_schema(schema: type[BaseModel], *, limits: bool = True) -> dict[str, Any]:
    """The model's JSON schema in the form strict structured output wants: every property
    required, no additional properties; the length and count limits kept (``limits``), the
    rest of the validation left to our own."""
    dropped = _DROPPED_KEYWORDS if limits else _DROPPED_KEYWORDS | LIMIT_KEYWORDS

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            # Property names are names, not keywords (a field may be called "title"): each
            # property's schema is cleaned, every name kept.
            cleaned = {
                k: {name: visit(p) for name, p in v.items()} if k == "properties" else visit(v)
                for k, v in node.items()
                if k not in dropped
            }
            if cleaned.get("type") == "object" and "properties" in cleaned:
                cleaned["additionalProperties"] = False
                cleaned["required"] = list(cleaned["properties"])
            return cleaned
        if isinstance(node, list):
            return [visit(item) for item in node]
        return node

    result: dict[str, Any] = visit(schema.model_json_schema())
    return result


def free_form(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` (as ``strict_schema`` made it) holds an object of any keys (such as the
    planner's tool arguments): strict structured output cannot express one."""

    def visit(node: Any) -> bool:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" not in node:
                return True
            return any(visit(v) for v in node.values())
        return isinstance(node, list) and any(visit(item) for item in node)

    return visit(schema)


def as_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]
