"""A crash at each recovery point converges without a duplicate, in real processes.

Each process is the real CLI (or the worker's maintenance job) on the test's database, killed with
SIGKILL at a chosen moment: the sandbox forge holds the request that marks the moment (a write
applied but never answered, or a read that never answers) until the test has killed the process.
Each test ends with exactly one comment and the labels on the forge and a settled execution.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import (
    World,
    attempt_outcomes,
    execution_state,
    expire_lease,
    make_executor,
    propose_and_approve,
)
from fixtures_github import PR_NUMBER
from resolveflow.bootstrap.app import App
from resolveflow.config import Settings
from resolveflow.domain.records import ExecutionState
from resolveflow.errors import InvalidInput
from resolveflow.gate import decisions
from resolveflow.policy_file import DEFAULT_POLICY
from resolveflow.sandbox.forge.server import Delay, FakeGitHubServer, HangAfterWrite
from resolveflow.store.checkpoints import checkpoint_saver
from resolveflow.store.database import Database
from resolveflow.triage import runs as run_service
from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
from resolveflow.triage.graph.runs import RunController
from resolveflow.worker.jobs import Jobs

REPO = "acme/widgets"
COMMENT = "Thanks for the report! We are looking into it."
LABELS = ["bug", "needs-triage"]
HELD = 600.0  # how long the forge holds a request: until the server stops, in practice
COMMENTS_PATH = r"/issues/1/comments(\?|$)"  # searched in the path and the query string
LABELS_PATH = r"/issues/1(\?|$)"  # the labels go in the issue update (PATCH)


def _env(database_url: str, fake: FakeGitHubServer, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=database_url,
        RESOLVEFLOW_GITHUB_API_URL=fake.url,
        RESOLVEFLOW_GITHUB_TOKEN="service-token",
        # Long enough that a held request is still held when the test kills the process.
        RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="10",
        RESOLVEFLOW_LEASE_SECONDS="60",  # the test expires a dead owner's lease itself
        RESOLVEFLOW_HOME=str(home),
    )
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "resolveflow", *args]


def run_to_end(env: dict[str, str], *args: str) -> Any:
    """A fresh process, run to its end; its one JSON document."""
    done = subprocess.run(
        _cli(*args, "--json"), env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kill_when(env: dict[str, str], args: list[str], reached: Any, what: str) -> None:
    """Start ``args`` and SIGKILL it as soon as ``reached()`` is true."""
    process = subprocess.Popen(
        _cli(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not reached():
            assert process.poll() is None, f"exited before {what}: {process.stderr.read()!r}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, f"never reached {what}"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL


def writes(fake: FakeGitHubServer) -> Counter[str]:
    """Writes GitHub applied, by what they wrote (the labels go in the issue's update, a PATCH
    of the issue itself)."""
    return Counter(
        "labels" if record.method == "PATCH" else record.path.rsplit("/", 1)[-1]
        for record in fake.write_log
        if record.applied
    )


def assert_converged(db: Database, world: World, fake: FakeGitHubServer, execution_id: Any) -> None:
    [comment] = fake.comments(REPO, 1)
    assert comment["body"].startswith(COMMENT)
    assert fake.issue_labels(REPO, 1) == LABELS
    assert writes(fake) == Counter(comments=1, labels=1)  # each write applied once, none resent
    assert execution_state(db, world, execution_id).state is ExecutionState.SENT


def lease_owner(superuser: psycopg.Connection[Any], execution_id: Any) -> str | None:
    row = superuser.execute(
        "SELECT lease_owner FROM executions WHERE id = %s", [execution_id]
    ).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def _crash_after_the_comment(env: dict[str, str], fake: FakeGitHubServer) -> None:
    """An executor whose comment GitHub applied but never answered, killed there: before the
    labels were ever requested."""
    fake.inject(HangAfterWrite(), path=COMMENTS_PATH)
    kill_when(env, ["execute", "--once"], fake.write_accepted.is_set, "the comment's write")
    assert len(fake.comments(REPO, 1)) == 1 and fake.issue_labels(REPO, 1) == []


def test_a_crash_between_the_comment_and_the_labels_converges_with_one_comment(
    db: Database,
    world: World,
    database_url: str,
    fake_github: FakeGitHubServer,
    tmp_path: Path,
    superuser: psycopg.Connection[Any],
) -> None:
    env = _env(database_url, fake_github, tmp_path)
    _, approved = propose_and_approve(db, world, labels=LABELS)
    execution_id = approved.execution.id
    _crash_after_the_comment(env, fake_github)
    assert execution_state(db, world, execution_id).state is ExecutionState.SENDING
    assert attempt_outcomes(db, world, execution_id) == [("comment", None)]

    expire_lease(superuser, execution_id)
    [settled] = run_to_end(env, "reconcile")  # finds the comment by its marker, sends nothing
    assert settled["detail"] == "comment found; labels not yet applied", settled
    assert writes(fake_github) == Counter(comments=1)
    assert run_to_end(env, "execute", "--once") == {"processed": 1}  # the labels, only
    assert_converged(db, world, fake_github, execution_id)
    assert run_to_end(env, "execute", "--once") == {"processed": 0}
    assert run_to_end(env, "reconcile") == []


def test_labels_applied_but_never_answered_converge_through_the_issue_history(
    db: Database,
    world: World,
    database_url: str,
    fake_github: FakeGitHubServer,
    tmp_path: Path,
    superuser: psycopg.Connection[Any],
) -> None:
    env = _env(database_url, fake_github, tmp_path)
    _, approved = propose_and_approve(db, world, labels=LABELS)
    execution_id = approved.execution.id
    fake_github.inject(HangAfterWrite(), method="PATCH", path=LABELS_PATH)
    kill_when(env, ["execute", "--once"], fake_github.write_accepted.is_set, "the labels' write")
    assert attempt_outcomes(db, world, execution_id) == [("comment", "sent"), ("labels", None)]

    expire_lease(superuser, execution_id)
    [settled] = run_to_end(env, "reconcile")  # the issue's events: our account added both
    assert settled["state"] == "sent", settled
    assert_converged(db, world, fake_github, execution_id)
    assert run_to_end(env, "execute", "--once") == {"processed": 0}


def test_a_reconciler_killed_after_taking_over_is_followed_by_one_that_converges(
    db: Database,
    world: World,
    database_url: str,
    fake_github: FakeGitHubServer,
    tmp_path: Path,
    superuser: psycopg.Connection[Any],
) -> None:
    env = _env(database_url, fake_github, tmp_path)
    _, approved = propose_and_approve(db, world, labels=LABELS)
    execution_id = approved.execution.id
    _crash_after_the_comment(env, fake_github)
    expire_lease(superuser, execution_id)
    crashed_executor = lease_owner(superuser, execution_id)

    # The reconciler takes the execution over, then hangs reading the issue's comments.
    fake_github.inject(Delay(HELD), method="GET", path=COMMENTS_PATH)
    kill_when(env, ["reconcile"], lambda: fake_github.pending_faults == 0, "the comments' read")
    dead_reconciler = lease_owner(superuser, execution_id)
    assert dead_reconciler not in (None, crashed_executor), "the reconciler never took over"
    assert execution_state(db, world, execution_id).state is ExecutionState.SENDING

    # While the dead reconciler's lease lasts, nobody else touches the execution.
    assert run_to_end(env, "reconcile") == []
    assert lease_owner(superuser, execution_id) == dead_reconciler

    expire_lease(superuser, execution_id)
    [settled] = run_to_end(env, "reconcile")
    assert settled["detail"] == "comment found; labels not yet applied", settled
    assert run_to_end(env, "execute", "--once") == {"processed": 1}
    assert_converged(db, world, fake_github, execution_id)
    assert run_to_end(env, "reconcile") == []


# --- a lost resume job -----------------------------------------------------------------------

MAINTENANCE = """
import json
from resolveflow.config import Settings
from resolveflow.bootstrap.app import open_app
from resolveflow.worker.jobs import Jobs

