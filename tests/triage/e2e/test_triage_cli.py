"""Triage through the CLI in real processes: a pause that survives SIGKILL and a Postgres restart,
and two processes resuming the same run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import HF_SYNTHETIC
from resolveflow.sandbox.forge.server import FakeGitHubServer

REPO = "huggingface/datasets"


def _record(number: str) -> dict[str, Any]:
    """An invented issue shaped like huggingface/datasets' (tests/data/hf-datasets-synthetic)."""
    return HF_SYNTHETIC.records("issues")[number]


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def args(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "resolveflow", *args]

    def json(self, *args: str, token: str | None = None) -> Any:
        env = {**self.env, **({"RESOLVEFLOW_TOKEN": token} if token else {})}
        result = subprocess.run(
            self.args(*args, "--json"),
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


@pytest.fixture
def embedded_cli(tmp_path: Path, fake_github: FakeGitHubServer):  # type: ignore[no-untyped-def]
    """The CLI on its own embedded Postgres (no database URL), stopped at the end."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_HOME=str(home),
        RESOLVEFLOW_GITHUB_API_URL=fake_github.url,
        RESOLVEFLOW_GITHUB_TOKEN="service-token",
        COLUMNS="200",
    )
    fake_github.add_repo(REPO, ["bug", "needs-triage", "ci-failure"])
    cli = Cli(env)
    cli.json("tenants", "add", "hf")
    tokens = {
        role: cli.json("principals", "add", "--subject", name, "--role", role)["token"]
        for name, role in (("rita", "requester"), ("alex", "approver"))
    }
    cli.json("repos", "add", REPO)
    yield cli, tokens, home
    _stop_embedded(home)


def _stop_embedded(home: Path) -> None:
    """A fast shutdown of the embedded postmaster (SIGINT), waiting until it is gone."""
    pid_file = home / "pgdata" / "postmaster.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError("the embedded Postgres did not stop")


def test_pause_survives_sigkill_and_a_postgres_restart(embedded_cli, fake_github) -> None:  # type: ignore[no-untyped-def]
    cli, tokens, home = embedded_cli
    record = _record("5270")
    fake_github.add_issue(REPO, 5270, record["title"], record["body"])
    env = {**cli.env, "RESOLVEFLOW_TOKEN": tokens["requester"]}
    waiter = subprocess.Popen(
        cli.args("triage", f"{REPO}#5270", "--wait"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = waiter.stderr.readline() if waiter.stderr else ""
        assert "waiting for a decision" in line, line
        run_id = line.split()[1]
        waiter.send_signal(signal.SIGKILL)
        waiter.wait(timeout=10)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode == -signal.SIGKILL

    _stop_embedded(home)  # the database goes down too
    assert not (home / "pgdata" / "postmaster.pid").exists()

    view = cli.json("runs", "show", run_id, token=tokens["approver"])  # starts Postgres again
    assert view["status"] == "awaiting_approval"
    assert fake_github.writes_received == 0
    approved = cli.json("approve", run_id, "--digest", view["digest"], token=tokens["approver"])
    assert approved["execution_state"] == "sent"
    assert cli.json("runs", "show", run_id, token=tokens["approver"])["status"] == "completed"
    assert fake_github.writes_received == 1
    assert fake_github.issue_labels(REPO, 5270) == ["needs-triage"]


def test_two_processes_resuming_the_same_run_post_once(embedded_cli, fake_github) -> None:  # type: ignore[no-untyped-def]
    cli, tokens, _ = embedded_cli
    record = _record("5394")
    sha = "ef" * 20
    job = fake_github.add_check_run(REPO, sha, "tests", conclusion="failure")
    run = fake_github.add_workflow_run(REPO, "CI", head_sha=sha, conclusion="failure")
    body = record["body"].replace("3793736481", str(run)).replace("6466356565", str(job))
    fake_github.add_issue(REPO, 5394, record["title"], body)
    started = cli.json("triage", f"{REPO}#5394", token=tokens["requester"])
    assert (started["classification"], started["status"]) == ("deterministic", "awaiting_approval")
    # Record the approval without resuming (as a crashed `approve` would leave it) ...
    proposal = started["proposal_id"]
    env = {**cli.env, "RESOLVEFLOW_TOKEN": tokens["approver"]}
    script = (
        "import sys, uuid\n"
        "from resolveflow.cli import common\n"
        "from resolveflow.gate import approvals\n"
        "with common.app() as app:\n"
        "    p = common.principal(app, None)\n"
        "    approvals.approve(app.db, p, uuid.UUID(sys.argv[1]), sys.argv[2], 3600)\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, proposal, started["digest"]],
        env=env,
        check=True,
        timeout=120,
    )
    # ... then two processes resume the run at the same moment.
    resumers = [
        subprocess.Popen(
            cli.args("runs", "resume", started["run_id"], "--json"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=180) for proc in resumers]
    codes = sorted(proc.returncode for proc in resumers)
    for proc, (_, err) in zip(resumers, outputs, strict=True):
        if proc.returncode != 0:
            assert "already being resumed" in err or "has finished" in err, err
            assert "Traceback" not in err
    assert codes[0] == 0
    assert len(fake_github.comments(REPO, 5394)) == 1
    assert fake_github.writes_applied == 2  # the comment and the ci-failure label, once each
    final = cli.json("runs", "show", started["run_id"], token=tokens["approver"])
    assert final["status"] == "completed"
