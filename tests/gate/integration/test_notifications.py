"""Notifications about waiting proposals (issue 32, part 4), through Postgres, the gate and the
sandbox receiver over HTTP: one message per waiting proposal, made through the gate (a person's
own and a triage run's alike), none repeated when the worker runs again, none for a decided or a
digest-only one, a reminder before the window closes; bounded retries with the failure shown by
``/readyz`` and ``/metrics``; the JSON format signed and checked by the receiver; the Slack format;
no secret in the logs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from prometheus_client import REGISTRY
from test_decision_examples import REPO, _run_proposal
from test_quiet_digest import _quiet, _waiting

from conftest import World, propose_and_approve
from resolveflow.bootstrap.app import App
from resolveflow.bootstrap.health import notifications_check
from resolveflow.config import ApprovalSettings, NotifySettings, Settings, WebSettings
from resolveflow.domain.records import Proposal
from resolveflow.domain.vocabulary import REFINE_PROPOSAL_NOTE, NotificationKind
from resolveflow.domain.vocabulary import NotificationState as S
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import build_action
from resolveflow.notify.domain.message import NotificationPayload
from resolveflow.notify.store import notifications as store
from resolveflow.sandbox.notify_receiver import NotifyReceiver
from resolveflow.store.database import Database
from resolveflow.web.metrics import DatabaseCollector
from resolveflow.worker.jobs import Jobs

PUBLIC = "https://rf.example"
HMAC_KEY = "hmac-key-never-logged"
URL_SECRET = "url-secret-never-logged"
TTL = 3600
NOT_DELIVERED = "the notification was not delivered (no 2xx answer within 10 s)"


@pytest.fixture
def receiver() -> Iterator[NotifyReceiver]:
    with NotifyReceiver() as running:  # a Slack-like hook: nothing to check a signature with
        yield running


@pytest.fixture
def signed() -> Iterator[NotifyReceiver]:
    """A JSON receiver that checks every body's signature with the shared key."""
    with NotifyReceiver(secret=HMAC_KEY.encode()) as running:
        yield running


def _jobs(db: Database, receiver: NotifyReceiver, **notify: Any) -> Jobs:
    """The worker's jobs on an app whose webhook is the receiver (its URL carries a secret, as a
    Slack hook's does)."""
    fields: dict[str, Any] = {
        "url": f"{receiver.url}?key={URL_SECRET}",
        "remind_before_seconds": 600,
        "retry_base_seconds": 0,  # every round retries at once: no waiting in tests
        "allowed_hosts": "127.0.0.1",  # the sandbox receiver listens there
        **notify,
    }
    settings = Settings(
        notify=NotifySettings(**fields),
        approval=ApprovalSettings(ttl_seconds=TTL),
        web=WebSettings(public_url=PUBLIC),
    )
    return Jobs(App(settings=settings, db=db))


def _propose(db: Database, world: World, issue: int, comment: str = "Looking into it.") -> Proposal:
    return proposals.create_proposal(
        db,
        world.requester(db),
        repository=world.repository,
        issue=issue,
        comment=comment,
        labels=["bug"],
    )


def _rows(db: Database, world: World) -> list[store.NotificationRow]:
    with db.tenant(world.tenant.id) as conn:
        return store.notifications_of(conn, world.tenant.id)


def _texts(receiver: NotifyReceiver) -> list[str]:
    return [d.body["text"] for d in receiver.deliveries]


def test_each_waiting_proposal_is_told_once_in_slack_format(
    db: Database, world: World, receiver: NotifyReceiver
) -> None:
    secret_comment = "The stack trace shows the token parser failing on line 12."
    own = _propose(db, world, 1, secret_comment)  # a requester's own: it still needs an approver
    run = _waiting(db, world, _run_proposal(db, world, "human_review", "fallback", [], issue=2))
    jobs = _jobs(db, receiver)

    assert jobs.notify()["sent"] == 2
    texts = _texts(receiver)
    assert len(texts) == 2
    links = {f"<{PUBLIC}/proposals/{p.id}|Open in the inbox>" for p in (own, run)}
    assert {line for text in texts for line in text.splitlines() if line.startswith("<")} == links
    own_text = next(t for t in texts if str(own.id) in t)
    assert "a comment and labels bug on acme/widgets#1" in own_text
    assert "Waiting for a decision (acme" in own_text
    for text in texts:  # never the body, the digest or a way to approve
        assert secret_comment not in text
        assert own.digest not in text and run.digest not in text
        assert "approve" not in text.lower()
    assert receiver.deliveries[0].verified is None  # the Slack format is not signed

    assert jobs.notify() == {"queued": 0, "sent": 0, "retrying": 0, "failed": 0, "dropped": 0}
    assert len(receiver.deliveries) == 2  # the worker ran again: nothing repeated
    assert {(r.kind, r.state) for r in _rows(db, world)} == {(NotificationKind.WAITING, S.SENT)}


