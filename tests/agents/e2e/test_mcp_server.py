"""The MCP server with the SDK's own client (issue 32 part 3): an agent proposes a comment, an
email reply and a GitLab issue over stdio (``python -m resolveflow mcp`` in a child process); a
person approves the first two and the executor sends each once; the agent fails to approve,
execute, reach another tenant, a repository off the allowlist or a mailbox it holds no grant for.
Then the same server over streamable HTTP under the web app: with a bearer token it proposes,
without one it is refused, and a body past the cap is 413.

One world for the module (one database, the sandbox forge, GitLab and SMTP server); one stdio
child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import anyio
import httpx
import httpx2
import pytest
from cryptography.fernet import Fernet
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from fixtures_cli import Cli, InProcessCli
from resolveflow.bootstrap.app import open_app
from resolveflow.config import load_settings
from resolveflow.mcp_server.server import TOOL_NAMES
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.sandbox.gitlab.server import FakeGitLabServer
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.web.server import ServerThread

MAIL = Path(__file__).parents[2] / "data" / "mail"
REPO = "acme/widgets"
OFF_LIST = "acme/secret"  # on the forge, not on the tenant's allowlist
OTHER_REPO = "globex/vault"  # the other tenant's repository
MAILBOX = "support@acme.example"
UNGRANTED = "billing@acme.example"  # configured; the agent holds no grant for it
REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired\nMessage-ID: <req-kim@customer.example>\n"
    "Date: Tue, 01 Dec 2026 09:00:00 +0000\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)
REPLY = "Hello Kim,\n\nReset links are valid for one hour: ask for a new one.\n\nAcme Support\n"
# The agent writes the "received" request itself: from an address the mailbox never received
# from, under a new Message-ID or under Kim's real one.
EVE_FROM = REQUEST.replace("Kim Park <kim@customer.example>", "Eve <eve@evil.example>")
FORGED = {
    "eve": EVE_FROM.replace("<req-kim@customer.example>", "<req-eve@evil.example>"),
    "eve_real_id": EVE_FROM,
}
EVE = "Hello Eve,\n\nReset links are valid for one hour: ask for a new one.\n\nAcme Support\n"
COMMENT = "Could you share the crash log?"
GITLAB_TOKEN = "glpat-acme-bot"


def policy_text(smtp_port: int) -> str:
    boxes = ""
    for box in (MAILBOX, UNGRANTED):
        boxes += (
            f'[tenants.acme.mailboxes."{box}"]\nsmtp_host = "127.0.0.1"\n'
            f'smtp_port = {smtp_port}\nsecurity = "plain"\n'
            'signature = "Best regards,\\nAcme Support"\n\n'
        )
    return boxes + (
        '[tenants.acme.projects.ops]\nforge = "gitlab"\nproject = "group/ops"\n'
        'labels = ["ops"]\nassignees = { alice = 12 }\n'
    )


@dataclass
class World:
    cli: Cli
    env: dict[str, str]
    tokens: dict[str, str]
    github: FakeGitHubServer
    smtp: FakeSmtpServer
    made: dict[str, Any] = field(default_factory=dict)  # what the stdio agent got back


@pytest.fixture(scope="module")
def world(module_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("mcp")
    github = FakeGitHubServer(default_login="resolveflow-bot")
    for repo in (REPO, OFF_LIST, OTHER_REPO):
        github.add_repo(repo, ["bug", "question"], pushers=["alice"])
        github.add_issue(repo, 1, "Widget crashes on start", "It crashes.", user="octocat")
    github.register_token("service-token", "resolveflow-bot")
    with github, FakeSmtpServer() as smtp, FakeGitLabServer() as gitlab:
        gitlab.state.add_user(7, "acme-bot", GITLAB_TOKEN)
        gitlab.state.add_user(12, "alice")
        gitlab.state.add_project(42, "group/ops", ["ops"], members=[7])
        policy = home / "policy.toml"
        policy.write_text(policy_text(smtp.port))
        env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
        env.update(
            RESOLVEFLOW_DATABASE_URL=module_database,
            RESOLVEFLOW_GITHUB_API_URL=github.url,
            RESOLVEFLOW_GITHUB_TOKEN="service-token",
            RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="2",
            RESOLVEFLOW_GITLAB_URL=gitlab.url,
            RESOLVEFLOW_GITLAB_TIMEOUT_SECONDS="2",
            RESOLVEFLOW_POLICY_FILE=str(policy),
            RESOLVEFLOW_TOKEN_ENCRYPTION_KEY=Fernet.generate_key().decode(),
            RESOLVEFLOW_EMBEDDER="fake",
            RESOLVEFLOW_HOME=str(home / "home"),
            RESOLVEFLOW_WEB_PUBLIC_URL="https://rf.acme.example",
        )
        cli = Cli(env)
        tokens = {}
        for tenant, subject, role in (
            ("acme", "agent", "requester"),
            ("acme", "alex", "approver"),
            ("globex", "gina", "approver"),
        ):
            if subject in ("agent", "gina"):
                cli.json("tenants", "add", tenant)
            made = cli.json("principals", "add", "--tenant", tenant, "--subject", subject,
                            "--role", role)  # fmt: skip
            tokens[subject] = made["token"]
        cli.json("repos", "add", "--tenant", "acme", REPO)
        stored = subprocess.run(
            [sys.executable, "-m", "resolveflow", "gitlab", "token", "set", "--tenant", "acme",
             "--stdin"],
            env=env, input=GITLAB_TOKEN + "\n", capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert stored.returncode == 0, stored.stderr
        cli.json("repos", "add", "--tenant", "globex", OTHER_REPO)
        docs = home / "docs"
        docs.mkdir()
        (docs / "password-reset.md").write_text(
            "# Password reset\n\nReset links are valid for one hour; ask for a new one.\n"
        )
        cli.json("index", "docs", "--tenant", "acme", str(docs))
        cli.json("mail", "import", "--tenant", "acme", "--mailbox", MAILBOX,
                 str(MAIL / "support-eml"))  # fmt: skip
        incoming = home / "incoming"  # Kim's request reached the mailbox, and was imported
        incoming.mkdir()
        (incoming / "kim.eml").write_text(REQUEST)
        cli.json("mail", "import", "--tenant", "acme", "--mailbox", MAILBOX, str(incoming))
        for subject in ("agent", "alex"):
            cli.run("principals", "grant", "--tenant", "acme", "--subject", subject,
                    "--mailbox", MAILBOX)  # fmt: skip
        yield World(InProcessCli(env), env, tokens, github, smtp)


def text_of(result: CallToolResult) -> str:
    return " ".join(part.text for part in result.content if isinstance(part, TextContent))


def refused(result: CallToolResult, *words: str) -> str:
    """A tool error of one line naming ``words`` (never a traceback)."""
    assert result.is_error, result
    text = text_of(result)
    assert "\n" not in text.strip() and "Traceback" not in text, text
    for word in words:
        assert word in text, (word, text)
    return text


async def _stdio_agent(world: World) -> None:
    env = {**world.env, "RESOLVEFLOW_TOKEN": world.tokens["agent"]}
    params = StdioServerParameters(command=sys.executable, args=["-m", "resolveflow", "mcp"],
                                   env=env)  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        world.made["initialized"] = await session.initialize()
        listed = await session.list_tools()
        world.made["tools"] = {tool.name: tool for tool in listed.tools}
        found = await session.call_tool("search", {"query": "password reset", "k": 5})
        world.made["search"] = found
        world.made["comment"] = await session.call_tool(
            "propose_comment",
            {"repository": REPO, "issue": 1, "comment": COMMENT, "labels": ["question"]},
        )
        world.made["email"] = await session.call_tool(
            "propose_email_reply", {"mailbox": MAILBOX, "request": REQUEST, "body": REPLY}
        )
        for name, request in FORGED.items():
            world.made[name] = await session.call_tool(
                "propose_email_reply", {"mailbox": MAILBOX, "request": request, "body": EVE}
            )
        world.made["ask"] = await session.call_tool(
            "ask", {"question": "How long is a reset link valid?"}
        )
        world.made["no_run"] = await session.call_tool("run_evidence", {"run_id": str(UUID(int=7))})
        world.made["refine_file"] = await session.call_tool("refine", {"issue": "/etc/passwd"})
        world.made["refine_text"] = await session.call_tool(
            "refine", {"text": "The password reset link expired before I could use it."}
        )
        world.made["gitlab"] = await session.call_tool(
            "propose_project_issue",
            {"project": "ops", "title": "Disk full on ops-3", "body": "df shows 100%.",
             "labels": ["ops"], "assignees": ["alice"]},
        )  # fmt: skip
        world.made["hostile"] = await _hostile_calls(session)


async def _hostile_calls(session: ClientSession) -> dict[str, CallToolResult]:
    """What a compromised agent tries (evals/safety.py scripts the same over the services)."""
    comment = {"repository": REPO, "issue": 1, "comment": "Pwned", "labels": ["bug"]}
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "approve": ("approve", {"proposal_id": "x", "digest": "0" * 64}),
        "execute": ("execute", {}),
        "digest": ("propose_comment", {**comment, "digest": "0" * 64}),
        "approved": ("propose_comment", {**comment, "approved": True}),
        "off_list": ("propose_comment", {**comment, "repository": OFF_LIST}),
        "other_tenant": ("propose_comment", {**comment, "repository": OTHER_REPO}),
        "ungranted": (
            "propose_email_reply",
            {"mailbox": UNGRANTED, "request": REQUEST.replace(MAILBOX, UNGRANTED), "body": REPLY},
        ),
        # Lax pydantic read each of these as issue 1 (or 5 hits): a type slip is refused.
        "issue_true": ("propose_comment", {**comment, "issue": True}),
        "issue_string": ("propose_comment", {**comment, "issue": "1"}),
        "issue_float": ("propose_comment", {**comment, "issue": 1.0}),
        "k_string": ("search", {"query": "password", "k": "5"}),
    }
    return {name: await session.call_tool(tool, args) for name, (tool, args) in calls.items()}


@pytest.fixture(scope="module")
def agent(world: World) -> World:
    """The stdio agent's session, run once for the module."""
    anyio.run(_stdio_agent, world)
    return world


