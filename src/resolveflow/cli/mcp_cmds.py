"""``resolveflow mcp``: the MCP server on stdin/stdout for one agent (``mcp_server/``)."""

from __future__ import annotations

from resolveflow.cli import common


def mcp() -> None:
    """Serve the MCP tools on stdio to one agent, as the principal of RESOLVEFLOW_TOKEN: read
    and propose; a person approves in the inbox."""
    from resolveflow.mcp_server.server import build_server
    from resolveflow.mcp_server.stdio import EnvironmentWho, serve_stdio
    from resolveflow.mcp_server.tools import AgentTools

    with common.app() as opened:
        who = EnvironmentWho(opened)
        who.check()  # a missing or unknown token is one line and an exit code, before serving
        limit = opened.settings.mcp.max_message_bytes
        serve_stdio(build_server(AgentTools(opened), who), limit)
