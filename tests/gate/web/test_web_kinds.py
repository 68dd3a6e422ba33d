"""Both action kinds in the pages: a proposal page for a new issue and for a comment, deciding
through its forms, the inbox listing runs and standalone proposals, executions with what they made.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from html import escape
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_web_security import XSS_BODY, active_parts, sign_in, start_run

from conftest import make_world
from fixtures_web import REPO, Web, add_approver, web_settings
from resolveflow.accounts import admin
from resolveflow.bootstrap.app import open_app
from resolveflow.domain.records import Principal, Proposal
from resolveflow.gate import approvals
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.domain.actions import ActionChanges
from resolveflow.web import create_app

pytest_plugins = ["fixtures_web"]

HOSTILE_TITLE = "<script>alert(1)</script>"
HTML = {"Accept": "text/html"}


@pytest.fixture
def site(queue_ready: str, oauth_github: Any) -> Iterator[Web]:
    """The app with sign-in through the fake OAuth (a loopback redirect URL the fake accepts)."""
    settings = web_settings(queue_ready, oauth_github.url, web_public_url="http://127.0.0.1:9")
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        admin.add_tenant(app.db, "evil")
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def new_issue(
    web: Web,
    by: Principal | None = None,
    *,
    title: str = "Document the widget limits",
    body: str = "The limits are **undocumented**.",
    labels: tuple[str, ...] = ("needs-triage", "bug"),
    assignees: tuple[str, ...] = ("Alex", "rita"),
) -> Proposal:
    return proposal_service.create_issue_proposal(
        web.db,
        by or web.world.requester(web.db),
        repository=REPO,
        title=title,
        body=body,
        labels=list(labels),
        assignees=list(assignees),
    )


def comment_proposal(web: Web, comment: str = "Could you share the log?") -> Proposal:
    return proposal_service.create_proposal(
        web.db,
        web.world.requester(web.db),
        repository=REPO,
        issue=1,
        comment=comment,
        labels=["question"],
    )


def page(web: Web, path: str, **headers: str) -> Any:
    response = web.client.get(path, headers={**HTML, **headers})
    assert response.status_code == 200, response.text
    return response


def post(web: Web, path: str, data: dict[str, str], csrf: str) -> Any:
    return web.client.post(
        path, data={**data, "csrf_token": csrf}, headers=HTML, follow_redirects=False
    )


def inert(html: str) -> list[str]:
    """What could run in the page, besides our own forms (posting to our own paths)."""
    forms = re.findall(r'<form [^>]*action="([^"]*)"', html)
    assert all(action.startswith(("/proposals/", "/logout")) for action in forms), forms
    return [part for part in active_parts(html) if part != "form"]


def test_the_new_issue_page_shows_the_exact_action_and_escapes_a_hostile_title(
    site: Web,
) -> None:
    proposal = new_issue(site, title=HOSTILE_TITLE, body=XSS_BODY + "\n\n**bold** text")
    sign_in(site, "alex")
    response = page(site, f"/proposals/{proposal.id}")
    html = response.text
    assert response.headers["Cache-Control"] == "no-store"
    assert inert(html) == []
    assert "<script>alert(1)" not in html
    assert f'id="issue-title">{escape(HOSTILE_TITLE, quote=False)}</dd>' in html
    assert 'id="kind"' in html and "github.issue_create" in html
    assert f'id="digest">{proposal.digest}<' in html
    for name in ("needs-triage", "bug", "alex", "rita"):
        assert f'<span class="label">{name}</span>' in html
    assert "<strong>bold</strong> text" in html  # the body rendered as GitHub shows it
    assert "&lt;script&gt;window.__xss=3&lt;/script&gt;" in html  # and its exact source
    assert html.count('class="gate ok"') >= 3 and 'class="gate fail"' not in html
    assert re.search(r'<button type="submit" id="approve"\s*>', html)
    assert 'name="title"' in html and 'name="assignees"' in html and 'name="comment"' not in html


def test_approving_through_the_form_creates_the_issue_and_links_it(site: Web) -> None:
    proposal = new_issue(site)
    csrf = sign_in(site, "alex")
    path = f"/proposals/{proposal.id}/approve"
    assert post(site, path, {"digest": proposal.digest}, "x" * 43).status_code == 403
    done = post(site, path, {"digest": proposal.digest}, csrf)
    assert done.status_code == 303
    assert done.headers["location"] == f"/proposals/{proposal.id}?notice=approved"
    alex = site.world.approver(site.db)
    execution = proposal_service.describe(site.db, alex, proposal.id)["execution"]
    assert execution is not None and execution["state"] == "pending"
    waiting = page(site, f"/proposals/{proposal.id}?notice=approved").text
    assert 'id="notice"' in waiting and f"/proposals/{proposal.id}/status" in waiting  # follows
    assert 'id="approve"' not in waiting

    site.work()  # the worker carries the approval out
    created = [i for i in site.fake.issues(REPO) if i["title"] == "Document the widget limits"]
    assert len(created) == 1
    status = page(site, f"/proposals/{proposal.id}/status").text
    assert 'id="execution-state" class="state sent" data-state="sent">posted<' in status
    assert f'href="{created[0]["html_url"]}" id="outcome-link"' in status
    assert 'id="outcome-text">Created as @' in status and "hx-get" not in status  # settled
    listing = page(site, "/executions").text
    assert 'data-kind="github.issue_create"' in listing and created[0]["html_url"] in listing
    shown = page(site, f"/executions/{execution['id']}").text
    assert 'id="kind"' in shown and f"{REPO} (new issue)" in shown
    assert f'href="{created[0]["html_url"]}" id="outcome-link"' in shown
    assert f'href="/proposals/{proposal.id}" id="proposal-link"' in shown


def test_the_inbox_lists_runs_and_standalone_proposals_of_both_kinds(site: Web) -> None:
    run = start_run(site)
    issue = new_issue(site, title="Widgets need a changelog")
    comment = comment_proposal(site)
    edited = proposal_service.edit_proposal(
        site.db,
        site.world.requester(site.db),
        comment.id,
        ActionChanges(comment="Could you share the full log?"),
    )
    rejected = new_issue(site, title="A rejected idea")
    approvals.reject(site.db, site.world.approver(site.db), rejected.id, "not now")
    alex = {"Authorization": f"Bearer {site.world.approver_token}"}

    html = page(site, "/inbox", **alex).text
    assert f'data-run="{run["run_id"]}"' in html and f"{REPO}#1" in html
    assert f'data-proposal="{issue.id}"' in html and f'href="/proposals/{issue.id}"' in html
    assert "Widgets need a changelog" in html and f"{REPO} (new issue)" in html
    assert '<span class="label">needs-triage</span>' in html
    assert f'data-proposal="{edited.id}"' in html  # the latest version only
    assert f'data-proposal="{comment.id}"' not in html
    assert str(rejected.id) not in html  # decided: nothing to do
    assert html.count('data-kind="github.issue_create"') >= 1
    assert html.count('data-kind="github.issue"') == 2

    def rows(query: str) -> str:
        return page(site, f"/inbox?{query}", **alex, **{"HX-Target": "inbox-body"}).text

    both = rows(f"repository={REPO.upper()}")
    assert "<html" not in both and str(issue.id) in both and run["run_id"] in both
    assert str(issue.id) in rows("status=")  # any status: still waiting
    assert str(issue.id) not in rows("status=completed")
    assert str(issue.id) not in rows("classification=deterministic")
    assert "inbox-empty" in rows("repository=other/repo")


def test_checks_are_red_and_approval_refused_for_the_approver_who_proposed_it(site: Web) -> None:
    alex = site.world.approver(site.db)
    proposal = new_issue(site, alex)  # an approver may propose; then someone else approves
    csrf = sign_in(site, "alex")
    html = page(site, f"/proposals/{proposal.id}").text
    failed = re.findall(r'<li class="gate fail"><strong>✘ ([^<]+)</strong>: ([^<]+)</li>', html)
    assert len(failed) == 1 and "requester" in failed[0][1], failed
    assert re.search(r'id="approve"\s+disabled', html)
    refused = post(site, f"/proposals/{proposal.id}/approve", {"digest": proposal.digest}, csrf)
    assert refused.status_code == 403
    assert proposal_service.describe(site.db, alex, proposal.id)["decision"] is None


def test_editing_a_new_issue_makes_a_version_and_the_old_one_is_superseded(site: Web) -> None:
    proposal = new_issue(site)
    csrf = sign_in(site, "alex")
    edit = {
        "title": "Document the widget limits (v2)",
        "body": "\nLimits:\r\n\r\n- 10 widgets",
        "labels": "bug",
        "assignees": "rita",
    }
    done = post(site, f"/proposals/{proposal.id}/edit", edit, csrf)
    assert done.status_code == 303
    new_id = uuid.UUID(done.headers["location"].split("/")[2].split("?")[0])
    alex = site.world.approver(site.db)
    view = proposal_service.describe(site.db, alex, new_id)
    assert (view["version"], view["action"]["labels"], view["action"]["assignees"]) == (
        2,
        ["bug"],
        ["rita"],
    )
    assert view["action"]["body"] == "\nLimits:\n\n- 10 widgets"  # as typed, line ends normalized
    html = page(site, f"/proposals/{new_id}").text
    assert "(v2)" in html and f'href="/proposals/{proposal.id}">v1</a>' in html
    assert "<textarea" in html and "\n\nLimits:\n\n- 10 widgets</textarea>" in html  # round-trips
    old = page(site, f"/proposals/{proposal.id}").text
    assert 'id="superseded"' in old and f'href="/proposals/{new_id}" id="latest-link"' in old
    assert 'id="approve-form"' not in old and 'id="edit-form"' not in old
    assert re.search(r'class="gate fail"><strong>✘ [^<]+</strong>: [^<]*superseded', old)
    title_only = post(site, f"/proposals/{new_id}/edit", {"title": "Widget limits"}, csrf)
    assert title_only.status_code == 303
    third = uuid.UUID(title_only.headers["location"].split("/")[2].split("?")[0])
    kept = proposal_service.describe(site.db, alex, third)["action"]
    assert (kept["title"], kept["labels"], kept["assignees"]) == (
        "Widget limits",
        ["bug"],
        ["rita"],
    )


def test_a_comment_proposal_is_edited_and_rejected_through_its_forms(site: Web) -> None:
    proposal = comment_proposal(site, "Please attach <b>the log</b>.")
    csrf = sign_in(site, "alex")
    html = page(site, f"/proposals/{proposal.id}").text
    assert "<b>the log</b>" in html  # sanitized Markdown keeps harmless HTML, as GitHub does
    assert "Please attach &lt;b&gt;the log&lt;/b&gt;." in html  # and the exact source
    assert 'name="comment"' in html and 'name="title"' not in html
    wrong_field = post(site, f"/proposals/{proposal.id}/edit", {"title": "x", "labels": ""}, csrf)
    assert wrong_field.status_code == 400
    done = post(
        site,
        f"/proposals/{proposal.id}/edit",
        {"comment": "Please attach the full log.", "labels": "question, needs-triage"},
        csrf,
    )
    assert done.status_code == 303
    new_id = done.headers["location"].split("/")[2].split("?")[0]
    assert post(site, f"/proposals/{new_id}/reject", {"reason": ""}, csrf).status_code == 400
    rejected = post(site, f"/proposals/{new_id}/reject", {"reason": "asked already"}, csrf)
    assert rejected.status_code == 303
    assert rejected.headers["location"] == f"/proposals/{new_id}?notice=rejected"
    after = page(site, rejected.headers["location"]).text
    assert 'id="decision" class="decision rejected">rejected<' in after
    assert "(asked already)" in after and 'id="approve-form"' not in after
    assert '<span class="label">needs-triage</span>' in after


def test_another_tenant_can_neither_see_nor_decide_a_proposal(site: Web) -> None:
    proposal = new_issue(site)
    eve = {"Authorization": f"Bearer {add_approver(site, 'evil', 'eve')}"}
    assert site.client.get(f"/proposals/{proposal.id}", headers={**HTML, **eve}).status_code == 404
    refused = site.client.post(
        f"/proposals/{proposal.id}/approve",
        data={"digest": proposal.digest},
        headers={**HTML, **eve},
    )
    assert refused.status_code == 404
    assert str(proposal.id) not in page(site, "/inbox", **eve).text
    alex = site.world.approver(site.db)
    assert proposal_service.describe(site.db, alex, proposal.id)["decision"] is None


def test_the_run_page_still_works_and_its_proposal_page_links_back(site: Web) -> None:
    run = start_run(site)
    alex = {"Authorization": f"Bearer {site.world.approver_token}"}
    html = page(site, f"/runs/{run['run_id']}", **alex).text
    found = re.search(r'href="/proposals/([0-9a-f-]+)" id="proposal-link"', html)
    assert found and 'id="approve-form"' in html and f'id="digest">{run["digest"]}<' in html
    proposal = page(site, f"/proposals/{found.group(1)}", **alex).text
    assert f'href="/runs/{run["run_id"]}" id="run-link"' in proposal
    assert (
        'data-kind="github.issue"' in proposal
        and '<span class="label">needs-triage</span>' in proposal
    )
    approved = site.client.post(
        f"/proposals/{found.group(1)}/approve",
        data={"digest": run["digest"]},
        headers={**HTML, **alex},
        follow_redirects=False,
    )
    assert approved.status_code == 303  # deciding here goes through the run, as on its page
    site.work()
    after = page(site, f"/runs/{run['run_id']}", **alex).text
    assert 'id="run-state" data-status="completed">done<' in after
    assert site.fake.issue_labels(REPO, 1) == ["needs-triage"]