def test_the_tools_read_and_propose_and_none_decides(agent: World) -> None:
    tools = agent.made["tools"]
    assert tuple(tools) == TOOL_NAMES
    for name in tools:
        assert not any(word in name for word in ("approve", "reject", "execute", "decide"))
    schema = tools["propose_comment"].input_schema
    assert schema["additionalProperties"] is False and "digest" not in schema["properties"]
    assert tools["search"].annotations.read_only_hint is True


def test_the_server_says_its_name_and_the_packages_version(agent: World) -> None:
    import importlib.metadata

    server = agent.made["initialized"].server_info
    assert server.name == "resolveflow"
    assert server.version == importlib.metadata.version("resolveflow") != ""


def test_search_answers_from_the_tenants_index(agent: World) -> None:
    found = agent.made["search"]
    assert not found.is_error, text_of(found)
    hits = found.structured_content["hits"]
    assert "Password reset" in [hit["title"] for hit in hits]
    assert all(set(hit) >= {"title", "snippet", "relevance"} for hit in hits)


def test_ask_cites_and_the_other_reads_refuse_in_one_line(agent: World) -> None:
    answer = agent.made["ask"]
    assert not answer.is_error, text_of(answer)
    found = answer.structured_content  # the fake embedder: cited, or related when unsure
    assert found["outcome"] in ("answered", "tentative", "abstained")
    shown = [d["title"] for key in ("citations", "related", "retrieved") for d in found[key]]
    assert "Password reset" in shown, found
    refused(agent.made["no_run"], "no run 00000000-0000-0000-0000-000000000007")
    refused(agent.made["refine_file"], "not a GitHub issue", "/etc/passwd")
    packet = agent.made["refine_text"]
    assert not packet.is_error, text_of(packet)
    assert packet.structured_content["markdown"].strip()
    assert packet.structured_content["document"]["ticket"]["source"] == "text"


