"""``resolveflow plan`` and ``resolveflow eval safety`` as real processes.

``plan`` runs with the openai provider against the fake chat server and the sandbox's fake
GitLab: the model searches, prepares an issue and answers; the proposal waits in the inbox and
nothing is written to GitLab. ``eval safety`` includes the compromised-planner cases at 100 %.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.chat_server import FakeChatServer, Reply
from resolveflow.sandbox.gitlab.server import FakeGitLabServer

TOKEN = "glpat-acme-bot"
POLICY = """
[tenants.acme.projects.ops]
forge = "gitlab"
project = "group/ops"
labels = ["ops"]
assignees = { alice = 12 }
"""


@pytest.fixture
def fake() -> Iterator[FakeGitLabServer]:
    with FakeGitLabServer() as server:
        server.state.add_user(7, "acme-bot", TOKEN)
        server.state.add_user(12, "alice")
        server.state.add_project(42, "group/ops", ["ops"], members=[7])
        yield server


def step(tool: str, **arguments: object) -> Reply:
    return Reply(json.dumps({"tool": tool, "arguments": arguments}))


def test_plan_searches_prepares_and_answers_and_writes_nothing(
    cli: Cli, fake: FakeGitLabServer, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "DiskFull.md").write_text(
        "# Disk full\n\n## Mitigation\nRotate the logs in /var/log.\n"
    )
    with FakeChatServer() as chat:
        cli.env.update(
            RESOLVEFLOW_GITLAB_URL=fake.url,
            RESOLVEFLOW_POLICY_FILE=str(policy),
            RESOLVEFLOW_TOKEN_ENCRYPTION_KEY=Fernet.generate_key().decode(),
            RESOLVEFLOW_EMBEDDER="fake",
            RESOLVEFLOW_MODEL_PROVIDER="openai",
            RESOLVEFLOW_OPENAI_BASE_URL=chat.base_url,
            RESOLVEFLOW_MODEL=chat.model,
        )
        rita, alex = _setup(cli)
        stored = subprocess.run(
            [sys.executable, "-m", "resolveflow", "gitlab", "token", "set", "--stdin"],
            env=cli.env, input=TOKEN, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert stored.returncode == 0, stored.stderr
        cli.run("index", "docs", str(docs))
        [hit] = cli.json("search", "disk full logs")[:1]
        chat.queue(
            step("search_knowledge", query="disk full"),
            step("prepare_issue", alias="ops", title="Disk full", body="Rotate logs.",
                 labels=["ops"], assignees=["alice"]),
            step("final_answer", answer="Rotate the logs.", citations=[hit["chunk_id"]],
                 confidence=0.8),
        )  # fmt: skip
        answer = cli.json("plan", "The disk is full; open an issue", token=rita)
    assert not answer["abstained"], answer["stopped"]
    assert [s["tool"] for s in answer["trace"]] == [
        "search_knowledge",
        "prepare_issue",
        "final_answer",
    ]
    [proposal] = answer["proposals"]
    [listed] = cli.json("proposals", "list", token=alex)
    assert listed["id"] == proposal["id"] and listed["decision"] is None
    assert listed["execution_id"] is None and fake.writes_received == 0
    assert answer["citations"][0]["title"] == "Disk full"


def test_plan_needs_a_model_provider(cli: Cli) -> None:
    rita, _ = _setup(cli)
    cli.fails("plan", "anything", token=rita, match="planning needs a model provider")


def test_eval_safety_includes_the_planner_cases_at_100_percent(cli: Cli) -> None:
    report = cli.json("eval", "safety")
    assert report["failures"] == [] and report["passed"] == report["total"]
    # the investigation's cases and the planner's, each counted
    assert report["total"] >= 27 + 14 + 8  # and the compromised MCP agent's 8
