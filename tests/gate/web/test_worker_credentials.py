"""The worker never sends an approved action without a GitHub credential (issue 12, item 6): the
execute job and maintenance's drain leave it pending, untouched, and log one error naming the
setting; `worker --once` exits non-zero and says so. With the token set, the next round sends it
once. Real Postgres, the real queue, the sandbox forge counting requests."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from conftest import make_world
from fixtures_web import REPO, Web, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.domain.records import Proposal
from resolveflow.errors import ConfigError, Unavailable
from resolveflow.gate import executions as execution_service
from resolveflow.gate import proposals as proposal_service
from resolveflow.web import create_app
from resolveflow.worker import Jobs, run_once

pytest_plugins = ["fixtures_web"]


@pytest.fixture
def tokenless(queue_ready: str, oauth_github: Any) -> Iterator[Web]:
    """The app with no service token (RESOLVEFLOW_GITHUB_TOKEN unset); nobody has their own."""
    settings = web_settings(queue_ready, oauth_github.url, github_token=None)
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def approved(web: Web, comment: str) -> tuple[Proposal, str]:
    """A comment proposal without a run (no labels: approving it reads nothing from GitHub),
    approved through the API, which queues the worker's execute job."""
    proposal = proposal_service.create_proposal(
        web.db, web.world.requester(web.db), repository=REPO, issue=1, comment=comment, labels=[]
    )
    response = web.client.post(
        f"/api/v1/proposals/{proposal.id}/approve",
        json={"digest": proposal.digest},
        headers=web.api(web.world.approver_token),
    )
    assert response.status_code == 202, response.text
    return proposal, response.json()["execution_id"]


def state_of(web: Web, execution_id: str) -> dict[str, Any]:
    return execution_service.show_execution(  # type: ignore[no-any-return]
        web.db, web.world.approver(web.db), uuid.UUID(execution_id)
    )


def no_credential_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and "RESOLVEFLOW_GITHUB_TOKEN" in r.getMessage()
    ]


def test_the_execute_job_leaves_an_execution_without_a_credential_untouched(
    tokenless: Web, caplog: pytest.LogCaptureFixture
) -> None:
    web = tokenless
    _, execution_id = approved(web, "posted once a token is set")
    before = web.fake.requests_received

    with caplog.at_level(logging.ERROR), pytest.raises(ConfigError) as refused:
        run_once(web.app).raise_if_not_done()
    assert "set RESOLVEFLOW_GITHUB_TOKEN" in refused.value.message, refused.value.message
    assert execution_id in refused.value.message
    assert web.fake.requests_received == before  # not even an unauthenticated request
    assert web.fake.writes_received == 0
    waiting = state_of(web, execution_id)
    assert (waiting["state"], waiting["attempts"]) == ("pending", [])
    [logged] = no_credential_errors(caplog)
    assert execution_id in logged and "approved by alex" in logged, logged

    # Maintenance's drain waits too, and says so once per round.
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        result = Jobs(web.app).maintenance()
    assert result["executed"] == 0 and result["waiting"] == 1, result
    assert len(no_credential_errors(caplog)) == 1
    assert web.fake.requests_received == before
    assert state_of(web, execution_id)["state"] == "pending"

    # The token is set: the next round sends it, once.
    settings = web_settings(web.app.db.url, web.fake.url, github_token="service-token")
    with open_app(settings, auto_migrate=False) as app:
        result = Jobs(app).maintenance()
        assert result["executed"] == 1 and result["waiting"] == 0, result
        assert Jobs(app).maintenance()["executed"] == 0
    assert state_of(web, execution_id)["state"] == "sent"
    assert [
        c["body"].startswith("posted once a token is set") for c in web.fake.comments(REPO, 1)
    ] == [True]
    assert web.fake.writes_received == 1


def test_worker_once_reports_failed_executions(web: Web) -> None:
    """A job that ran but whose action failed is reported as not done (as `execute --once`)."""
    proposal = proposal_service.create_proposal(
        web.db, web.world.requester(web.db), repository=REPO, issue=1, comment="hi", labels=["bug"]
    )
    response = web.client.post(
        f"/api/v1/proposals/{proposal.id}/approve",
        json={"digest": proposal.digest},
        headers=web.api(web.world.approver_token),
    )
    assert response.status_code == 202, response.text
    web.fake.remove_repo_label(REPO, "bug")  # gone between approval and execution: fails
    report = run_once(web.app)
    with pytest.raises(Unavailable) as failed:
        report.raise_if_not_done()
    assert response.json()["execution_id"] in failed.value.message
    assert "failed" in failed.value.message


def test_worker_once_exits_non_zero_naming_the_execution_and_the_setting(
    tokenless: Web, tmp_path: Path
) -> None:
    web = tokenless
    _, execution_id = approved(web, "posted by the worker once a token is set")
    before = web.fake.requests_received
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=web.app.db.url,
        RESOLVEFLOW_GITHUB_API_URL=web.fake.url,
        RESOLVEFLOW_HOME=str(tmp_path / "home"),
        RESOLVEFLOW_EMBEDDER="fake",
    )
    result = subprocess.run(
        [sys.executable, "-m", "resolveflow", "worker", "--once"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 7, (result.stdout, result.stderr)  # configuration
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "set RESOLVEFLOW_GITHUB_TOKEN" in last, last
    assert execution_id in last and "Traceback" not in result.stderr, result.stderr
    assert web.fake.requests_received == before
    assert state_of(web, execution_id)["state"] == "pending"
