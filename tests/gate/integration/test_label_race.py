"""The issue update replaces the whole label set: the executor writes the labels the issue has
when it executes plus the approved ones, so a maintainer's label added (or removed) meanwhile is
kept as they left it; and the approved labels' rationale and confidence go with them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from conftest import World, execution_state, make_executor, propose_and_approve
from resolveflow.adapters.github import intent_form
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.domain.records import ExecutionState
from resolveflow.domain.vocabulary import Confidence
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import LabelNote
from resolveflow.sandbox.forge.server import FakeGitHubServer, Hold
from resolveflow.store.database import Database

REPO = "acme/widgets"


@pytest.fixture(autouse=True)
def _fresh_host_memory() -> Iterator[None]:
    intent_form.forget_hosts()
    yield


def _labels(fake_github: FakeGitHubServer) -> list[str]:
    return sorted(fake_github.issue_labels(REPO, 1))


def test_labels_added_or_removed_after_the_proposal_stay_as_the_maintainer_left_them(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    fake_github.add_issue_event(REPO, 1, "labeled", actor="maintainer", label="needs-triage")
    _, approved = propose_and_approve(db, world, labels=["bug"])
    fake_github.add_issue_event(REPO, 1, "labeled", actor="maintainer", label="question")
    fake_github.add_issue_event(REPO, 1, "unlabeled", actor="maintainer", label="needs-triage")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    assert _labels(fake_github) == ["bug", "question"]


def test_the_approved_labels_carry_their_rationale_and_confidence(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    note = LabelNote(label="bug", rationale="The report says it crashes.", confidence="HIGH")
    proposal = proposals.create_proposal(
        db,
        world.requester(db),
        repository=REPO,
        issue=1,
        comment=None,
        labels=["bug"],
        label_notes=(note,),
    )
    approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)
    make_executor(db, github_client).run_due()
    assert fake_github.label_intent(REPO, 1, "bug") == ("The report says it crashes.", "HIGH")
    assert note.confidence is Confidence.HIGH


def _race_between_read_and_write(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    """The executor's PATCH is held by the forge after its read; the maintainer labels the
    issue; then the PATCH goes on."""
    _, approved = propose_and_approve(db, world, comment=None, labels=["bug"])
    hold = Hold(threading.Event())
    fake_github.inject(hold, method="PATCH", path=f"/repos/{REPO}/issues/1$")
    runner = threading.Thread(target=make_executor(db, github_client).run_due)
    runner.start()
    assert hold.arrived.wait(30)
    fake_github.add_issue_event(REPO, 1, "labeled", actor="maintainer", label="question")
    hold.release.set()
    runner.join(60)
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT


def test_a_label_added_between_the_read_and_the_write_survives_where_if_match_is_honoured(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    fake_github.behave(honour_if_match=True)
    _race_between_read_and_write(db, world, fake_github, github_client)
    assert _labels(fake_github) == ["bug", "question"]
    patches = [w.applied for w in fake_github.write_log if w.method == "PATCH"]
    assert patches == [False, True]  # 412 on the stale read, then the set read again


def test_without_if_match_the_read_to_write_window_remains(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    """What GitHub documents today: no conditional write, so a label added inside the window
    (one request long) is replaced by the set read before it. Said in docs/github.md."""
    _race_between_read_and_write(db, world, fake_github, github_client)
    assert _labels(fake_github) == ["bug"]


def test_approved_labels_go_as_github_suggestions_when_the_proposal_says_so(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    note = LabelNote(label="bug", rationale="The report says it crashes.", confidence="MEDIUM")
    proposal = proposals.create_proposal(
        db,
        world.requester(db),
        repository=REPO,
        issue=1,
        comment=None,
        labels=["bug"],
        label_notes=(note,),
        suggest=True,
    )
    assert proposal.action["suggest"] is True  # in what the approver sees and the digest
    approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)
    make_executor(db, github_client).run_due()
    assert _labels(fake_github) == []  # not applied: waiting for a maintainer in GitHub
    [pending] = fake_github.issue_suggestions(REPO, 1)
    assert (pending.action, pending.target_value, pending.confidence) == (
        "add_label",
        "bug",
        "MEDIUM",
    )