with open_app(Settings(), auto_migrate=False) as app:
    print(json.dumps(Jobs(app).maintenance()))
"""


def maintenance(env: dict[str, str]) -> subprocess.Popen[str]:
    """The worker's periodic maintenance job, once, in a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-c", MAINTENANCE],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> dict[str, int]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    result: dict[str, int] = json.loads(out)
    return result


def _paused_run(db: Database, world: World, github: Any) -> tuple[RunController, Any, uuid.UUID]:
    """A triage run on pull request #2, whose CI failed: it waits for approval of a comment
    (the failing checks) and the ``ci-failure`` label."""
    deps = TriageDeps(
        db=db,
        github=github,
        policy=lambda: DEFAULT_POLICY,
        executor=lambda: make_executor(db, github),
    )
    pool = db.autocommit_pool()
    controller = RunController(
        db=db,
        graph=build_triage_graph(deps, checkpoint_saver(pool)),
        lease_seconds=60,
        approval_ttl_seconds=3600,
    )
    run_id = controller.start(world.requester(db), REPO, PR_NUMBER)
    return controller, pool, run_id


def test_a_decided_run_whose_resume_job_was_lost_is_resumed_once_by_maintenance(
    db: Database,
    world: World,
    database_url: str,
    fake_github_ci: FakeGitHubServer,
    github_client: Any,
    tmp_path: Path,
    superuser: psycopg.Connection[Any],
) -> None:
    fake_github = fake_github_ci
    env = _env(database_url, fake_github, tmp_path)
    controller, pool, run_id = _paused_run(db, world, github_client)
    try:
        approver = world.approver(db)
        view = run_service.describe_run(db, approver, run_id)
        assert view["status"] == "awaiting_approval", view
        # Approved as the web app approves: recorded at once, the run left to a worker's job.
        deciding = decisions.Deciding(
            runs=controller,
            follow_up=decisions.FollowUp.QUEUE,
            ttl_seconds=3600,
            lease_seconds=60,
        )
        decided = decisions.approve(db, approver, run_id, view["digest"], deciding)
    finally:
        pool.close()
    assert decided.job_id is not None
    # The job is lost (the process that queued it died with the queue's write, a restore ...).
    superuser.execute("DELETE FROM procrastinate_jobs WHERE id = %s", [decided.job_id])
    # Long enough ago that maintenance calls it stalled (no waiting for the clock).
    superuser.execute(
        "UPDATE approvals SET decided_at = decided_at - interval '1 hour' WHERE id = %s",
        [decided.approval_id],
    )
    expected = run_service.describe_run(db, approver, run_id)["proposal"]["action"]
    assert fake_github.writes_received == 0

    # Two maintenance processes at once: the run is resumed, and its action sent, once.
    both = [finished(process) for process in [maintenance(env), maintenance(env)]]
    assert sum(result["resumed"] for result in both) >= 1, both
    assert finished(maintenance(env))["resumed"] == 0  # nothing is stalled any more

    done = run_service.describe_run(db, approver, run_id)
    assert done["status"] == "completed", done["detail"]
    assert done["proposal"]["execution"]["state"] == "sent"
    assert expected["comment"] and expected["labels"] == ["ci-failure"]
    [comment] = fake_github.comments(REPO, PR_NUMBER)
    assert comment["body"].startswith(expected["comment"])
    assert fake_github.issue_labels(REPO, PR_NUMBER) == ["ci-failure"]
    assert writes(fake_github) == Counter(comments=1, labels=1)