def test_a_decided_or_digest_only_proposal_is_not_told(
    db: Database, world: World, receiver: NotifyReceiver
) -> None:
    approved, _ = propose_and_approve(db, world, issue=3)
    rejected = _propose(db, world, 4)
    approvals.reject(db, world.approver(db), rejected.id, "not now")
    quiet = _quiet('[repositories."acme/widgets".suggestions]\nrefine_summary = "digest"')
    digest_only = proposals.create_prepared_proposal(
        db,
        world.requester(db),
        build_action(REPO, 5, "Related: #3.", []),
        REFINE_PROPOSAL_NOTE,
        quiet,
    )
    told = _propose(db, world, 6)

    _jobs(db, receiver).notify()
    [delivery] = receiver.deliveries
    assert str(told.id) in delivery.body["text"]
    for quiet_one in (approved, rejected, digest_only):
        assert str(quiet_one.id) not in delivery.body["text"]


def test_a_proposal_decided_before_its_message_went_out_is_dropped(
    db: Database, world: World, receiver: NotifyReceiver
) -> None:
    proposal = _propose(db, world, 7)
    receiver.fail_next(1)
    jobs = _jobs(db, receiver)
    assert jobs.notify()["retrying"] == 1
    approvals.reject(db, world.approver(db), proposal.id, "no")
    assert jobs.notify()["dropped"] == 1
    assert len(receiver.deliveries) == 1  # the failed one only
    assert [r.state for r in _rows(db, world)] == [S.DROPPED]


def test_a_reminder_goes_out_once_before_the_window_closes(
    db: Database, world: World, receiver: NotifyReceiver, superuser: psycopg.Connection[Any]
) -> None:
    proposal = _propose(db, world, 8)
    jobs = _jobs(db, receiver)
    jobs.notify()
    assert len(receiver.deliveries) == 1  # waiting; the window closes in an hour
    # 52 minutes later (no sleeping: the proposal is made older): within 10 minutes of the close.
    superuser.execute(
        "UPDATE proposals SET created_at = created_at - interval '3120 seconds' WHERE id = %s",
        [proposal.id],
    )
    jobs.notify()
    jobs.notify()
    assert len(receiver.deliveries) == 2
    reminder = receiver.deliveries[1].body["text"]
    assert reminder.startswith("Approval window closes at ")
    assert f"{PUBLIC}/proposals/{proposal.id}" in reminder
    kinds = {(r.kind, r.state) for r in _rows(db, world)}
    assert kinds == {(NotificationKind.WAITING, S.SENT), (NotificationKind.CLOSING, S.SENT)}


def test_json_format_is_signed_and_checked_by_the_receiver(
    db: Database, world: World, signed: NotifyReceiver
) -> None:
    proposal = _propose(db, world, 9)
    _jobs(db, signed, format="json", secret=HMAC_KEY).notify()
    [delivery] = signed.deliveries
    assert delivery.verified is True and delivery.answered == 200
    payload = NotificationPayload.model_validate(delivery.body)
    assert payload.type == "resolveflow.proposal.waiting"
    assert payload.proposal_id == proposal.id and payload.tenant == "acme"
    assert payload.inbox_url == f"{PUBLIC}/proposals/{proposal.id}"
    assert payload.summary == "a comment and labels bug on acme/widgets#9"


def test_a_wrong_key_is_refused_by_the_receiver_and_retried(
    db: Database, world: World, signed: NotifyReceiver
) -> None:
    _propose(db, world, 10)
    _jobs(db, signed, format="json", secret="some-other-key").notify()
    [delivery] = signed.deliveries
    assert delivery.verified is False and delivery.answered == 401
    [row] = _rows(db, world)
    assert row.state is S.PENDING and row.last_error == NOT_DELIVERED


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _scraped(db: Database) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in DatabaseCollector(db).collect()
        for s in family.samples
    }


