"""A worker killed with SIGKILL between GitHub accepting the write and `sent` being committed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from conftest import World, execution_state, expire_lease, propose_and_approve
from resolveflow.domain.records import ExecutionState
from resolveflow.sandbox.forge.server import FakeGitHubServer, HangAfterWrite
from resolveflow.store.database import Database


def _cli_env(database_url: str, fake: FakeGitHubServer, home) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=database_url,
        RESOLVEFLOW_GITHUB_API_URL=fake.url,
        RESOLVEFLOW_GITHUB_TOKEN="service-token",
        RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="0.5",
        RESOLVEFLOW_LEASE_SECONDS="60",  # the test expires the dead worker's lease itself
        RESOLVEFLOW_HOME=str(home),
    )
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "resolveflow", *args]


def test_sigkill_after_the_write_ends_sent_through_reconciliation_with_one_write(
    db: Database,
    world: World,
    database_url: str,
    fake_github: FakeGitHubServer,
    tmp_path,
    superuser,
) -> None:
    _, approved = propose_and_approve(db, world)
    fake_github.inject(HangAfterWrite())
    env = _cli_env(database_url, fake_github, tmp_path)
    worker = subprocess.Popen(
        _cli("execute", "--once"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert fake_github.write_accepted.wait(timeout=60), "the worker never reached GitHub"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == -signal.SIGKILL
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENDING

    expire_lease(superuser, approved.execution.id)  # the dead worker's lease runs out
    restarted = subprocess.run(
        _cli("reconcile", "--json"), env=env, capture_output=True, text=True, timeout=120
    )
    assert restarted.returncode == 0, restarted.stderr
    assert '"state": "sent"' in restarted.stdout
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.SENT
    assert fake_github.writes_received == 1
    assert len(fake_github.comments("acme/widgets", 1)) == 1
    # A fresh executor afterwards has nothing left to do.
    again = subprocess.run(
        _cli("execute", "--once", "--json"), env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert fake_github.writes_received == 1
