"""How suggestions fared, on the pages and the API (issue 31): the acceptance table and the
latest decisions in words, a proposal's "suggestions like this" line, bad input refused in one
line, and another tenant's decisions never shown."""

from __future__ import annotations

import re
from html import unescape

from test_decision_examples import _approve, _reject, _run_proposal
from test_web_kinds import site  # noqa: F401 (the fixture)
from test_web_security import sign_in

from fixtures_web import Web, add_approver
from resolveflow.gate import proposals
from resolveflow.gate.domain.actions import ActionChanges

pytest_plugins = ["fixtures_web"]

HTML = {"Accept": "text/html"}
MACHINE_WORDS = ("rule_comment", "has_failing_ci", "review_request", "approved_after")


def _history(web: Web) -> None:
    world = web.world
    _approve(web.db, world, _run_proposal(web.db, world, "deterministic", "has_failing_ci", ["ci"]))
    first = _run_proposal(web.db, world, "deterministic", "has_failing_ci", ["ci"])
    edited = proposals.edit_proposal(
        web.db, world.requester(web.db), first.id, ActionChanges(labels=["bug"])
    )
    _approve(web.db, world, edited)
    rejected = _run_proposal(web.db, world, "human_review", "fallback", [])
    _reject(web.db, world, rejected, "enough detail already <b>here</b>")


def test_the_api_gives_the_figures_and_the_examples(site: Web) -> None:  # noqa: F811
    _history(site)
    alex = site.api(site.world.approver_token)
    report = site.client.get("/api/v1/decisions/acceptance", headers=alex).json()
    figures = {(f["kind"], f["detail"]): f for f in report["figures"]}
    rule = figures[("rule_comment", "has_failing_ci")]
    assert (rule["approved"], rule["edited"], rule["rejected"], rule["acceptance"]) == (
        1,
        1,
        0,
        1.0,
    )
    assert figures[("label", "ci")]["rejected"] == 1  # taken away by the approved edit
    assert figures[("review_request", "")]["rejected"] == 1
    latest = site.client.get("/api/v1/decisions?limit=2", headers=alex).json()
    assert len(latest) == 2 and latest[0]["kind"] == "review_request"
    for bad in ("days=0", "last=0", "days=abc", "last=99999999"):
        refused = site.client.get(f"/api/v1/decisions/acceptance?{bad}", headers=alex)
        assert refused.status_code == 422, (bad, refused.text)
    other = add_approver(site, "evil", "eve")
    empty = site.client.get("/api/v1/decisions/acceptance", headers=site.api(other)).json()
    assert empty["figures"] == []


def test_the_page_and_the_proposal_say_it_in_words(site: Web) -> None:  # noqa: F811
    _history(site)
    waiting = _run_proposal(site.db, site.world, "deterministic", "has_failing_ci", ["ci"])
    sign_in(site, "alex")
    page = site.client.get("/decisions", headers=HTML)
    assert page.status_code == 200
    text = unescape(re.sub(r"<[^>]+>", " ", page.text))
    assert "a rule's comment" in text and "CI is failing" in text
    assert "approved after an edit" in text and "labels +bug -ci" in text
    assert "enough detail already &lt;b&gt;here&lt;/b&gt;" in page.text  # a reason is text
    assert not [word for word in MACHINE_WORDS if word in text]
    shown = site.client.get(f"/proposals/{waiting.id}", headers=HTML)
    like = re.search(r'<p class="muted" id="like-this">(.*?)</p>', shown.text, re.S)
    assert like is not None, shown.text
    assert unescape(re.sub(r"<[^>]+>", "", like.group(1))).startswith(
        "A rule's comment (CI is failing) here, last 90 days: 1 approved as proposed,"
        " 1 after an edit, 0 rejected"
    )
    for bad in ("days=0", "last=abc", "days=99999"):
        refused = site.client.get(f"/decisions?{bad}", headers=HTML)
        assert refused.status_code == 400, (bad, refused.status_code)
        assert "must be a whole number" in refused.text
