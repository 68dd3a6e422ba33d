"""The CLI decides through the web's one decision path (``gate.decisions``), and deciding on an
email or on a proposal of no run builds no triage graph (issue 27): no LangGraph, no checkpoint
pool, no search, no model. Each decision runs in a fresh interpreter that then reports what it
loaded; a run's proposal still loads the graph and resumes its run (tests/triage/e2e)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.smtp.server import FakeSmtpServer

MAIL = Path(__file__).parents[2] / "data" / "mail"
MAILBOX = "support@acme.example"
REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired\nMessage-ID: <req-kim@customer.example>\n"
    "Date: Tue, 01 Dec 2026 09:00:00 +0000\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)
REPLY = "Hello Kim,\n\nReset links are valid for one hour: ask for a new one.\n\nAcme Support\n"

# What a run's proposal needs and nothing else may load: the graph and its checkpointer, the
# run controller, the search service and the model clients.
RUN_SIDE = (
    "langgraph",
    "resolveflow.triage.graph.runs",
    "resolveflow.triage.graph.build",
    "resolveflow.store.checkpoints",
    "resolveflow.retrieval.search",
    "resolveflow.adapters.llm.openai_chat",
    "resolveflow.adapters.llm.scripted",
)

PROBE = """
import json, os, sys
from resolveflow.cli import main
code = main(sys.argv[1:])
watched = os.environ["PROBE_MODULES"].split(",")
loaded = [name for name in watched if name in sys.modules]
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def decide(cli: Cli, token: str, *args: str) -> tuple[dict[str, Any], list[str]]:
    """The decision's JSON answer, and which of ``RUN_SIDE`` the process loaded."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args, "--json"],
        env={**cli.env, "RESOLVEFLOW_TOKEN": token, "PROBE_MODULES": ",".join(RUN_SIDE)},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, result.stderr
    return json.loads(result.stdout), list(report["loaded"])


def _propose(cli: Cli, token: str, comment: str) -> dict[str, Any]:
    return cli.json(  # type: ignore[no-any-return]
        "proposals", "create", "--repo", "acme/widgets", "--issue", "1", "--comment", comment,
        "--label", "bug", token=token,
    )  # fmt: skip


def test_deciding_on_a_proposal_of_no_run_builds_no_graph(cli: Cli) -> None:
    rita, alex = _setup(cli)
    kept = _propose(cli, rita, "Could you share the crash log?")
    approved, loaded = decide(cli, alex, "approve", kept["id"], "--digest", kept["digest"])
    assert loaded == []
    assert (approved["proposal_id"], approved["run_id"]) == (kept["id"], None)
    assert approved["execution_state"] == "pending"

    dropped = _propose(cli, rita, "Never mind.")
    rejected, loaded = decide(cli, alex, "reject", dropped["id"], "--reason", "not needed")
    assert loaded == []
    assert (rejected["proposal_id"], rejected["decision"]) == (dropped["id"], "rejected")


@pytest.fixture
def smtp() -> Iterator[FakeSmtpServer]:
    with FakeSmtpServer() as server:
        yield server


def _email_proposal(cli: Cli, smtp: FakeSmtpServer, home: Path, rita: str) -> dict[str, Any]:
    policy = home / "policy.toml"
    policy.write_text(
        f'[tenants.acme.mailboxes."{MAILBOX}"]\nsmtp_host = "127.0.0.1"\n'
        f'smtp_port = {smtp.port}\nsecurity = "plain"\n'
        'signature = "Best regards,\\nAcme Support"\n'
    )
    cli.env.update(RESOLVEFLOW_POLICY_FILE=str(policy), RESOLVEFLOW_EMBEDDER="fake")
    cli.json("mail", "import", "--mailbox", MAILBOX, str(MAIL / "support-eml"))
    for subject in ("rita", "alex"):
        cli.run("principals", "grant", "--subject", subject, "--mailbox", MAILBOX)
    request, reply = home / "request.eml", home / "reply.txt"
    request.write_text(REQUEST)
    cli.json("mail", "import", "--mailbox", MAILBOX, str(request))  # the request was received
    reply.write_text(REPLY)
    draft = cli.json("mail", "draft", "--mailbox", MAILBOX, "--reply-to", str(request), token=rita)
    edited = cli.json("mail", "edit", draft["id"], "--version", "1", "--body-file", str(reply),
                      token=rita)["latest"]  # fmt: skip
    assert edited["findings"] == [], edited["findings"]
    return edited["proposal"]  # type: ignore[no-any-return]


def test_approving_an_email_builds_no_graph(cli: Cli, smtp: FakeSmtpServer, tmp_path: Path) -> None:
    rita, alex = _setup(cli)
    email = _email_proposal(cli, smtp, tmp_path, rita)
    approved, loaded = decide(cli, alex, "approve", email["id"], "--digest", email["digest"])
    assert loaded == []
    assert (approved["proposal_id"], approved["execution_state"]) == (email["id"], "pending")
    assert cli.json("execute", "--once") == {"processed": 1}
    assert len(smtp.messages) == 1