def test_a_resume_before_any_decision_sends_github_no_request_at_all(
    db: Database,
    world: World,
    database_url: str,
    fake_github_ci: FakeGitHubServer,
    github_client: Any,
    tmp_path: Path,
) -> None:
    """`runs resume`, or a resume job replayed or queued by hand, before anyone decided."""
    fake = fake_github_ci
    controller, pool, run_id = _paused_run(db, world, github_client)
    app = App(settings=Settings(), db=db, _github=github_client)
    try:
        approver = world.approver(db)
        heard = fake.requests_received
        with pytest.raises(InvalidInput, match="has not been decided yet"):
            controller.resume(approver, run_id)
        tenant = str(world.tenant.id)
        assert Jobs(app).resume_run(tenant, str(run_id), str(approver.id)) == "nothing to do"
        assert finished(maintenance(_env(database_url, fake, tmp_path)))["resumed"] == 0
        assert fake.requests_received == heard  # not one request, not even a read
        view = run_service.describe_run(db, approver, run_id)
        assert view["status"] == "awaiting_approval"
        controller.approve(approver, run_id, view["digest"])
    finally:
        app.close()
        pool.close()
    assert run_service.describe_run(db, approver, run_id)["status"] == "completed"
    assert len(fake.comments(REPO, PR_NUMBER)) == 1
