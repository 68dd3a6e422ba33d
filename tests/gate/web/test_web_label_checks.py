"""The proposal page and the API run "labels exist" for a proposal without a run by reading the
repository's labels from GitHub (issue 12, item 7), the same check the CLI's `approve` runs: a
missing label is red and refused; a GitHub that cannot be reached says so and refuses."""

from __future__ import annotations

import re

from fixtures_web import REPO, Web
from resolveflow.domain.records import Proposal
from resolveflow.gate import proposals as proposal_service
from resolveflow.sandbox.forge.faults import Status

pytest_plugins = ["fixtures_web"]

HTML = {"Accept": "text/html"}


def proposed(web: Web, *labels: str) -> Proposal:
    return proposal_service.create_proposal(
        web.db,
        web.world.requester(web.db),
        repository=REPO,
        issue=1,
        comment="hi",
        labels=list(labels),
    )


def labels_gate(web: Web, proposal: Proposal) -> tuple[str, str]:
    headers = {**HTML, **web.api(web.world.approver_token)}
    html = web.client.get(f"/proposals/{proposal.id}", headers=headers).text
    [gate] = re.findall(
        r'<li class="gate (ok|fail)"><strong>. labels exist</strong>: ([^<]+)</li>', html
    )
    return gate


def approve(web: Web, proposal: Proposal) -> tuple[int, str]:
    response = web.client.post(
        f"/api/v1/proposals/{proposal.id}/approve",
        json={"digest": proposal.digest},
        headers=web.api(web.world.approver_token),
    )
    return response.status_code, response.text


def test_a_label_the_repository_lacks_is_red_on_the_page_and_refused(web: Web) -> None:
    missing = proposed(web, "bug", "no-such-label")
    assert labels_gate(web, missing) == ("fail", f"label no-such-label does not exist in {REPO}")
    status, body = approve(web, missing)
    assert status == 403 and "no-such-label does not exist" in body, body

    fine = proposed(web, "bug")
    assert labels_gate(web, fine) == ("ok", "every label exists in the repository")
    assert approve(web, fine)[0] == 202
    assert web.fake.writes_received == 0


def test_labels_that_cannot_be_read_are_said_so_and_refuse_the_approval(web: Web) -> None:
    proposal = proposed(web, "bug")
    web.fake.inject(Status(503), method="GET", path=f"/repos/{REPO}/labels")
    state, reason = labels_gate(web, proposal)
    assert state == "fail" and reason.startswith("could not check labels: "), reason
    web.fake.inject(Status(503), method="GET", path=f"/repos/{REPO}/labels")
    status, body = approve(web, proposal)
    assert status == 503 and "could not check labels: " in body, body
    assert web.fake.pending_faults == 0
    assert (
        proposal_service.describe(web.db, web.world.approver(web.db), proposal.id)["decision"]
        is None
    )
