"""Which deliveries the product acts on: every well-formed signed delivery is acknowledged
(finding 12), a replayed event under a fresh delivery id starts nothing (finding 6), and the
delivery row and its job commit together or not at all."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from fixtures_web import REPO, WEBHOOK_SECRET, Web
from resolveflow.store import queue
from resolveflow.triage import runs as run_service
from resolveflow.triage.store import webhooks as webhook_store

pytest_plugins = ["fixtures_web"]

# GitHub's example delivery of `projects_v2_item` (docs "Webhook events and payloads"; the
# same example is in octokit/webhooks, MIT), abridged to the fields that shape it: no repository.
PROJECTS_V2_ITEM = {
    "action": "created",
    "projects_v2_item": {
        "id": 5678510,
        "node_id": "PVTI_lADOAWcTxs07G84AVqWu",
        "project_node_id": "PVT_kwDOAWcTxs07Gw",
        "content_node_id": "DI_lADOAWcTxs07G84AIjOy",
        "content_type": "DraftIssue",
        "creator": {"login": "Codertocat", "id": 21031067, "type": "User"},
        "created_at": "2022-06-08T20:34:26Z",
        "updated_at": "2022-06-08T20:34:26Z",
        "archived_at": None,
    },
    "organization": {"login": "Octocoders", "id": 38302899},
    "sender": {"login": "Codertocat", "id": 21031067, "type": "User"},
    "installation": {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="},
}
NOW = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
LATER = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def post(web: Web, event: str, body: bytes, delivery: str | None = None) -> Any:
    signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return web.client.post(
        "/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
        },
    )


def issue_event(number: int, action: str = "opened", updated_at: str = NOW) -> dict[str, Any]:
    return {
        "action": action,
        "issue": {"number": number, "title": "t", "body": "b", "updated_at": updated_at},
        "repository": {"full_name": REPO},
        "sender": {"login": "octocat"},
    }


def comment_event(
    comment_id: int, action: str = "created", updated_at: str = NOW
) -> dict[str, Any]:
    event = issue_event(1, action, updated_at)
    event["comment"] = {"id": comment_id, "body": "hi", "updated_at": updated_at}
    return event


def _runs(web: Web) -> list[dict[str, Any]]:
    return run_service.list_runs(web.db, web.world.approver(web.db))


def _delivery(web: Web, delivery_id: str) -> webhook_store.RecordedDelivery | None:
    with web.db.unscoped() as conn:
        return webhook_store.delivery_by_id(conn, delivery_id)


@pytest.mark.parametrize(
    ("event", "payload", "reason"),
    [
        ("projects_v2_item", PROJECTS_V2_ITEM, "not handled"),
        ("ping", {"zen": "Design for failure.", "hook_id": 1}, "not handled"),
        ("push", {"ref": "refs/heads/main", "repository": {"full_name": REPO}}, "not handled"),
        ("issues", {**issue_event(1), "action": "assigned"}, "not handled"),
        ("issues", {"action": "opened", "issue": {"number": 1}}, "repository"),
        ("issues", {"action": "opened", "repository": {"full_name": REPO}}, "issue"),
        ("issues", {**issue_event(1), "issue": {"number": 1}}, "updated_at"),
        ("issue_comment", issue_event(1, "created"), "comment"),
        ("issues", {}, "action"),
    ],
    ids=[
        "projects_v2_item",
        "ping",
        "push",
        "unhandled-action",
        "no-repository",
        "no-issue",
        "no-updated-at",
        "comment-without-comment",
        "empty-object",
    ],
)
def test_every_well_formed_delivery_is_acknowledged_and_what_is_not_acted_on_says_why(
    web: Web, event: str, payload: dict[str, Any], reason: str
) -> None:
    delivery = str(uuid.uuid4())
    response = post(web, event, json.dumps(payload).encode(), delivery)
    assert response.status_code == 202, response.text
    answer = response.json()
    assert answer["queued"] is False
    assert reason in answer["ignored"], answer
    row = _delivery(web, delivery)
    assert row is not None and row.event == event
    assert row.ignored == answer["ignored"]
    with web.db.unscoped() as conn:
        assert queue.jobs_by_task(conn, queue.HANDLE_DELIVERY) == []


def test_a_replayed_issue_event_under_a_fresh_delivery_id_starts_nothing(web: Web) -> None:
    body = json.dumps(issue_event(1)).encode()
    first = post(web, "issues", body)
    assert first.status_code == 202 and first.json()["queued"] is True, first.text
    replay = post(web, "issues", body)  # the captured body, a new delivery id
    assert replay.status_code == 202, replay.text
    assert replay.json()["queued"] is False
    assert "already processed" in replay.json()["ignored"]
    assert first.json()["delivery"] in replay.json()["ignored"]
    web.work()
    assert [r["target"] for r in _runs(web)] == [f"{REPO}#1"]
    # Later, genuinely new events for the same issue are acted on.
    later = post(web, "issues", json.dumps(issue_event(1, "reopened")).encode())
    assert later.json()["queued"] is True
    web.work()
    assert len(_runs(web)) == 2


def test_comment_events_are_told_apart_by_comment_and_time(web: Web) -> None:
    created = post(web, "issue_comment", json.dumps(comment_event(11)).encode())
    other = post(web, "issue_comment", json.dumps(comment_event(12)).encode())
    edited = post(web, "issue_comment", json.dumps(comment_event(11, "edited", LATER)).encode())
    replay = post(web, "issue_comment", json.dumps(comment_event(11)).encode())
    assert [r.json()["queued"] for r in (created, other, edited, replay)] == [
        True,
        True,
        True,
        False,
    ]
    assert "already processed" in replay.json()["ignored"]


@pytest.mark.parametrize("updated_at", ["2001-01-01T00:00:00Z", "2999-01-01T00:00:00Z"])
def test_an_event_outside_the_retention_window_is_ignored(web: Web, updated_at: str) -> None:
    """Its record may have been pruned (or would outlive the window), so a replay could not be
    told apart: not acted on."""
    response = post(web, "issues", json.dumps(issue_event(1, updated_at=updated_at)).encode())
    assert response.status_code == 202
    assert response.json()["queued"] is False
    assert "not within the last 30 days" in response.json()["ignored"]


def test_the_database_itself_refuses_a_second_record_of_one_event(web: Web, superuser: Any) -> None:
    post(web, "issues", json.dumps(issue_event(1)).encode())
    row = superuser.execute(
        "SELECT tenant_id, event, repository, issue_number, action, subject, updated_at"
        " FROM webhook_events"
    ).fetchone()
    assert row is not None
    with pytest.raises(psycopg.errors.UniqueViolation):
        superuser.execute(
            "INSERT INTO webhook_events (tenant_id, event, repository, issue_number, action,"
            " subject, updated_at, delivery_id) VALUES (%s, %s, %s, %s, %s, %s, %s, 'other')",
            list(row),
        )


def test_a_redelivery_with_the_same_id_is_a_duplicate_not_a_replay(web: Web) -> None:
    body = json.dumps(issue_event(1)).encode()
    delivery = str(uuid.uuid4())
    assert post(web, "issues", body, delivery).status_code == 202
    again = post(web, "issues", body, delivery)
    assert again.status_code == 200
    assert again.json() == {
        "delivery": delivery,
        "duplicate": True,
        "queued": False,
        "ignored": None,
    }


@pytest.fixture
def failing_queue(superuser: Any) -> Any:
    """The job insert fails inside the delivery's transaction (a trigger on procrastinate's table)."""
    superuser.execute(
        "CREATE FUNCTION rf_test_refuse_jobs() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'injected: the job queue refuses'; END $$"
    )
    superuser.execute(
        "CREATE TRIGGER rf_test_refuse_jobs BEFORE INSERT ON procrastinate_jobs"
        " FOR EACH ROW EXECUTE FUNCTION rf_test_refuse_jobs()"
    )
    yield
    superuser.execute("DROP TRIGGER IF EXISTS rf_test_refuse_jobs ON procrastinate_jobs")


def test_when_the_job_cannot_be_queued_nothing_is_recorded_and_github_is_told_to_retry(
    web: Web, failing_queue: None, superuser: Any
) -> None:
    body = json.dumps(issue_event(1)).encode()
    delivery = str(uuid.uuid4())
    response = post(web, "issues", body, delivery)
    assert response.status_code == 503, response.text
    assert _delivery(web, delivery) is None
    assert superuser.execute("SELECT count(*) FROM webhook_events").fetchone()[0] == 0
    superuser.execute("DROP TRIGGER rf_test_refuse_jobs ON procrastinate_jobs")
    # GitHub's redelivery (same id, same body) is then a new delivery, and is acted on.
    again = post(web, "issues", body, delivery)
    assert again.status_code == 202 and again.json()["queued"] is True, again.text
    web.work()
    assert len(_runs(web)) == 1
