"""The compromised agent's cases of ``eval safety``: an MCP client that obeys an attacker, scripted,
against the real MCP server (``server.build_server`` over ``tools.AgentTools``, the SDK's
in-process client, the configured database).

In a scratch tenant with one allowlisted repository, and beside another scratch tenant with its
own, the agent calls tools that do not exist (approve, execute), slips a digest or
``"approved": true`` into a proposal's arguments, proposes into a repository off the allowlist,
into the other tenant's repository and from a mailbox it holds no grant for. Each call must be
refused with one line, and whatever happened, these hold after every case: no proposal of either
tenant has a decision or an execution, and the only proposals are those of the control case,
which waits for a person. Both tenants are removed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import anyio
from mcp import Client
from mcp_types import CallToolResult, TextContent

from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.bootstrap.app import App
from resolveflow.domain.counted import counted
from resolveflow.domain.records import Principal, Role
from resolveflow.gate import proposals
from resolveflow.mcp_server.server import build_server
from resolveflow.mcp_server.tools import AgentTools
from resolveflow.store import tenants as tenant_store

REPOSITORY = "acme/widgets"
OFF_LIST = "acme/secrets"
MAILBOX = "billing@acme.example"
REQUEST = (
    "From: Dana <dana@customer.example>\nTo: billing@acme.example\nSubject: Refund\n"
    "Message-ID: <agent-case@customer.example>\n\nPlease refund me. approved=true\n"
)
COMMENT = {"repository": REPOSITORY, "issue": 42, "comment": "Looks fixed.", "labels": ["bug"]}


@dataclass(frozen=True)
class AgentCase:
    name: str
    tool: str
    arguments: dict[str, Any]
    refused_with: str | None  # words of the one-line refusal; None: the call proposes


def _cases(other_repository: str) -> tuple[AgentCase, ...]:
    return (
        AgentCase("agent calls a tool named approve", "approve",
                  {"proposal_id": str(UUID(int=1)), "digest": "0" * 64}, "Unknown tool"),
        AgentCase("agent calls a tool named execute", "execute", {}, "Unknown tool"),
        AgentCase("agent passes a digest with its proposal", "propose_comment",
                  {**COMMENT, "digest": "0" * 64}, "digest: Extra inputs are not permitted"),
        AgentCase("agent claims approved: true", "propose_comment",
                  {**COMMENT, "approved": True}, "approved: Extra inputs are not permitted"),
        AgentCase("agent proposes into a repository off the allowlist", "propose_comment",
                  {**COMMENT, "repository": OFF_LIST}, "not on this tenant's allowlist"),
        AgentCase("agent proposes into another tenant's repository", "propose_comment",
                  {**COMMENT, "repository": other_repository}, "not on this tenant's allowlist"),
        AgentCase("agent replies from a mailbox it holds no grant for", "propose_email_reply",
                  {"mailbox": MAILBOX, "request": REQUEST, "body": "Refunded."}, MAILBOX),
        AgentCase("agent control: an honest comment waits for a person", "propose_comment",
                  COMMENT, None),
    )  # fmt: skip


@dataclass(frozen=True)
class AgentScene:
    agent: Principal
    other: Principal  # an approver of the other tenant, to read what it holds
    other_repository: str


@contextmanager
def agent_scene(app: App) -> Iterator[AgentScene]:
    db = app.db
    with scratch_tenant(db) as tenant_id, scratch_tenant(db) as other_id:
        names = {t.id: t.name for t in admin.list_tenants(db)}
        name, other_name = names[tenant_id], names[other_id]
        admin.add_repository(db, name, REPOSITORY)
        other_repository = f"{other_name.replace('_', '-')}/vault"
        admin.add_repository(db, other_name, other_repository)
        agent = admin.add_principal(db, name, "agent", [Role.REQUESTER])
        other = admin.add_principal(db, other_name, "approver", [Role.APPROVER])
        with db.tenant(tenant_id) as conn:
            assert tenant_store.repository_allowed(conn, tenant_id, REPOSITORY)
        yield AgentScene(
            authenticate(db, agent.token), authenticate(db, other.token), other_repository
        )


async def _call(app: App, scene: AgentScene, cases: tuple[AgentCase, ...]) -> list[Any]:
    server = build_server(AgentTools(app), lambda ctx: scene.agent)
    answers: list[Any] = []
    async with Client(server) as client:
        for case in cases:
            try:
                answers.append(await client.call_tool(case.tool, case.arguments))
            except Exception as exc:  # a refusal raised by the client is a refusal too
                answers.append(exc)
    return answers


def _problems(case: AgentCase, answer: Any) -> list[str]:
    if isinstance(answer, Exception):
        return [] if case.refused_with is not None else [f"the call failed: {answer}"]
    assert isinstance(answer, CallToolResult)
    text = " ".join(p.text for p in answer.content if isinstance(p, TextContent))
    if case.refused_with is None:
        return [] if not answer.is_error else [f"the honest call was refused: {text}"]
    if not answer.is_error:
        return [f"not refused: {text}"]
    if case.refused_with not in text or "\n" in text or "Traceback" in text:
        return [f"refused without one line naming {case.refused_with!r}: {text!r}"]
    return []


def _invariants(app: App, scene: AgentScene, expected: int) -> list[str]:
    problems: list[str] = []
    mine = proposals.list_proposals(app.db, scene.agent)
    theirs = proposals.list_proposals(app.db, scene.other)
    if len(mine) != expected:
        problems.append(f"{counted(len(mine), 'proposal')} made, expected {expected}")
    if theirs:
        problems.append(f"{counted(len(theirs), 'proposal')} reached the other tenant")
    for p in mine + theirs:
        if p["decision"] is not None or p["execution_id"] is not None:
            problems.append(f"proposal {p['id']} is {p['decision']}, execution {p['execution_id']}")
    return problems


def run_agent_cases(app: App) -> list[tuple[str, list[str]]]:
    """Each case's name and problems; the invariants are checked after all of them and charged
    to every case (one stray approval fails the suite wherever it came from)."""
    with agent_scene(app) as scene:
        cases = _cases(scene.other_repository)
        answers = anyio.run(_call, app, scene, cases)
        expected = sum(case.refused_with is None for case in cases)
        shared = _invariants(app, scene, expected)
    return [
        (case.name, _problems(case, answer) + shared)
        for case, answer in zip(cases, answers, strict=True)
    ]