def test_proposals_return_their_digest_and_inbox_link(agent: World) -> None:
    comment = agent.made["comment"]
    assert not comment.is_error, text_of(comment)
    made = comment.structured_content
    assert made["kind"] == "github.issue" and len(made["digest"]) == 64
    assert made["inbox_link"] == f"https://rf.acme.example/proposals/{made['proposal_id']}"
    shown = agent.cli.json("proposals", "show", made["proposal_id"], token=agent.tokens["alex"])
    assert shown["digest"] == made["digest"] and shown["decision"] is None
    email = agent.made["email"]
    assert not email.is_error, text_of(email)
    reply = email.structured_content
    assert reply["findings"] == [] and reply["proposal"]["kind"] == "email.send"
    gitlab = agent.made["gitlab"]
    assert not gitlab.is_error, text_of(gitlab)
    issue = agent.cli.json("proposals", "show", gitlab.structured_content["proposal_id"],
                           token=agent.tokens["alex"])  # fmt: skip
    assert issue["kind"] == "gitlab.issue_create"
    assert issue["action"]["target"] == {"project_id": 42, "project": "group/ops"}
    assert issue["action"]["assignees"] == [{"name": "alice", "id": 12}]


@pytest.mark.parametrize("attempt", sorted(FORGED))
def test_an_email_to_an_address_the_mailbox_never_received_from_is_no_proposal(
    agent: World, attempt: str
) -> None:
    """Before: an email.send proposal to eve, with no finding. Now the recipient is new (the
    mailbox received nothing from eve), not in an allowed domain: a finding, and no proposal."""
    made = agent.made[attempt]
    assert not made.is_error, text_of(made)
    reply = made.structured_content
    assert reply["proposal"] is None, reply
    assert any(
        f.startswith("recipients: To eve@evil.example is new: the mailbox never received")
        for f in reply["findings"]
    ), reply["findings"]
    shown = agent.cli.json("mail", "show", reply["draft_id"], token=agent.tokens["alex"])
    assert shown["request"]["received"] is False
    assert shown["latest"]["new_recipients"] == ["eve@evil.example"]


