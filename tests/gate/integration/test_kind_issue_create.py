"""``github.issue_create`` through the whole gate: approve, execute, faults, reconcile, resolve."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import World, attempt_outcomes, execution_state, make_executor, make_reconciler
from fixtures_github import SERVICE_LOGIN
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.domain.records import ExecutionState
from resolveflow.errors import InvalidInput, PolicyViolation, SupersededProposal
from resolveflow.gate import approvals, proposals
from resolveflow.gate import executions as execution_service
from resolveflow.gate.domain.actions import ActionChanges, execution_marker
from resolveflow.sandbox.forge.server import DropAfterWrite, FakeGitHubServer, Status
from resolveflow.store.database import Database

REPO = "acme/widgets"
BODY = "Steps:\n1. start the widget\n2. it crashes\n\n```\nTraceback ...\n```"


def propose(db: Database, world: World, **overrides: Any) -> Any:
    values: dict[str, Any] = {
        "repository": REPO,
        "title": "Widget crashes on start",
        "body": BODY,
        "labels": ["bug"],
        "assignees": [],
        **overrides,
    }
    return proposals.create_issue_proposal(db, world.requester(db), **values)


def approve(db: Database, world: World, proposal: Any) -> Any:
    return approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)


def opened(fake: FakeGitHubServer) -> list[dict[str, Any]]:
    """Issues the executor opened (issue #1 is the fixture's)."""
    return [issue for issue in fake.issues(REPO) if issue["number"] != 1]


def test_an_approved_issue_is_created_once_exactly_as_approved_with_the_marker(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    fake_github.add_repo(REPO, pushers=["alice"])
    proposal = propose(db, world, assignees=["Alice"], labels=["bug", "needs-triage"])
    approved = approve(db, world, proposal)
    make_executor(db, github_client).run_due()
    make_executor(db, github_client).run_due()  # nothing left to do

    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.SENT
    [issue] = opened(fake_github)
    assert issue["title"] == "Widget crashes on start"
    assert issue["body"] == f"{BODY}\n\n{execution_marker(str(after.id))}"
    assert sorted(label["name"] for label in issue["labels"]) == ["bug", "needs-triage"]
    assert [person["login"] for person in issue["assignees"]] == ["alice"]
    assert issue["user"]["login"] == SERVICE_LOGIN
    assert after.result_ref == str(issue["number"])
    assert after.result_url == issue["html_url"]
    assert fake_github.writes_received == 1


def test_labels_dropped_by_github_make_the_execution_partial(
    db: Database, world: World, fake_github: FakeGitHubServer
) -> None:
    # GitHub silently drops labels and assignees when the account may not push.
    fake_github.register_token("outsider-token", "outsider")
    proposal = propose(db, world, labels=["bug"])
    approved = approve(db, world, proposal)
    with GitHubKitClient(fake_github.url, "outsider-token", timeout_seconds=1.0) as client:
        make_executor(db, client).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.PARTIAL
    assert after.detail == "issue created, but GitHub dropped labels bug"
    assert len(opened(fake_github)) == 1


def test_a_dropped_response_ends_unknown_and_reconciliation_finds_the_one_issue(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    approved = approve(db, world, propose(db, world))
    fake_github.inject(DropAfterWrite(), method="POST", path=f"/repos/{REPO}/issues")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN
    assert len(opened(fake_github)) == 1

    [settled] = make_reconciler(db, github_client).run()
    after = execution_state(db, world, approved.execution.id)
    assert settled.state is ExecutionState.SENT
    assert after.state is ExecutionState.SENT
    [issue] = opened(fake_github)
    assert after.result_ref == str(issue["number"])
    assert fake_github.writes_received == 1  # nothing was resent
    make_executor(db, github_client).run_due()
    assert len(opened(fake_github)) == 1


def test_reconciliation_ignores_copies_by_others_and_altered_bodies(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    approved = approve(db, world, propose(db, world))
    fake_github.inject(Status(502), method="POST", path=f"/repos/{REPO}/issues")
    make_executor(db, github_client).run_due()
    execution_id = str(approved.execution.id)
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN
    # A stranger copies the exact text with the marker; the bot's own issue with one changed
    # character does not count either.
    marked = f"{BODY}\n\n{execution_marker(execution_id)}"
    fake_github.add_issue(REPO, 50, "Widget crashes on start", marked, user="stranger")
    fake_github.add_issue(REPO, 51, "Widget crashes on start", marked + ".", user=SERVICE_LOGIN)

    [settled] = make_reconciler(db, github_client).run()
    assert settled.state is ExecutionState.UNKNOWN
    after = execution_service.resolve(
        db, world.approver(db), approved.execution.id, was_sent=False, note="looked on GitHub"
    )
    assert after.state is ExecutionState.NOT_SENT


def test_a_definite_refusal_fails_and_writes_nothing(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    approved = approve(db, world, propose(db, world))
    fake_github.inject(Status(422), method="POST", path=f"/repos/{REPO}/issues")
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.FAILED
    assert attempt_outcomes(db, world, after.id) == [("create", "rejected")]
    assert opened(fake_github) == []


def test_a_label_removed_after_approval_is_refused_before_anything_is_sent(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    approved = approve(db, world, propose(db, world, labels=["question"]))
    fake_github.remove_repo_label(REPO, "question")
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.FAILED
    assert after.detail == "refused before sending: label question does not exist in acme/widgets"
    assert fake_github.writes_received == 0


def test_edit_writes_a_new_version_and_the_old_digest_no_longer_approves(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    first = propose(db, world)
    second = proposals.edit_proposal(
        db, world.requester(db), first.id, ActionChanges(title="Widget crashes at start-up")
    )
    assert second.version == 2 and second.digest != first.digest
    with pytest.raises(SupersededProposal):
        approve(db, world, first)
    with pytest.raises(InvalidInput, match="has a body, not a comment"):
        proposals.edit_proposal(db, world.requester(db), second.id, ActionChanges(comment="x"))
    approve(db, world, second)
    make_executor(db, github_client).run_due()
    [issue] = opened(fake_github)
    assert issue["title"] == "Widget crashes at start-up"


def test_a_repository_off_the_allowlist_cannot_be_proposed(db: Database, world: World) -> None:
    with pytest.raises(PolicyViolation):
        propose(db, world, repository="acme/elsewhere")


def test_rejection_writes_nothing(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    proposal = propose(db, world)
    approvals.reject(db, world.approver(db), proposal.id, "duplicate of #1")
    make_executor(db, github_client).run_due()
    assert opened(fake_github) == []
    assert proposals.describe(db, world.approver(db), proposal.id)["decision"] == "rejected"


def _opened_but_settled_not_sent(
    db: Database, world: World, fake: FakeGitHubServer, github: GitHubKitClient
) -> Any:
    """The issue is opened, the answer is lost, and a person wrongly says "not sent"."""
    proposal = propose(db, world)
    approved = approve(db, world, proposal)
    fake.inject(DropAfterWrite(), method="POST", path=f"/repos/{REPO}/issues")
    make_executor(db, github).run_due()
    execution_service.resolve(
        db, world.approver(db), approved.execution.id, was_sent=False, note="did not look"
    )
    assert len(opened(fake)) == 1
    return proposal, approved


def test_the_same_issue_approved_again_finds_the_one_opened_earlier(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    _, first = _opened_but_settled_not_sent(db, world, fake_github, github_client)
    again = approve(db, world, propose(db, world))  # the same issue, proposed and approved again
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, again.execution.id)
    [issue] = opened(fake_github)  # not opened twice
    assert after.state is ExecutionState.SENT
    assert after.detail == f"not written again: earlier execution {first.execution.id} delivered it"
    assert (after.result_ref, after.result_url) == (str(issue["number"]), issue["html_url"])
    assert fake_github.writes_received == 1


def test_another_version_of_an_issue_opened_earlier_is_refused(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    proposal, first = _opened_but_settled_not_sent(db, world, fake_github, github_client)
    second = proposals.edit_proposal(
        db, world.requester(db), proposal.id, ActionChanges(title="Widget crashes at start-up")
    )
    approved = approve(db, world, second)
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, approved.execution.id)
    [issue] = opened(fake_github)
    assert after.state is ExecutionState.FAILED
    assert after.detail is not None
    assert f"an earlier version (execution {first.execution.id}) opened {issue['html_url']}" in (
        after.detail
    )
    assert fake_github.writes_received == 1
