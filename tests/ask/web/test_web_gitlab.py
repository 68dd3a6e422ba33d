"""A ``gitlab.issue_create`` proposal in the pages: its inbox row, its proposal page (forge,
project, title, description rendered and as source, labels, assignees with their ids, digest,
checks, who GitLab will show as the author), deciding and editing through its forms, and after
approval the outcome with the link to the issue the worker created on the sandbox GitLab."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_web_kinds import HOSTILE_TITLE, inert, page, post
from test_web_security import XSS_BODY, sign_in

from conftest import make_world
from fixtures_web import Web, web_settings
from resolveflow.accounts import admin
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.bootstrap.app import open_app
from resolveflow.errors import ConfigError
from resolveflow.gate import approvals
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.actions import execution_marker
from resolveflow.gate.posting import execution_outcome, proposal_outcome
from resolveflow.sandbox.gitlab.server import FakeGitLabServer
from resolveflow.store import gitlab_tokens
from resolveflow.web import create_app
from resolveflow.worker.jobs import Jobs
from resolveflow.worker.report import WorkReport

pytest_plugins = ["fixtures_web"]

TOKEN = "glpat-acme-bot"
POLICY = """
[tenants.acme.projects.ops]
forge = "gitlab"
project = "group/ops"
labels = ["bug", "ops"]
assignees = { alice = 12 }
"""


@pytest.fixture
def gitlab_fake() -> Iterator[FakeGitLabServer]:
    with FakeGitLabServer() as server:
        server.state.add_user(7, "acme-bot", TOKEN)
        server.state.add_user(12, "alice")
        server.state.add_project(42, "group/ops", ["bug", "ops"], members=[7])
        yield server


@pytest.fixture
def site(
    queue_ready: str, oauth_github: Any, gitlab_fake: FakeGitLabServer, tmp_path: Path
) -> Iterator[Web]:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings = web_settings(
        queue_ready,
        oauth_github.url,
        web_public_url="http://127.0.0.1:9",
        gitlab_url=gitlab_fake.url,
        gitlab_timeout_seconds=2.0,
        policy_file=policy,
    )
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        admin.add_tenant(app.db, "evil")
        cipher = app.token_cipher()
        assert cipher is not None
        with app.db.tenant(world.tenant.id) as conn:
            gitlab_tokens.save_gitlab_token(conn, cipher, world.tenant.id, "acme", TOKEN)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def gitlab_issue(
    web: Web, *, title: str = "Disk full on ops-3", body: str = "The disk is **full**."
) -> dict[str, Any]:
    targets = IssueTargets(policy=web.app.policy, gitlab=web.app.gitlab())
    return prepare_issue(
        web.db,
        web.world.requester(web.db),
        targets,
        alias="ops",
        title=title,
        body=body,
        labels=["ops"],
        assignees=["alice"],
    )


def test_the_inbox_row_names_the_forge_project_title_and_people(site: Web) -> None:
    view = gitlab_issue(site, title="Rotate the <b>logs</b>")
    alex = {"Authorization": f"Bearer {site.world.approver_token}"}
    html = page(site, "/inbox", **alex).text
    row = re.search(
        rf'<tr class="proposal-row" data-proposal="{view["id"]}">(.*?)</tr>', html, re.S
    )
    assert row is not None, html
    shown = row.group(1)
    assert 'data-kind="gitlab.issue_create"' in shown and ">new GitLab issue<" in shown
    assert "GitLab group/ops (new issue)" in shown
    assert "Rotate the &lt;b&gt;logs&lt;/b&gt;" in shown  # the title, as text
    assert '<span class="label">ops</span>' in shown and "for alice" in shown
    assert "GitLabAssignee" not in shown and "id=12" not in shown


def test_the_proposal_page_shows_exactly_what_gitlab_will_get_and_runs_nothing(
    site: Web, gitlab_fake: FakeGitLabServer
) -> None:
    view = gitlab_issue(site, title=HOSTILE_TITLE, body=XSS_BODY + "\n\n**bold** text")
    sign_in(site, "alex")
    html = page(site, f"/proposals/{view['id']}").text
    assert inert(html) == []
    assert "<script>alert(1)" not in html and "window.__xss=3</script>" not in html
    assert 'id="forge">GitLab<' in html and 'id="project"><code>group/ops</code>' in html
    assert f'id="issue-title">{escape(HOSTILE_TITLE, quote=False)}</dd>' in html
    assert "<strong>bold</strong> text" in html  # the description, rendered and sanitized
    assert "&lt;script&gt;window.__xss=3&lt;/script&gt;" in html  # and its exact source
    assert '<span class="label">ops</span>' in html
    assert '<span class="label">alice (id 12)</span>' in html
    assert f'id="digest">{view["digest"]}<' in html and "&#34;project_id&#34;:42" in html
    assert html.count('class="gate ok"') >= 3 and 'class="gate fail"' not in html
    assert re.search(r'<button type="submit" id="approve"\s*>', html)
    # GitLab shows the tenant token's account as the author, whoever approves.
    assert 'id="poster-login">@acme-bot<' in html and "the tenant&#39;s GitLab token" in html
    assert 'name="title"' in html and 'name="body"' in html
    assert 'name="labels"' not in html and 'name="assignees"' not in html
    assert 'name="comment"' not in html
    assert gitlab_fake.writes_received == 0


def test_approving_on_the_page_creates_one_issue_and_links_it_everywhere(
    site: Web, gitlab_fake: FakeGitLabServer
) -> None:
    view = gitlab_issue(site)
    csrf = sign_in(site, "alex")
    done = post(site, f"/proposals/{view['id']}/approve", {"digest": view["digest"]}, csrf)
    assert done.status_code == 303, done.text
    assert gitlab_fake.writes_received == 0  # the worker writes, not the page

    site.work()
    site.work()  # nothing left to do: still one issue
    [issue] = gitlab_fake.issues(42)
    execution_id = proposal_service.describe(site.db, site.world.approver(site.db), view["id"])[
        "execution"
    ]["id"]
    assert issue["description"].endswith(execution_marker(execution_id))
    assert (gitlab_fake.writes_received, gitlab_fake.writes_applied) == (1, 1)
    url = issue["web_url"]
    status = page(site, f"/proposals/{view['id']}/status").text
    assert 'data-state="sent">posted<' in status and "hx-get" not in status
    assert re.search(r'id="outcome-text">Created issue #1 in group/ops as @acme-bot at ', status)
    assert f'href="{url}" id="outcome-link"' in status
    listing = page(site, "/executions").text
    assert 'data-kind="gitlab.issue_create"' in listing and url in listing
    shown = page(site, f"/executions/{execution_id}").text
    assert "GitLab group/ops (new issue)" in shown and f'href="{url}" id="outcome-link"' in shown
    assert "Created issue #1 in group/ops as @acme-bot" in shown
    assert "posted" in page(site, "/audit").text

    # The CLI's sentence (proposals show, executions show) from the same facts.
    alex = site.world.approver(site.db)
    described = proposal_service.describe(site.db, alex, view["id"])
    said = proposal_outcome(site.db, alex, described, site.app.github, None, site.app.gitlab())
    assert said is not None and said["text"].startswith(
        "created issue #1 in group/ops as @acme-bot"
    )
    assert said["text"].endswith(f": {url}")
    again = execution_outcome(
        site.db, alex, uuid.UUID(execution_id), site.app.github, None, site.app.gitlab()
    )
    assert again["text"] == said["text"]


def test_editing_keeps_labels_and_people_and_refuses_changing_them(
    site: Web, gitlab_fake: FakeGitLabServer
) -> None:
    view = gitlab_issue(site)
    csrf = sign_in(site, "alex")
    edit = {"title": "Disk full on ops-3 (v2)", "body": "Now:\r\n\r\n- 99 %"}
    done = post(site, f"/proposals/{view['id']}/edit", edit, csrf)
    assert done.status_code == 303, done.text
    new_id = done.headers["location"].split("/")[2].split("?")[0]
    html = page(site, f"/proposals/{new_id}").text
    assert "(v2)" in html and "\nNow:\n\n- 99 %</textarea>" in html
    assert '<span class="label">alice (id 12)</span>' in html
    refused = post(site, f"/proposals/{new_id}/edit", {"labels": "bug"}, csrf)
    assert refused.status_code == 400
    rejected = post(site, f"/proposals/{new_id}/reject", {"reason": "not now"}, csrf)
    assert rejected.status_code == 303
    assert gitlab_fake.writes_received == 0


def test_the_worker_waits_for_the_tenants_gitlab_token_and_sends_nothing(
    site: Web, gitlab_fake: FakeGitLabServer, superuser: Any
) -> None:
    view = gitlab_issue(site)
    approvals.approve(site.db, site.world.approver(site.db), view["id"], view["digest"], 3600)
    superuser.execute("DELETE FROM gitlab_tokens")
    before = len(gitlab_fake.requests)
    # Maintenance's drain, directly: run_once's periodic job may not be deferred yet when its
    # worker finds the queue empty and stops (a race that made this test flaky).
    report = WorkReport()
    Jobs(site.app, report).maintenance()
    with pytest.raises(ConfigError) as refused:
        report.raise_if_not_done()
    assert "gitlab token set --tenant acme" in refused.value.message, refused.value.message
    assert "RESOLVEFLOW_GITHUB_TOKEN" not in refused.value.message
    assert len(gitlab_fake.requests) == before and gitlab_fake.issues(42) == []
    alex = site.world.approver(site.db)
    assert proposal_service.describe(site.db, alex, view["id"])["execution"]["state"] == "pending"
