"""The MCP server itself, on the official SDK (``mcp``): the tools' names, arguments and results,
and the two ways an agent reaches it (``stdio`` below, streamable HTTP in ``http.py``).

Every tool's arguments are a closed schema (``additionalProperties: false``): an agent that adds
``digest``, ``approved`` or anything else is refused before the tool runs. Our errors become tool
errors of one line (the error tree's message); anything else is the SDK's "Error executing tool"
without its details. Nothing here approves, rejects, edits a decision or executes: the gate's
proposal creation is the only write, and a person decides in the inbox.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Protocol, TypeVar

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resolveflow import __version__
from resolveflow.ask.domain.answers import Answer
from resolveflow.domain.records import Principal
from resolveflow.errors import ResolveFlowError, one_line
from resolveflow.mcp_server.results import (
    EmailReplyResult,
    ProposalResult,
    RefinePacket,
    RunEvidence,
    SearchResult,
)
from resolveflow.mcp_server.tools import AgentTools

logger = logging.getLogger(__name__)

NAME = "resolveflow"
INSTRUCTIONS = (
    "ResolveFlow: search and ask a team's documents, read a triage run's evidence, refine a "
    "ticket, and propose actions (a comment and labels, a new issue, an email reply). A proposal "
    "waits for a person's approval in the inbox (its link is returned); no tool approves or "
    "executes anything."
)
T = TypeVar("T")

# The tools' names: what an agent can do, and nothing else (tests/mcp checks the list).
READ_TOOLS = ("search", "ask", "run_evidence", "refine")
PROPOSE_TOOLS = (
    "propose_comment",
    "propose_github_issue",
    "propose_project_issue",
    "propose_email_reply",
)
TOOL_NAMES = READ_TOOLS + PROPOSE_TOOLS

Text = Annotated[str, Field(min_length=1, max_length=65_000)]
Repository = Annotated[str, Field(min_length=3, max_length=200, examples=["acme/widgets"])]
Label = Annotated[str, Field(min_length=1, max_length=50)]
Labels = Annotated[list[Label], Field(max_length=50)]
Logins = Annotated[list[Annotated[str, Field(min_length=1, max_length=39)]], Field(max_length=10)]
Note = Annotated[str | None, Field(max_length=2000, description="Why (kept with the proposal).")]

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
_PROPOSE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


class Who(Protocol):
    """The acting principal of one tool call, authenticated from the token it came with."""

    def __call__(self, ctx: Context) -> Principal: ...


def _guarded(work: Callable[[], T]) -> T:
    try:
        return work()
    except ResolveFlowError as exc:
        raise ToolError(one_line(exc.message)) from None


def build_server(tools: AgentTools, who: Who) -> MCPServer[Any]:
    """The server with every tool registered (closed argument schemas)."""
    functions = _read_tools(tools, who) + _propose_tools(tools, who)
    registered = [
        _closed(
            Tool.from_function(fn, annotations=_READ if fn.__name__ in READ_TOOLS else _PROPOSE)
        )
        for fn in functions
    ]
    assert tuple(tool.name for tool in registered) == TOOL_NAMES
    return MCPServer(
        NAME,
        version=__version__,  # the serverInfo a client is told at initialize
        instructions=INSTRUCTIONS,
        tools=registered,
        log_level="WARNING",
        middleware=[OneLineErrors({tool.name: tool for tool in registered})],
    )


class OneLineErrors:
    """Every failed tool call answers one line: arguments outside a tool's schema are refused
    here, naming the fields but never echoing their values (the caller's data), and any other
    tool error is flattened (the SDK's validation text spans several lines)."""

    def __init__(self, tools: dict[str, Tool]) -> None:
        self.tools = tools

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method != "tools/call" or not isinstance(ctx.params, dict):
            return await call_next(ctx)
        tool = self.tools.get(str(ctx.params.get("name")))
        arguments = ctx.params.get("arguments") or {}
        if tool is not None and isinstance(arguments, dict):
            try:
                tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as exc:
                return _tool_error(f"invalid arguments for {tool.name}: {_fields(exc)}")
        result = await call_next(ctx)
        if isinstance(result, CallToolResult) and result.is_error:
            text = " ".join(p.text for p in result.content if isinstance(p, TextContent))
            return _tool_error(text)
        return result


def _fields(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()
    )


def _tool_error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=one_line(text))], is_error=True)


