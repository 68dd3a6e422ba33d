"""What the load and chaos run found (issue 17, benchmarks/load.py): a process killed in the
middle of a job or a run, or a connection cut under it, must not leave work behind. A job left
``doing`` by a dead worker goes back to the queue; a run left ``running`` is driven on by
maintenance; a run whose pause was never checkpointed is brought to it when someone approves."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
import pytest

from conftest import World, make_executor
from fixtures_github import PR_NUMBER
from resolveflow.bootstrap.app import App
from resolveflow.config import Settings, TriageSettings
from resolveflow.errors import StoreUnavailable
from resolveflow.policy_file import DEFAULT_POLICY
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store import queue
from resolveflow.store.checkpoints import checkpoint_saver
from resolveflow.store.database import Database
from resolveflow.triage import runs as run_service
from resolveflow.triage import webhooks
from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
from resolveflow.triage.graph.runs import RunController
from resolveflow.worker.jobs import Jobs

REPO = "acme/widgets"


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the product catches it, nothing runs after it."""


class DiesOnFirstRead:
    """The GitHub client of a process that is killed at its first request."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        def killed(*args: Any, **kwargs: Any) -> Any:
            raise Killed(name)

        return killed


def controller(db: Database, github: Any, pool: Any, executor: Any = None) -> RunController:
    """The triage workflow on this database; ``executor`` (a factory) replaces the real gate."""
    deps = TriageDeps(
        db=db,
        github=github,
        policy=lambda: DEFAULT_POLICY,
        executor=executor or (lambda: make_executor(db, github)),
    )
    return RunController(
        db=db,
        graph=build_triage_graph(deps, checkpoint_saver(pool)),
        lease_seconds=60,
        approval_ttl_seconds=3600,
    )


def test_a_job_a_dead_worker_left_doing_goes_back_to_the_queue(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    with db.tenant(world.tenant.id) as conn:
        dead = queue.defer(conn, queue.EXECUTE, tenant_id="t", execution_id="dead")
        alive = queue.defer(conn, queue.EXECUTE, tenant_id="t", execution_id="alive")
    workers = superuser.execute(
        "INSERT INTO procrastinate_workers (last_heartbeat) VALUES "
        "(now() - interval '5 minutes'), (now()) RETURNING id"
    ).fetchall()
    for job, (worker,) in zip((dead, alive), workers, strict=True):
        superuser.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE id = %s",
            [worker, job],
        )
    with db.unscoped() as conn:
        assert queue.requeue_stalled_jobs(conn, 60) == 1
    status = dict(superuser.execute("SELECT id, status FROM procrastinate_jobs").fetchall())
    assert status == {dead: "todo", alive: "doing"}


@pytest.mark.parametrize("checkpointed", [True, False], ids=["mid-graph", "before-any-checkpoint"])
def test_a_run_a_dead_process_left_running_is_driven_on_by_maintenance(
    db: Database,
    world: World,
    fake_github_ci: FakeGitHubServer,
    github_client: Any,
    superuser: psycopg.Connection[Any],
    checkpointed: bool,
) -> None:
    pool = db.autocommit_pool()
    try:
        with pytest.raises(Killed):
            controller(db, DiesOnFirstRead(github_client), pool).start(
                world.requester(db), REPO, PR_NUMBER
            )
    finally:
        pool.close()
    [run] = run_service.list_runs(db, world.requester(db))
    assert run["status"] == "running"  # and nobody is driving it
    if not checkpointed:  # killed right after the run's row, before LangGraph wrote anything
        superuser.execute("DELETE FROM checkpoints WHERE thread_id = %s", [run["run_id"]])

    settings = Settings(triage=TriageSettings(run_lease_seconds=0.01))  # its lease has lapsed
    app = App(settings=settings, db=db, _github=github_client)
    try:
        assert Jobs(app).restart_interrupted() == 1
        assert Jobs(app).restart_interrupted() == 0  # once
    finally:
        app.close()
    view = run_service.describe_run(db, world.approver(db), UUID(run["run_id"]))
    assert view["status"] == "awaiting_approval"
    assert view["proposal"]["action"]["labels"] == ["ci-failure"]
    assert fake_github_ci.writes_received == 0  # nothing was sent without an approval


@pytest.mark.parametrize("lost", ["the last step", "every checkpoint"])
def test_a_run_whose_pause_was_never_checkpointed_is_brought_to_it_by_the_approval(
    db: Database,
    world: World,
    fake_github_ci: FakeGitHubServer,
    github_client: Any,
    superuser: psycopg.Connection[Any],
    lost: str,
) -> None:
    pool = db.autocommit_pool()
    try:
        runs = controller(db, github_client, pool)
        run_id = runs.start(world.requester(db), REPO, PR_NUMBER)
        approver = world.approver(db)
        view = run_service.describe_run(db, approver, run_id)
        assert view["status"] == "awaiting_approval" and runs.at_pause(run_id)
        # The process died after writing the proposal and the status, before LangGraph saved
        # the steps since: the newest checkpoints are lost.
        # The process died after writing the proposal and the run's status, before LangGraph
        # saved that step: its checkpoint, and the step's writes, are lost.
        thread = str(run_id)
        superuser.execute(
            "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_id = "
            "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %s)",
            [thread, thread],
        )
        superuser.execute(
            "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_id = "
            "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %s)",
            [thread, thread],
        )
        assert tuple(runs.graph.get_state(runs._config(run_id)).next) == ("build_proposal",)
        if lost == "every checkpoint":  # as LangGraph's background saving could lose them all
            superuser.execute("DELETE FROM checkpoints WHERE thread_id = %s", [thread])
            superuser.execute("DELETE FROM checkpoint_writes WHERE thread_id = %s", [thread])
            assert runs.graph.get_state(runs._config(run_id)).created_at is None
        decided = runs.approve(approver, run_id, view["digest"])
    finally:
        pool.close()
    assert decided.approval_id is not None
    done = run_service.describe_run(db, approver, run_id)
    assert done["status"] == "completed", done
    assert done["proposal"]["id"] == view["proposal"]["id"]  # the same proposal, not a second
    assert len(fake_github_ci.comments(REPO, PR_NUMBER)) == 1


def test_a_run_the_database_went_away_under_is_not_called_failed(
    db: Database, world: World, fake_github_ci: FakeGitHubServer, github_client: Any
) -> None:
    """A cut connection is no reason to fail a run: it is left for a retry or maintenance to
    drive on (before, it was marked failed, and then maintenance posted its comment)."""

    def executor_unreachable() -> Any:  # the execute step's first transaction
        raise StoreUnavailable("the database is unreachable: terminating connection")

    pool = db.autocommit_pool()
    try:
        runs = controller(db, github_client, pool, executor_unreachable)
        run_id = runs.start(world.requester(db), REPO, PR_NUMBER)
        approver = world.approver(db)
        digest = run_service.describe_run(db, approver, run_id)["digest"]
        with pytest.raises(StoreUnavailable):
            runs.approve(approver, run_id, digest)
    finally:
        pool.close()
    status = run_service.describe_run(db, approver, run_id)["status"]
    assert status in ("awaiting_approval", "executing"), status


def test_claimed_jobs_are_tried_again_when_the_database_went_away(
    db: Database, github_client: Any
) -> None:
    from resolveflow.worker.jobs import build_queue

    app = App(settings=Settings(), db=db, _github=github_client)
    try:
        tasks = build_queue(app).tasks
        for name in (queue.START_WEBHOOK_RUN, queue.REFINE_NEW_ISSUE, queue.RESUME_RUN):
            strategy = tasks[name].retry_strategy
            assert strategy is not None and StoreUnavailable in strategy.retry_exceptions, name
    finally:
        app.close()


def test_a_webhook_run_claimed_by_a_worker_killed_before_it_started_is_started_once(
    db: Database,
    world: World,
    fake_github_ci: FakeGitHubServer,
    github_client: Any,
    superuser: psycopg.Connection[Any],
) -> None:
    superuser.execute(
        "INSERT INTO webhook_deliveries (delivery_id, event, action, repository, issue_number,"
        " tenant_id, queued) VALUES ('d-1', 'issues', 'opened', %s, %s, %s, true)",
        [REPO, PR_NUMBER, world.tenant.id],
    )

    def killed_at_start(*args: Any) -> Any:
        raise Killed("start")

    with pytest.raises(Killed):
        webhooks.start_webhook_run(
            db, killed_at_start, delivery_id="d-1", tenant_id=world.tenant.id, runs_per_day=100
        )
    assert run_service.list_runs(db, world.requester(db)) == []  # claimed, and no run

    pool = db.autocommit_pool()
    try:
        start = controller(db, github_client, pool).start
        again = [
            webhooks.start_webhook_run(
                db, start, delivery_id="d-1", tenant_id=world.tenant.id, runs_per_day=100
            )
            for _ in range(2)  # the requeued job, then once more
        ]
    finally:
        pool.close()
    assert again[0] is not None and again[1] is None
    [run] = run_service.list_runs(db, world.requester(db))
    assert run["run_id"] == str(again[0]) and run["status"] == "awaiting_approval"


class DiesWhenExecuting:
    def execute_one(self, *args: Any) -> Any:
        raise Killed("execute_one")


def test_a_run_killed_while_executing_is_settled_by_maintenance(
    db: Database, world: World, fake_github_ci: FakeGitHubServer, github_client: Any
) -> None:
    pool = db.autocommit_pool()
    try:
        runs = controller(
            db, github_client, pool, DiesWhenExecuting
        )  # after the run says "executing", before any request
        run_id = runs.start(world.requester(db), REPO, PR_NUMBER)
        approver = world.approver(db)
        digest = run_service.describe_run(db, approver, run_id)["digest"]
        with pytest.raises(Killed):
            runs.approve(approver, run_id, digest)
    finally:
        pool.close()
    assert run_service.describe_run(db, approver, run_id)["status"] == "executing"

    app = App(
        settings=Settings(triage=TriageSettings(run_lease_seconds=0.01)),
        db=db,
        _github=github_client,
    )
    try:
        assert Jobs(app).restart_interrupted() == 1
    finally:
        app.close()
    done = run_service.describe_run(db, approver, run_id)
    assert done["status"] == "completed", done
    assert len(fake_github_ci.comments(REPO, PR_NUMBER)) == 1
