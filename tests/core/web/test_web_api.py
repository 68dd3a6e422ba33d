"""The JSON API end to end: approve -> the worker posts once; unknown -> a person settles it;
edits make new versions; schemathesis finds no server error anywhere in the OpenAPI schema."""

from __future__ import annotations

import uuid
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from fixtures_web import REPO, Web, add_approver
from resolveflow.sandbox.forge.server import Delay

pytest_plugins = ["fixtures_web"]


def _start(web: Web, number: int = 1) -> dict[str, Any]:
    response = web.client.post(
        "/api/v1/runs",
        json={"issue": f"{REPO}#{number}"},
        headers=web.api(web.world.requester_token),
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_approval_is_recorded_at_once_and_the_worker_posts_exactly_once(web: Web) -> None:
    view = _start(web)
    assert view["status"] == "awaiting_approval"
    approver = web.api(web.world.approver_token)
    # Seen by the requester, two checks are red (role, own request); by the approver, all green.
    assert [g["name"] for g in view["gates"] if not g["ok"]] == [
        "approver role",
        "not your own request",
    ]
    seen = web.client.get(f"/api/v1/runs/{view['run_id']}", headers=approver).json()
    assert [(g["name"], g["ok"]) for g in seen["gates"]] == [
        (name, True)
        for name in (
            "same tenant",
            "undecided",
            "approver role",
            "not your own request",
            "latest version",
            "nothing carried out",
            "digest intact",
            "digest you reviewed",
            "approval window",
            "repository allowed",
            "labels exist",
        )
    ]
    bad = web.client.post(
        f"/api/v1/runs/{view['run_id']}/approve", json={"digest": "0" * 64}, headers=approver
    )
    assert bad.status_code == 409
    own = web.client.post(
        f"/api/v1/runs/{view['run_id']}/approve",
        json={"digest": view["digest"]},
        headers=web.api(web.world.requester_token),
    )
    assert own.status_code == 403
    ok = web.client.post(
        f"/api/v1/runs/{view['run_id']}/approve", json={"digest": view["digest"]}, headers=approver
    )
    assert ok.status_code == 202 and ok.json()["queued"] is True
    assert web.fake.writes_received == 0  # nothing is posted in the request
    web.work()
    web.work()
    after = web.client.get(f"/api/v1/runs/{view['run_id']}", headers=approver).json()
    assert after["status"] == "completed"
    assert after["proposal"]["execution"]["state"] == "sent"
    assert web.fake.issue_labels(REPO, 1) == ["needs-triage"]
    assert (
        web.client.post(
            f"/api/v1/runs/{view['run_id']}/approve",
            json={"digest": view["digest"]},
            headers=approver,
        ).status_code
        == 409
    )


def test_an_edit_is_a_new_version_that_needs_its_own_approval(web: Web) -> None:
    view = _start(web)
    approver = web.api(web.world.approver_token)
    edited = web.client.post(
        f"/api/v1/runs/{view['run_id']}/edit",
        json={"comment": "Thanks! Could you share the version?", "labels": ["needs-triage"]},
        headers=web.api(web.world.requester_token),
    )
    assert edited.status_code == 201, edited.text
    new = edited.json()
    assert new["version"] == 2 and new["digest"] != view["digest"]
    stale = web.client.post(
        f"/api/v1/runs/{view['run_id']}/approve", json={"digest": view["digest"]}, headers=approver
    )
    assert stale.status_code == 409
    fresh = web.client.post(
        f"/api/v1/runs/{view['run_id']}/approve", json={"digest": new["digest"]}, headers=approver
    )
    assert fresh.status_code == 202
    web.work()
    assert [c["body"].split("\n\n<!--")[0] for c in web.fake.comments(REPO, 1)] == [
        "Thanks! Could you share the version?"
    ]


def test_an_unknown_execution_is_never_resent_and_a_person_settles_it(web: Web) -> None:
    view = _start(web)
    approver = web.api(web.world.approver_token)
    edited = web.client.post(
        f"/api/v1/runs/{view['run_id']}/edit",
        json={"comment": "Looking into it.", "labels": []},
        headers=approver,
    ).json()
    # The connection drops after the request left: the outcome is unknown.
    web.fake.inject(Delay(0.2, apply_write=False), method="POST", path="/comments")
    rita = web.api(web.world.requester_token)
    bob = web.api(add_approver(web, "acme", "bob"))  # alex wrote version 2, so another approves
    assert (
        web.client.post(
            f"/api/v1/runs/{view['run_id']}/approve", json={"digest": edited["digest"]}, headers=bob
        ).status_code
        == 202
    )
    web.work()
    unknown = web.client.get(
        "/api/v1/executions", params={"state": "unknown"}, headers=approver
    ).json()
    assert len(unknown) == 1
    execution = unknown[0]["id"]
    web.work()  # maintenance, retries: still nothing resent
    assert web.fake.writes_received == 1 and web.fake.comments(REPO, 1) == []
    assert (
        web.client.post(
            f"/api/v1/executions/{execution}/resolve", json={"was_sent": False}, headers=rita
        ).status_code
        == 403
    )
    settled = web.client.post(
        f"/api/v1/executions/{execution}/resolve",
        json={"was_sent": False, "note": "not on GitHub"},
        headers=approver,
    )
    assert settled.status_code == 200 and settled.json()["state"] == "not_sent"
    assert web.fake.writes_received == 1


def test_no_server_errors_anywhere_in_the_openapi_schema(web: Web) -> None:
    view = _start(web)
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", web.client.app)
    headers = web.api(web.world.approver_token)
    known = {
        "run_id": view["run_id"],
        "run_or_proposal": view["run_id"],
        "proposal_id": view["proposal_id"],
    }
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    failures: list[str] = []
    for operation in operations:

        @settings(
            max_examples=20,
            deadline=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            if case.path_parameters and uuid.uuid4().int % 3 == 0:
                case.path_parameters = {
                    k: known.get(k, v) for k, v in case.path_parameters.items()
                }  # sometimes a real record, so the deeper code runs too
            response = case.call(headers=headers)
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}"
                )

        check()
    assert failures == []


def test_a_run_for_an_issue_github_does_not_have_is_a_404_and_no_run(web: Web) -> None:
    headers = web.api(web.world.requester_token)
    response = web.client.post("/api/v1/runs", json={"issue": f"{REPO}#9999"}, headers=headers)
    assert response.status_code == 404, response.text
    detail = response.json()["message"]
    assert f"{REPO}#9999 does not exist (or the token cannot see it)" in detail
    assert detail.count("404") == 1
    # No failed run left behind, and an issue that exists still starts one.
    assert web.client.get("/api/v1/runs", headers=headers).json() == []
    assert _start(web)["status"] == "awaiting_approval"
