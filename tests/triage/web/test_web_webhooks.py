"""GitHub webhooks: signature before parsing, one delivery once, runs and index updates by job."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures_web import REPO, WEBHOOK_SECRET, Web, issue_payload
from resolveflow.store import queue
from resolveflow.triage import runs as run_service
from resolveflow.triage.store import webhooks as webhook_store
from resolveflow.triage.webhook_events import parse_delivery
from resolveflow.triage.webhooks import signature_valid

pytest_plugins = ["fixtures_web"]


def _deliveries(web: Web) -> int:
    with web.db.unscoped() as conn:
        return webhook_store.count_deliveries(conn)


def _runs(web: Web) -> list[dict]:  # type: ignore[type-arg]
    return run_service.list_runs(web.db, web.world.approver(web.db))


def test_githubs_documented_test_vector_passes() -> None:
    secret = b"It's a Secret to Everybody"
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature_valid(secret, b"Hello, World!", header)
    assert not signature_valid(secret, b"Hello, World?", header)
    assert not signature_valid(secret, b"Hello, World!", header.replace("sha256=", "sha1="))
    assert not signature_valid(secret, b"Hello, World!", None)
    assert not signature_valid(b"another secret", b"Hello, World!", header)


def test_wrong_or_missing_signature_is_refused_before_parsing(web: Web) -> None:
    body = b"{ this is not json"  # parsing it would be a 400; refusing first gives 401
    for signature in (None, "sha256=" + "0" * 64, "garbage"):
        headers = {"X-GitHub-Event": "issues", "X-GitHub-Delivery": str(uuid.uuid4())}
        if signature:
            headers["X-Hub-Signature-256"] = signature
        response = web.client.post("/webhooks/github", content=body, headers=headers)
        assert response.status_code == 401, response.text
    # A valid payload signed with another secret is refused too, and nothing was recorded.
    payload = json.dumps(issue_payload(1)).encode()
    forged = "sha256=" + hmac.new(b"not the secret", payload, hashlib.sha256).hexdigest()
    response = web.client.post(
        "/webhooks/github",
        content=payload,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": "abc",
            "X-Hub-Signature-256": forged,
        },
    )
    assert response.status_code == 401
    assert _deliveries(web) == 0
    web.work()
    assert _runs(web) == []


def test_signed_issue_opened_starts_one_run_and_a_redelivery_starts_nothing(web: Web) -> None:
    delivery = str(uuid.uuid4())
    first = web.webhook("issues", issue_payload(1), delivery=delivery)
    assert first.status_code == 202, first.text
    assert first.json() == {
        "delivery": delivery,
        "duplicate": False,
        "queued": True,
        "ignored": None,
    }
    again = web.webhook("issues", issue_payload(1), delivery=delivery)
    assert again.status_code == 200
    assert again.json()["duplicate"] is True and again.json()["queued"] is False
    with web.db.unscoped() as conn:
        assert len(queue.jobs_by_task(conn, queue.HANDLE_DELIVERY)) == 1
    web.work()
    web.work()  # nothing left to do the second time
    runs = _runs(web)
    assert [(r["target"], r["status"]) for r in runs] == [(f"{REPO}#1", "awaiting_approval")]
    view = run_service.describe_run(
        web.db, web.world.approver(web.db), __import__("uuid").UUID(runs[0]["run_id"])
    )
    assert view["timeline"][0]["actor"] == "principal:github-webhook"
    # The redelivery after the run exists still starts nothing.
    assert web.webhook("issues", issue_payload(1), delivery=delivery).status_code == 200
    web.work()
    assert len(_runs(web)) == 1


def test_repositories_not_on_any_allowlist_start_nothing(web: Web) -> None:
    web.fake.add_repo("someone/else", [])
    web.fake.add_issue("someone/else", 3, "x", "y")
    assert web.webhook("issues", issue_payload(3, repo="someone/else")).status_code == 202
    web.work()
    assert _runs(web) == []


def test_comment_and_edit_events_update_the_index(web: Web) -> None:
    web.fake.add_comment_directly(REPO, 1, "Setting WIDGET_SAFE_MODE=1 avoids the crash.")
    response = web.webhook("issue_comment", issue_payload(1, action="created"))
    assert response.status_code == 202 and response.json()["queued"]
    web.work()
    hits = web.client.get(
        "/api/v1/search",
        params={"q": "WIDGET_SAFE_MODE crash"},
        headers=web.api(web.world.approver_token),
    )
    assert hits.status_code == 200, hits.text
    assert [hit["external_id"] for hit in hits.json()] == ["1"]
    # An edit re-reads the issue: the new title is what the index holds afterwards.
    web.fake.add_issue(REPO, 1, "Widget explodes on start", "It explodes.")
    web.webhook("issues", issue_payload(1, action="edited"))
    web.work()
    hits = web.client.get(
        "/api/v1/search", params={"q": "explodes"}, headers=web.api(web.world.approver_token)
    ).json()
    assert hits and hits[0]["title"] == "Widget explodes on start"
    assert _runs(web) == []  # edits and comments never start runs


def test_verified_but_unusable_bodies_are_400_not_500(web: Web) -> None:
    # Not a JSON object: 400. A JSON object is a delivery, recorded (202) but meaning no work.
    for body, status, queued in (
        (b"[1, 2]", 400, None),
        (b"\xff\xfe", 400, None),
        (b"null", 400, None),
        (b'{"action": 5}', 202, False),
        (b'{"action": "opened\\u0000"}', 202, False),
    ):
        signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        response = web.client.post(
            "/webhooks/github",
            content=body,
            headers={
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": signature,
            },
        )
        assert (response.status_code, response.json().get("queued")) == (status, queued), body
    web.work()
    assert _runs(web) == []


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda n, a: json.dumps(issue_payload(n, a)).encode(),
            st.integers(),
            st.text(max_size=10),
        ),
    ),
    event=st.sampled_from(["issues", "issue_comment", "ping", "", "x" * 60]),
    signature=st.one_of(st.none(), st.text(max_size=80), st.just("sha256=" + "a" * 64)),
    delivery=st.one_of(st.none(), st.text(max_size=40)),
)
def test_fuzzed_deliveries_never_500_and_never_start_a_run_unsigned(
    web: Web, body: bytes, event: str, signature: str | None, delivery: str | None
) -> None:
    headers = {"X-GitHub-Event": event}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    if delivery is not None:
        headers["X-GitHub-Delivery"] = delivery
    try:
        response = web.client.post("/webhooks/github", content=body, headers=headers)
    except UnicodeEncodeError:
        return  # httpx refuses non-ASCII header values before sending: nothing reached us
    assert response.status_code == 401, (response.status_code, response.text)
    assert _deliveries(web) == 0


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    payload=st.dictionaries(
        st.sampled_from(["action", "issue", "repository", "x"]),
        st.one_of(
            st.none(),
            st.integers(),
            st.text(max_size=20),
            st.fixed_dictionaries({"number": st.integers(), "full_name": st.text(max_size=30)}),
        ),
    ),
    event=st.sampled_from(["issues", "issue_comment", "push"]),
)
def test_fuzzed_signed_payloads_never_500(web: Web, payload: dict, event: str) -> None:  # type: ignore[type-arg]
    response = web.webhook(event, payload)  # a new delivery id each time
    parsed = parse_delivery("d", event, json.dumps(payload).encode())
    # Any JSON object is a usable delivery: recorded, its job queued only if it means work.
    assert response.status_code == 202, response.text
    assert response.json()["queued"] is parsed.actionable
    assert parsed.repository in (None, REPO) or "/" in parsed.repository


def test_two_first_jobs_of_a_tenant_share_one_webhook_principal(
    web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both jobs find no principal; the database keeps one insert and the loser reads it."""
    from resolveflow.store import tenants as tenant_store
    from resolveflow.triage import webhooks

    tenant_id = web.world.tenant.id
    first = webhooks.webhook_principal(web.db, tenant_id)  # the winner's insert, made first
    real = tenant_store.principal_by_subject
    calls: list[int] = []

    def missing_once(conn, tenant, subject):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:  # the loser looked before the winner committed
            raise webhooks.NotFound("no such principal")
        return real(conn, tenant, subject)

    monkeypatch.setattr(tenant_store, "principal_by_subject", missing_once)
    second = webhooks.webhook_principal(web.db, tenant_id)
    assert second.id == first.id and len(calls) == 2
