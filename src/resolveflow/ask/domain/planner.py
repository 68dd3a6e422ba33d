"""The bounded planner's pure parts: its three tools' schemas, how a model's step is read and
checked, the limits and the state of one plan. No I/O (the loop is ``ask/planner.py``).

A step is one JSON object, ``{"tool": NAME, "arguments": {...}}`` (``StepReply``), and nothing
else. Reading it has two outcomes besides a valid call:

- *invalid output* (not JSON, not an object, ``tool`` or ``arguments`` missing or of the wrong
  type: the schema's ``ModelOutputInvalid``; or a final answer whose citations fail Ask's
  checks): the model is told why and may try again, at most ``PlanLimits.max_invalid`` times in
  all;
- a *violation* (any other top-level field, such as ``"approved": true``; a tool that does not
  exist, such as ``create_issue`` or ``approve``; an argument that is unknown or invalid): the
  plan ends at once with the fixed abstention. The planner has no tool that approves, executes or
  writes anywhere, so no output can reach one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resolveflow.ask.domain.answers import Citation, DocumentRef, ModelAnswer
from resolveflow.ask.domain.answers import validate_citations as _validate_citations
from resolveflow.errors import Forbidden

PLANNER_VERSION = "plan-v1"
TRACE_TEXT_CHARS = 500  # of a raw argument or detail, as kept in the trace


class SearchKnowledge(BaseModel):
    """Search the tenant's documents; the result is passages with their chunk ids."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1, max_length=500)


class PrepareIssue(BaseModel):
    """Propose an issue in one of the tenant's project aliases; a person must approve it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alias: str = Field(min_length=1, max_length=100)
    title: str = Field(min_length=1, max_length=255)
    body: str = Field(min_length=1, max_length=20_000)
    labels: list[str] = Field(default_factory=list, max_length=10)
    assignees: list[str] = Field(default_factory=list, max_length=10)


# The final answer is Ask's own schema, so its citations are checked by Ask's own code.
FinalAnswer = ModelAnswer

TOOLS: dict[str, type[BaseModel]] = {
    "search_knowledge": SearchKnowledge,
    "prepare_issue": PrepareIssue,
    "final_answer": FinalAnswer,
}
ToolArguments = SearchKnowledge | PrepareIssue | ModelAnswer


class PlanViolation(Forbidden):
    """A step the plan cannot continue after: it ends with the abstention.

    Forbidden, in the one error tree: the model asked for something no plan may do. The planner
    catches it and abstains, so it reaches an edge only if that catch is ever lost."""

    def __init__(self, reason: str, tool: str = "?", arguments: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tool = tool
        self.arguments = arguments


@dataclass(frozen=True)
class ToolCall:
    tool: str
    arguments: ToolArguments


class StepReply(BaseModel):
    """A step as the model answers it: read loosely (any other field is kept), so that
    ``read_step``, not the schema, tells a forbidden step from a malformed one."""

    model_config = ConfigDict(extra="allow", frozen=True)

    tool: str
    arguments: dict[str, Any]

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema sent to the model's server, stricter than the reading: a tool of the three
        and arguments of one of their schemas, with their length and count limits. A server that
        turns it into a grammar (llama.cpp, vLLM) can then end a looping model's query at 500
        characters instead of at the step's token budget (issue 30); one that ignores it is read
        loosely as before, so ``read_step`` still tells a forbidden step from a malformed one."""
        return {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": list(TOOLS)},
                "arguments": {
                    "anyOf": [tool.model_json_schema(*args, **kwargs) for tool in TOOLS.values()]
                },
            },
            "required": ["tool", "arguments"],
        }


def read_step(reply: StepReply) -> ToolCall:
    """The tool call in a model's step (its schema read it: a malformed step is the model's
    ``ModelOutputInvalid`` already); ``PlanViolation`` when it asks for something no plan may
    do."""
    tool, arguments = reply.tool, reply.arguments
    extra = sorted(reply.model_extra or {})
    if extra:
        raise PlanViolation(
            f"the step has fields no step may have: {extra}", tool, reply.model_dump()
        )
    schema = TOOLS.get(tool)
    if schema is None:
        raise PlanViolation(f"unknown tool {tool!r} (tools: {', '.join(TOOLS)})", tool, arguments)
    try:
        parsed = schema.model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(arguments)"
        raise PlanViolation(
            f"invalid arguments for {tool}: {where}: {first['msg']}", tool, arguments
        ) from None
    assert isinstance(parsed, SearchKnowledge | PrepareIssue | ModelAnswer)
    return ToolCall(tool, parsed)