def _closed(tool: Tool) -> Tool:
    """The tool with arguments it does not name refused (the SDK ignores them by default): a
    ``digest`` or ``"approved": true`` slipped into a call fails the call. Its arguments are
    strict too: ``true``, ``"1"`` or ``1.0`` is not an issue number (lax pydantic reads each as
    1), nor ``5`` a query."""
    loose = tool.fn_metadata.arg_model
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, strict=True)
    strict: type[BaseModel] = type(
        loose.__name__, (loose,), {"model_config": config, "__module__": loose.__module__}
    )
    tool.fn_metadata.arg_model = strict  # type: ignore[assignment]
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def _read_tools(tools: AgentTools, who: Who) -> list[Callable[..., Any]]:
    def search(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=4000)],
        k: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> SearchResult:
        """Hybrid search (meaning and words) over your tenant's index: issues, pull requests,
        documents."""
        return _guarded(lambda: tools.search(who(ctx), query, k))

    def ask(ctx: Context, question: Annotated[str, Field(min_length=1, max_length=4000)]) -> Answer:
        """Answer a question from your tenant's documents, with numbered citations, or say that
        no source answers it."""
        return _guarded(lambda: tools.ask(who(ctx), question))

    def run_evidence(
        ctx: Context, run_id: Annotated[str, Field(min_length=32, max_length=40)]
    ) -> RunEvidence:
        """A triage run of your tenant: its evidence, classification, rule, proposal and
        timeline."""
        return _guarded(lambda: tools.run_evidence(who(ctx), run_id))

    def refine(
        ctx: Context,
        issue: Annotated[
            str | None, Field(max_length=300, description="OWNER/REPO#N, an allowlisted repo.")
        ] = None,
        text: Annotated[
            str | None, Field(max_length=65_000, description="A ticket's text.")
        ] = None,
    ) -> RefinePacket:
        """Refine a raw ticket into verified context: related tasks, relevance, a summary with
        scopes, a runbook, the changes that solved similar tasks (give the issue or the text)."""
        return _guarded(lambda: tools.refine(who(ctx), issue, text))

    return [search, ask, run_evidence, refine]


def _propose_tools(tools: AgentTools, who: Who) -> list[Callable[..., Any]]:
    def propose_comment(
        ctx: Context,
        repository: Repository,
        issue: Annotated[int, Field(gt=0, lt=2**31)],
        comment: Annotated[str | None, Field(max_length=65_000)] = None,
        labels: Labels | None = None,
        note: Note = None,
    ) -> ProposalResult:
        """Propose a comment and/or labels on an issue of an allowlisted repository. It waits
        for a person's approval in the inbox; returns the digest and the link."""
        return _guarded(
            lambda: tools.propose_comment(who(ctx), repository, issue, comment, labels or [], note)
        )

    def propose_github_issue(
        ctx: Context,
        repository: Repository,
        title: Annotated[str, Field(min_length=1, max_length=256)],
        body: Text,
        labels: Labels | None = None,
        assignees: Logins | None = None,
        note: Note = None,
    ) -> ProposalResult:
        """Propose a new issue in an allowlisted GitHub repository; it waits for approval."""
        return _guarded(
            lambda: tools.propose_github_issue(
                who(ctx), repository, title, body, labels or [], assignees or [], note
            )
        )

    def propose_project_issue(
        ctx: Context,
        project: Annotated[str, Field(min_length=1, max_length=100, description="An alias.")],
        title: Annotated[str, Field(min_length=1, max_length=256)],
        body: Text,
        labels: Labels | None = None,
        assignees: Annotated[list[Label], Field(max_length=10)] | None = None,
    ) -> ProposalResult:
        """Propose a new issue in one of your tenant's configured projects (a GitHub or GitLab
        project alias; labels and assignee names from the alias); it waits for approval."""
        return _guarded(
            lambda: tools.propose_project_issue(
                who(ctx), project, title, body, labels or [], assignees or []
            )
        )

    def propose_email_reply(
        ctx: Context,
        mailbox: Annotated[str, Field(min_length=3, max_length=320)],
        request: Annotated[
            str,
            Field(min_length=1, max_length=2_000_000, description="The message's RFC 5322 source."),
        ],
        facts: Annotated[
            str, Field(max_length=20_000, description="'name: value' lines for the reply.")
        ] = "",
        body: Annotated[
            str | None, Field(max_length=1_000_000, description="Your reply's text, checked.")
        ] = None,
    ) -> EmailReplyResult:
        """Draft a reply from a mailbox you hold a grant for (from its past replies, or your
        body); a draft that passes every check is proposed and waits for approval."""
        return _guarded(lambda: tools.propose_email_reply(who(ctx), mailbox, request, facts, body))

    return [propose_comment, propose_github_issue, propose_project_issue, propose_email_reply]