@pytest.mark.parametrize(
    ("attempt", "words"),
    [
        ("approve", ["Unknown tool", "approve"]),
        ("execute", ["Unknown tool", "execute"]),
        ("digest", ["invalid arguments", "digest: Extra inputs are not permitted"]),
        ("approved", ["invalid arguments", "approved: Extra inputs are not permitted"]),
        ("off_list", [OFF_LIST, "allowlist"]),
        ("other_tenant", [OTHER_REPO, "allowlist"]),
        ("ungranted", ["no grant", UNGRANTED]),
        ("issue_true", ["invalid arguments", "issue: Input should be a valid integer"]),
        ("issue_string", ["invalid arguments", "issue: Input should be a valid integer"]),
        ("issue_float", ["invalid arguments", "issue: Input should be a valid integer"]),
        ("k_string", ["invalid arguments", "k: Input should be a valid integer"]),
    ],
)
def test_a_compromised_agents_attempts_fail(agent: World, attempt: str, words: list[str]) -> None:
    refused(agent.made["hostile"][attempt], *words)


def test_a_person_approves_and_each_is_sent_once(agent: World) -> None:
    """Nothing was decided or sent by the agent; the approver's decision sends each once."""
    assert agent.github.comments(REPO, 1) == [] and agent.smtp.messages == []
    listed = agent.cli.json("proposals", "list", token=agent.tokens["alex"])
    # The hostile calls made none; the reply's draft and its edit are two versions of one.
    assert {row["kind"] for row in listed} == {"github.issue", "email.send", "gitlab.issue_create"}
    assert all(row["decision"] is None and row["execution_id"] is None for row in listed)
    for made in (
        agent.made["comment"].structured_content,
        agent.made["email"].structured_content["proposal"],
    ):
        agent.cli.json("approve", made["proposal_id"], "--digest", made["digest"],
                       token=agent.tokens["alex"])  # fmt: skip
    assert agent.cli.json("execute", "--once") == {"processed": 2}
    assert agent.cli.json("execute", "--once") == {"processed": 0}
    [posted] = agent.github.comments(REPO, 1)
    assert COMMENT in posted["body"]
    [sent] = agent.smtp.messages
    assert sent.rcpt_tos == ("kim@customer.example",) and b"valid for one hour" in sent.raw