def check_final_answer(answer: ModelAnswer, returned: list[int]) -> list[int]:
    """Ask's checks, against the chunk ids that ``search_knowledge`` returned in this plan: at
    least one citation, none repeated, each one returned. ``ModelOutputInvalid`` otherwise."""
    return _validate_citations(answer, returned)


@dataclass(frozen=True)
class PlanLimits:
    max_steps: int = 8  # model calls, valid or not
    max_seconds: float = 120.0  # wall time of the whole plan (monotonic)
    max_invalid: int = 2  # invalid outputs, in all
    max_proposals: int = 1  # prepare_issue calls that may succeed
    passages: int = 5  # passages per search

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.max_invalid < 1 or self.max_seconds <= 0:
            raise ValueError("planner limits must be positive")


Outcome = Literal["ok", "invalid", "refused", "violation", "stopped"]


class PlanStep(BaseModel):
    """One step as a person reads it in the trace: what was asked and what came of it."""

    model_config = ConfigDict(frozen=True)

    n: int
    tool: str
    arguments: Any
    outcome: Outcome
    detail: str = ""
    chunk_ids: list[int] = Field(default_factory=list)
    proposal_id: str | None = None


class ProposalRef(BaseModel):
    """A proposal the plan prepared: it waits in the inbox for a person's approval."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    summary: str
    digest: str
    decision: str | None = None  # always None when the plan ends: nobody has decided
    execution: str | None = None  # always None: nothing runs before an approval


class PlanAnswer(BaseModel):
    """What ``plan`` returns: an answer (or the abstention), the proposals it prepared and the
    trace of every step."""

    question: str
    text: str
    abstained: bool
    citations: list[Citation] = Field(default_factory=list)
    related: list[DocumentRef] = Field(default_factory=list)
    proposals: list[ProposalRef] = Field(default_factory=list)
    trace: list[PlanStep] = Field(default_factory=list)
    stopped: str  # why the plan ended: "final answer", or the limit or violation that ended it
    generator: str
    planner_version: str = PLANNER_VERSION


def clip(value: Any, limit: int = TRACE_TEXT_CHARS) -> Any:
    """Arguments as kept in the trace: strings clipped, so a hostile output stays readable."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if isinstance(value, dict):
        return {str(k)[:100]: clip(v, limit) for k, v in list(value.items())[:20]}
    if isinstance(value, list):
        return [clip(v, limit) for v in value[:20]]
    return value


@dataclass
class PlanState:
    """One plan in progress. ``deadline`` is on the monotonic clock the service was given."""

    limits: PlanLimits
    deadline: float
    steps: list[PlanStep] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)  # chunk ids search_knowledge returned
    related: list[DocumentRef] = field(default_factory=list)
    proposals: list[ProposalRef] = field(default_factory=list)
    invalid: int = 0

    def stop_reason(self, now: float) -> str | None:
        """The limit that ends the plan before its next step, if one does."""
        if self.invalid >= self.limits.max_invalid:
            return f"invalid output limit ({self.limits.max_invalid})"
        if len(self.steps) >= self.limits.max_steps:
            return f"step limit ({self.limits.max_steps})"
        if now >= self.deadline:
            return f"time limit ({self.limits.max_seconds:g} s)"
        return None

    def record(
        self, tool: str, arguments: Any, outcome: Outcome, detail: str = "", **more: Any
    ) -> PlanStep:
        step = PlanStep(
            n=len(self.steps) + 1,
            tool=clip(tool, 100),
            arguments=clip(arguments),
            outcome=outcome,
            detail=clip(detail),
            **more,
        )
        self.steps.append(step)
        if outcome == "invalid":
            self.invalid += 1
        return step

    def add_returned(self, refs: list[DocumentRef]) -> None:
        for ref in refs:
            if ref.chunk_id not in self.returned:
                self.returned.append(ref.chunk_id)
            if all(r.document_id != ref.document_id for r in self.related):
                self.related.append(ref)


def fence(label: str, text: str) -> str:
    """Data for the model, in a fence it cannot close: fence markers inside are neutralised."""
    safe = text.replace("<<<", "‹‹‹").replace(">>>", "›››")
    return f"<<<{label}>>>\n{safe}\n<<<end {label.split(' ', 1)[0]}>>>"
