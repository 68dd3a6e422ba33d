"""The MCP ``refine`` tool on a GitHub issue whose repository keeps a hostile
``.github/resolveflow.yml``: the tool answers with its packet under the tenant's policy (the file
not applied), through the app's own GitHub client against the sandbox forge."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.mcp_server.tools import AgentTools
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.sources import read_docs_dir

if TYPE_CHECKING:  # imported by pytest as a plugin first, so that its asserts are rewritten
    from fixtures_web import Web

pytest_plugins = ["fixtures_web"]

REPO = "acme/widgets"
PATH = ".github/resolveflow.yml"


def test_the_refine_tool_answers_when_the_repository_file_is_nested_too_deep(
    web: Web, tmp_path: Path
) -> None:
    (tmp_path / "crash.md").write_text("# Widget crashes\n\nRestart the widget service.\n")
    Indexer(web.db, HashingEmbedder()).upsert(web.world.tenant.id, read_docs_dir(tmp_path, "docs"))
    web.fake.put_file(REPO, PATH, "[" * 32_000 + "]" * 32_000)  # RecursionError before
    tools = AgentTools(web.app)
    packet = tools.refine(web.world.requester(web.db), f"{REPO}#1", None)
    assert packet.document["ticket"]["ref"] == f"{REPO}#1"
    assert "Widget crashes on start" in packet.markdown
