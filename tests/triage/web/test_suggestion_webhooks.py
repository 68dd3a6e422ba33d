"""A whole triage run whose repository sends labels as GitHub suggestions: the webhook starts the
run, its proposal says ``suggest``, the approved labels wait in GitHub as suggestions, a maintainer
accepts one and dismisses the other there, GitHub's ``issues`` deliveries reach the web app, and
the acceptance figures count one label approved and one rejected; a redelivery changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fastapi.testclient import TestClient

from conftest import make_world
from resolveflow.adapters.github import intent_form
from resolveflow.bootstrap.app import open_app
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.web import create_app

if TYPE_CHECKING:  # imported by pytest as a plugin first, so that its asserts are rewritten
    from fixtures_web import Web

pytest_plugins = ["fixtures_web"]

REPO = "acme/widgets"
# Issue #1 ("Widget crashes on start") is proposed two labels: bug (the rule) and needs-triage.
POLICY = """
[repositories."acme/widgets"]
extra_labels = { human_review = ["bug", "question"] }

[[repositories."acme/widgets".rules]]
name = "crash"
when_title_prefix = "Widget crashes"
classification = "human_review"
labels = ["bug"]
"""


@pytest.fixture
def site(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Web]:
    from fixtures_web import Web, web_settings

    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    settings = web_settings(queue_ready, oauth_github.url, policy_file=str(policy))
    intent_form.forget_hosts()
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def _label_figures(web: Web) -> dict[str, tuple[int, int]]:
    response = web.client.get(
        "/api/v1/decisions/acceptance", headers=web.api(web.world.approver_token)
    )
    assert response.status_code == 200, response.text
    return {
        f["detail"]: (f["approved"], f["rejected"])
        for f in response.json()["figures"]
        if f["kind"] == "label" and f["place"] == REPO
    }


def _run_and_approve(web: Web) -> dict[str, Any]:
    from fixtures_web import issue_payload  # after pytest loaded it as a plugin (see above)

    web.fake.put_file(REPO, ".github/resolveflow.yml", "github_suggestions: true\n")
    assert web.webhook("issues", issue_payload(1)).status_code == 202
    web.work()
    runs = web.client.get("/api/v1/runs", headers=web.api(web.world.approver_token)).json()
    [run] = [r for r in runs if r["target"] == f"{REPO}#1"]
    page = web.client.get(
        f"/api/v1/runs/{run['run_id']}", headers=web.api(web.world.approver_token)
    ).json()
    proposal = page["proposal"]
    assert proposal["action"]["suggest"] is True
    approved = web.client.post(
        f"/api/v1/proposals/{proposal['id']}/approve",
        json={"digest": proposal["digest"]},
        headers=web.api(web.world.approver_token),
    )
    assert approved.status_code == 202, approved.text
    web.work()
    return proposal


def test_a_maintainers_accept_and_dismiss_in_github_are_the_labels_decisions(site: Web) -> None:
    web = site
    proposal = _run_and_approve(web)
    labels = sorted(proposal["action"]["labels"])
    assert len(labels) == 2, labels
    pending = {s.target_value: s for s in web.fake.issue_suggestions(REPO, 1)}
    assert sorted(pending) == labels and web.fake.issue_labels(REPO, 1) == []
    assert _label_figures(web) == {}  # sent as suggestions: undecided until GitHub says
    kept, dropped = labels
    accepted = web.fake.resolve_suggestion(REPO, pending[kept].id, accept=True, actor="maint")
    dismissed = web.fake.resolve_suggestion(REPO, pending[dropped].id, accept=False, actor="maint")
    assert (accepted["action"], dismissed["action"]) == ("labeled", "suggestion_dismissed")
    deliveries = [str(uuid.uuid4()), str(uuid.uuid4())]
    for delivery, payload in zip(deliveries, (accepted, dismissed), strict=True):
        response = web.webhook("issues", payload, delivery=delivery)
        assert response.status_code == 202 and response.json()["queued"], response.text
    web.work()
    assert _label_figures(web) == {kept: (1, 0), dropped: (0, 1)}
    examples = web.client.get("/api/v1/decisions", headers=web.api(web.world.approver_token)).json()
    reasons = {e["detail"]: e["reason"] for e in examples if e["kind"] == "label"}
    assert reasons == {kept: None, dropped: "dismissed in GitHub by maint"}
    # GitHub delivers again (same ids, then new ids for the same events): nothing new.
    for delivery, payload in zip(deliveries, (accepted, dismissed), strict=True):
        assert web.webhook("issues", payload, delivery=delivery).status_code == 200
        assert web.webhook("issues", payload).status_code == 202
    web.work()
    assert _label_figures(web) == {kept: (1, 0), dropped: (0, 1)}


def test_a_dismissal_no_delivery_announced_is_read_at_the_issues_next_event(site: Web) -> None:
    from fixtures_web import issue_payload

    web = site
    proposal = _run_and_approve(web)
    for suggestion in web.fake.issue_suggestions(REPO, 1):
        web.fake.resolve_suggestion(REPO, suggestion.id, accept=False, actor="maint")
    web.work()
    assert _label_figures(web) == {}  # nothing said it yet
    web.fake.add_comment_directly(REPO, 1, "Any news?")
    assert web.webhook("issue_comment", issue_payload(1, action="created")).status_code == 202
    web.work()
    labels = sorted(proposal["action"]["labels"])
    assert _label_figures(web) == {label: (0, 1) for label in labels}
