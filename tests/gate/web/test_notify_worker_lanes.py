"""Hostile notification webhooks never stall another tenant's approved action (docs/
notifications.md, "Bounded in time, memory and destination"). The real worker (procrastinate on
the test's Postgres, as ``serve --with-worker`` runs it), two tenants whose webhooks trickle
their answer a byte at a time for a minute, and two notification rounds due at once, as when a
round outlives the minute between two. A third tenant's comment, approved meanwhile, is posted
within seconds: the rounds run on a lane of their own and each stops at its deadline."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from conftest import make_world
from fixtures_web import REPO, Web, web_settings
from hostile_http import HostileReceiver, trickle_status
from resolveflow.bootstrap.app import open_app
from resolveflow.domain.network_addresses import AddressPolicy
from resolveflow.gate import proposals as proposal_service
from resolveflow.notify import admin as notify_admin
from resolveflow.notify.domain.message import NotifyFormat
from resolveflow.store import queue
from resolveflow.web import create_app
from resolveflow.worker import WorkerThread
from resolveflow.worker.jobs import build_queue

pytest_plugins = ["fixtures_web"]


@pytest.fixture
def site(queue_ready: str, oauth_github: object) -> Iterator[Web]:
    settings = web_settings(
        queue_ready,
        oauth_github.url,  # type: ignore[attr-defined]
        notify_timeout_seconds=2,
        notify_retry_base_seconds=3600,
        notify_allowed_hosts="127.0.0.1",
    )
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)  # type: ignore[arg-type]


def _hostile_tenant(web: Web, name: str, receiver: HostileReceiver) -> None:
    hostile = make_world(web.db, name, f"{name}/app")
    cipher = web.app.token_cipher()
    assert cipher is not None
    notify_admin.set_webhook(
        web.db,
        cipher,
        name,
        NotifyFormat.SLACK,
        receiver.url,
        None,
        AddressPolicy.parse("127.0.0.1"),
    )
    proposal_service.create_proposal(
        web.db,
        hostile.requester(web.db),
        repository=hostile.repository,
        issue=1,
        comment="x",
        labels=[],
    )


def _two_rounds_due(web: Web) -> None:
    """Two notification rounds queued at once, on whatever lane the worker gives the task."""
    lane = build_queue(web.app).tasks[queue.NOTIFY].queue
    with web.db.unscoped() as conn:
        for tick in (1, 2):
            queue.queue_app().configure_task(queue.NOTIFY, queue=lane, connection=conn).defer(
                timestamp=tick
            )


def _wait_for(condition: object, seconds: float) -> bool:
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_trickling_webhooks_do_not_delay_another_tenants_approved_comment(site: Web) -> None:
    web = site
    with (
        HostileReceiver(trickle_status(0.2, 60)) as globex_hook,
        HostileReceiver(trickle_status(0.2, 60)) as initech_hook,
    ):
        _hostile_tenant(web, "globex", globex_hook)
        _hostile_tenant(web, "initech", initech_hook)
        proposal = proposal_service.create_proposal(
            web.db,
            web.world.requester(web.db),
            repository=REPO,
            issue=1,
            comment="on its way",
            labels=[],
        )
        _two_rounds_due(web)
        worker = WorkerThread(web.app).start()
        try:
            assert _wait_for(lambda: globex_hook.connections or initech_hook.connections, 30)
            response = web.client.post(
                f"/api/v1/proposals/{proposal.id}/approve",
                json={"digest": proposal.digest},
                headers=web.api(web.world.approver_token),
            )
            assert response.status_code == 202, response.text
            approved = time.monotonic()
            posted = _wait_for(lambda: web.fake.comments(REPO, 1), 45)
            waited = time.monotonic() - approved
        finally:
            worker.stop()
        tried = len(globex_hook.requests) + len(initech_hook.requests)
    assert posted, "the approved comment was not posted while the webhooks trickled"
    assert waited < 30, f"the approved comment waited {waited:.0f} s behind the webhooks"
    assert [c["body"].startswith("on its way") for c in web.fake.comments(REPO, 1)] == [True]
    # each trickled message was tried once: the second round found it waiting out its retry
    assert tried == 2