def test_retries_are_bounded_and_the_failure_is_shown(
    db: Database, world: World, receiver: NotifyReceiver
) -> None:
    _propose(db, world, 11)
    receiver.fail_next(10)
    jobs = _jobs(db, receiver, max_attempts=3)
    failed_before = _sample("resolveflow_notification_deliveries_total", outcome="failed")
    assert notifications_check(db).ok

    outcomes = [jobs.notify() for _ in range(5)]
    assert [o["retrying"] for o in outcomes] == [1, 1, 0, 0, 0]
    assert [o["failed"] for o in outcomes] == [0, 0, 1, 0, 0]
    assert len(receiver.deliveries) == 3  # bounded: never a fourth
    [row] = _rows(db, world)
    assert (row.state, row.attempts) == (S.FAILED, 3)

    check = notifications_check(db)
    assert not check.ok and not check.required
    # what answered is never told (whoever sets a URL would learn what listens there)
    assert "1 given up on" in check.detail and NOT_DELIVERED in check.detail
    assert "500" not in check.detail
    scraped = _scraped(db)
    assert scraped[("resolveflow_notifications", (("state", "failed"),))] == 1
    assert scraped[("resolveflow_notification_retries_total", ())] == 2
    failed_after = _sample("resolveflow_notification_deliveries_total", outcome="failed")
    assert failed_after == failed_before + 1


def test_a_failure_then_success_and_a_hung_webhook(
    db: Database, world: World, receiver: NotifyReceiver
) -> None:
    _propose(db, world, 12)
    receiver.hang_next(1)
    jobs = _jobs(db, receiver, timeout_seconds=0.5)
    assert jobs.notify()["retrying"] == 1
    [row] = _rows(db, world)
    assert row.last_error == "the notification was not delivered (no 2xx answer within 0.5 s)"
    check = notifications_check(db)
    assert not check.ok and "1 retrying" in check.detail and "within 0.5 s" in check.detail

    assert jobs.notify()["sent"] == 1
    [row] = _rows(db, world)
    assert (row.state, row.attempts, row.last_error) == (S.SENT, 2, None)
    assert notifications_check(db).ok


def test_readyz_shows_the_notifier_without_failing_readiness(
    db: Database, world: World, receiver: NotifyReceiver
) -> None:
    from fastapi.testclient import TestClient

    from resolveflow.web.app import create_app

    _propose(db, world, 13)
    receiver.fail_next(1)
    jobs = _jobs(db, receiver)
    jobs.notify()
    with TestClient(create_app(jobs.app)) as client:
        response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["checks"]["notifications"]["ok"] is False
    assert NOT_DELIVERED in body["checks"]["notifications"]["detail"]


def test_no_secret_reaches_the_logs(
    db: Database, world: World, signed: NotifyReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    _propose(db, world, 14)
    signed.fail_next(1)
    jobs = _jobs(db, signed, format="json", secret=HMAC_KEY)
    jobs.notify()
    jobs.notify()
    assert [d.answered for d in signed.deliveries] == [500, 200]
    assert "notification not delivered" in caplog.text
    assert URL_SECRET not in caplog.text and HMAC_KEY not in caplog.text
    assert URL_SECRET not in repr(jobs.app.settings) and HMAC_KEY not in repr(jobs.app.settings)


def test_the_worker_runs_the_round_every_minute_and_does_nothing_without_a_hook(
    db: Database, world: World
) -> None:
    from resolveflow.store.queue import NOTIFY
    from resolveflow.worker.jobs import build_queue

    app = App(settings=Settings(), db=db)
    periodic = build_queue(app).periodic_registry.periodic_tasks
    assert periodic[(NOTIFY, "notify")].cron == "* * * * *"
    _propose(db, world, 15)
    assert Jobs(app).notify() == {}  # RESOLVEFLOW_NOTIFY_URL unset
    assert _rows(db, world) == []


def test_an_edit_is_not_told_again_and_the_reminder_follows_its_window(
    db: Database, world: World, receiver: NotifyReceiver, superuser: psycopg.Connection[Any]
) -> None:
    from resolveflow.gate.domain.actions import ActionChanges

    first = _propose(db, world, 16)
    jobs = _jobs(db, receiver)
    jobs.notify()
    superuser.execute(  # the first version nearly out of its window...
        "UPDATE proposals SET created_at = created_at - interval '3120 seconds' WHERE id = %s",
        [first.id],
    )
    edited = proposals.edit_proposal(db, world.requester(db), first.id, ActionChanges(labels=[]))
    jobs.notify()  # ...but the edit opened a new one: no reminder yet, and no second "waiting"
    assert len(receiver.deliveries) == 1
    superuser.execute(
        "UPDATE proposals SET created_at = created_at - interval '3120 seconds' WHERE id = %s",
        [edited.id],
    )
    jobs.notify()
    [_, reminder] = _texts(receiver)
    assert f"/proposals/{edited.id}|" in reminder and "a comment on acme/widgets#16" in reminder