@contextmanager
def serving(env: dict[str, str]) -> Iterator[str]:
    """``serve``'s web app with the settings of ``env`` on a free port of loopback."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        settings = load_settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    with open_app(settings) as opened, ServerThread(opened) as server:
        yield server.url


@pytest.fixture(scope="module")
def web(agent: World) -> Iterator[str]:
    with serving(agent.env) as url:
        yield url


async def _http_agent(url: str, token: str) -> CallToolResult:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(
            "propose_comment", {"repository": REPO, "issue": 1, "labels": ["bug"]}
        )


def test_over_http_a_bearer_token_proposes(agent: World, web: str) -> None:
    made = anyio.run(_http_agent, web, agent.tokens["agent"])
    assert not made.is_error, text_of(made)
    shown = agent.cli.json("proposals", "show", made.structured_content["proposal_id"],
                           token=agent.tokens["alex"])  # fmt: skip
    assert shown["decision"] is None and shown["action"]["labels"] == ["bug"]


def test_over_http_a_body_past_the_cap_is_refused(agent: World, web: str) -> None:
    headers = {
        "Authorization": f"Bearer {agent.tokens['agent']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    padding = "x" * (4 * 1024 * 1024 + 1)  # RESOLVEFLOW_WEB_MAX_BODY_BYTES' default, plus one
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": padding}}
    answer = httpx.post(f"{web}/mcp", json=body, headers=headers, timeout=30)
    assert answer.status_code == 413, answer.text
    assert "RESOLVEFLOW_WEB_MAX_BODY_BYTES" in answer.text


@pytest.mark.parametrize("authorization", [None, "Bearer rf_not-a-token", "Basic abc"])
def test_over_http_without_a_token_it_is_refused(web: str, authorization: str | None) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    answer = httpx.post(f"{web}/mcp", json=body, headers=headers, timeout=30)
    assert answer.status_code == 401, answer.text
    assert "token" in answer.json()["detail"]


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _rpc(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": params}).encode() + b"\n"  # fmt: skip


def test_over_stdio_a_line_past_the_limit_is_refused_without_being_held(world: World) -> None:
    """A 40 MB line to a 1 MiB limit: answered with a JSON-RPC error naming the limit, the child's
    peak memory barely moves (before: the whole line and its parse, several times its size), and
    the next request is answered."""
    env = {**world.env, "RESOLVEFLOW_TOKEN": world.tokens["agent"],
           "RESOLVEFLOW_MCP_MAX_MESSAGE_BYTES": str(1024 * 1024)}  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "resolveflow", "mcp"],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
        child.stdin.write(_rpc(1, "initialize", init))
        child.stdin.flush()
        assert json.loads(child.stdout.readline())["id"] == 1
        child.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        child.stdin.write(_rpc(2, "tools/list", {}))
        child.stdin.flush()
        assert json.loads(child.stdout.readline())["id"] == 2
        before = _status_mb(child.pid, "VmHWM:")
        huge = {"name": "search", "arguments": {"query": "x" * (40 * 1024 * 1024)}}
        child.stdin.write(_rpc(3, "tools/call", huge))
        child.stdin.write(_rpc(4, "tools/list", {}))
        child.stdin.flush()
        refused = json.loads(child.stdout.readline())
        answered = json.loads(child.stdout.readline())
        peak = _status_mb(child.pid, "VmHWM:")
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    assert peak - before < 40, (before, peak)  # MB; the line alone is 40
    assert refused["id"] == 3 and "error" in refused, refused
    assert "RESOLVEFLOW_MCP_MAX_MESSAGE_BYTES" in refused["error"]["message"], refused
    assert answered["id"] == 4 and "tools" in answered["result"], answered
    assert child.returncode == 0


STREAM = {"Accept": "text/event-stream"}


def _open_stream(stack: ExitStack, url: str, token: str) -> httpx.Response:
    """A ``GET /mcp`` event stream, held open until ``stack`` closes it."""
    client = stack.enter_context(httpx.Client(timeout=30))
    headers = {**STREAM, "Authorization": f"Bearer {token}"}
    return stack.enter_context(client.stream("GET", f"{url}/mcp", headers=headers))


def test_over_http_a_principal_holds_at_most_its_cap_of_streams(world: World) -> None:
    """Cap 2: the agent's third stream is 429 in one line while two are open; another principal
    still gets its own; each stream closed frees its place, round after round."""
    env = {**world.env, "RESOLVEFLOW_MCP_MAX_STREAMS_PER_PRINCIPAL": "2"}
    agent, alex = world.tokens["agent"], world.tokens["alex"]
    with serving(env) as url:
        for _ in range(5):
            with ExitStack() as held:
                assert [_open_stream(held, url, agent).status_code for _ in range(2)] == [200, 200]
                with ExitStack() as extra:
                    third = _open_stream(extra, url, agent)
                    assert third.status_code == 429, third.status_code
                    detail = json.loads(third.read())["detail"]
                    assert "RESOLVEFLOW_MCP_MAX_STREAMS_PER_PRINCIPAL" in detail, detail
                    assert "\n" not in detail
                    assert _open_stream(extra, url, alex).status_code == 200
            # Both closed by the client: the server lets them go, and the next round opens two.
            _wait_for(lambda: _admitted(url, agent), "the closed streams' places were freed")
        posted = httpx.post(f"{url}/mcp", headers={"Authorization": f"Bearer {agent}",
                            "Content-Type": "application/json",
                            "Accept": "application/json, text/event-stream"},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            timeout=30)  # fmt: skip
        assert posted.status_code == 200, posted.text  # calls are not streams: never capped


def _admitted(url: str, token: str) -> bool:
    with ExitStack() as held:
        return all(_open_stream(held, url, token).status_code == 200 for _ in range(2))


def _wait_for(condition: Callable[[], bool], what: str, ceiling: float = 30.0) -> None:
    deadline = time.monotonic() + ceiling
    while not condition():
        assert time.monotonic() < deadline, f"not within {ceiling} s: {what}"
        time.sleep(0.1)


def test_over_http_an_idle_stream_is_closed_by_the_server(world: World) -> None:
    """Idle 1 s, cap 1: the server ends the stream by itself (before: open until the client left),
    and its place is free again."""
    env = {**world.env, "RESOLVEFLOW_MCP_MAX_STREAMS_PER_PRINCIPAL": "1",
           "RESOLVEFLOW_MCP_STREAM_IDLE_SECONDS": "1"}  # fmt: skip
    agent = world.tokens["agent"]
    with serving(env) as url:
        for _ in range(2):
            with ExitStack() as held:
                stream = _open_stream(held, url, agent)
                assert stream.status_code == 200
                started, ended = time.monotonic(), False
                for _chunk in stream.iter_bytes():  # pings every 15 s kept it open before
                    if time.monotonic() - started > 25:
                        break
                else:
                    ended = True
                assert ended, "the server kept an idle stream open"
