"""``github.issue_close_duplicate`` through the whole gate against the sandbox forge over HTTP:
approve, notice, wait (the due time is made to pass through the store, never by sleeping),
close; objections; chains and circles; dropped responses; exactly one notice and one close."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from conftest import World, execution_state, make_due, make_executor, make_reconciler
from fixtures_github import SERVICE_LOGIN
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.domain.records import ExecutionState
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import InvalidInput, PolicyViolation
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import build_close_duplicate, execution_marker
from resolveflow.gate.quiet import DEFAULT_QUIET
from resolveflow.sandbox.forge.server import DropAfterWrite, FakeGitHubServer, Status
from resolveflow.store.database import Database

REPO = "acme/widgets"
OLD = "2024-01-01T00:00:00Z"  # before any notice


@pytest.fixture
def issues(fake_github: FakeGitHubServer) -> FakeGitHubServer:
    for number in (3, 5, 7, 9):
        fake_github.add_issue(
            REPO, number, f"Widget bug {number}", "It breaks.", user="reporter", created_at=OLD
        )
    return fake_github


def propose(
    db: Database, world: World, github: GitHubKitClient, issue: int = 5, of: int = 3, **extra: Any
) -> Any:
    return proposals.create_close_duplicate_proposal(
        db, world.requester(db), github, repository=REPO, issue=issue, original=of, **extra
    )


def approve(db: Database, world: World, proposal: Any) -> Any:
    return approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)


def noticed(db: Database, world: World, github: GitHubKitClient, **extra: Any) -> Any:
    """Approve #5 as a duplicate of #3 and let the executor post the notice."""
    approved = approve(db, world, propose(db, world, github, **extra))
    make_executor(db, github).run_due()
    return execution_state(db, world, approved.execution.id)


def issue(fake: FakeGitHubServer, number: int = 5) -> dict[str, Any]:
    return next(i for i in fake.issues(REPO) if i["number"] == number)


def closes(fake: FakeGitHubServer) -> list[Any]:
    return [w for w in fake.write_log if w.method == "PATCH" and w.applied]


def audit_events(db: Database, world: World, execution_id: Any) -> list[tuple[str, dict[str, Any]]]:
    with db.tenant(world.tenant.id) as conn:
        rows = conn.execute(
            "SELECT event, details FROM audit_events WHERE subject_id = %s ORDER BY id",
            [str(execution_id)],
        ).fetchall()
    return [(row["event"], row["details"]) for row in rows]


def test_notice_then_nothing_before_the_due_time_then_one_close_as_duplicate(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    waiting = noticed(db, world, github_client)
    [notice] = issues.comments(REPO, 5)
    assert notice["body"].endswith(execution_marker(str(waiting.id)))
    assert "#3" in notice["body"] and notice["user"]["login"] == SERVICE_LOGIN
    assert waiting.state is ExecutionState.PENDING and waiting.comment_id == notice["id"]
    assert waiting.notice_at is not None
    assert waiting.not_before - waiting.notice_at == timedelta(hours=72)
    assert waiting.detail is not None and "will close after" in waiting.detail

    make_executor(db, github_client).run_due()  # a re-run before the due time does nothing
    assert execution_state(db, world, waiting.id).state is ExecutionState.PENDING
    assert issue(issues)["state"] == "open" and issues.writes_received == 1

    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, waiting.id)
    assert after.state is ExecutionState.SENT, after.detail
    assert after.detail == "closed as a duplicate of #3"
    closed = issue(issues)
    assert (closed["state"], closed["state_reason"]) == ("closed", "duplicate")
    assert closed["closed_by"]["login"] == SERVICE_LOGIN
    assert len(issues.comments(REPO, 5)) == 1 and len(closes(issues)) == 1
    assert issues.writes_received == 2


def _comment(fake: FakeGitHubServer, notice: dict[str, Any]) -> str:
    fake.add_comment_directly(REPO, 5, "Not a duplicate: different stack trace.", "octocat")
    return "octocat commented"


def _thumbs_down_on_notice(fake: FakeGitHubServer, notice: dict[str, Any]) -> str:
    fake.add_reaction(REPO, 5, "-1", user="carol", comment_id=notice["id"])
    return "carol reacted with a thumbs-down to the notice"


def _thumbs_down_on_issue(fake: FakeGitHubServer, notice: dict[str, Any]) -> str:
    fake.add_reaction(REPO, 5, "-1", user="dave")
    return "dave reacted with a thumbs-down to the issue"


def _reopen(fake: FakeGitHubServer, notice: dict[str, Any]) -> str:
    fake.add_issue_event(REPO, 5, "closed", actor="erin")
    fake.add_issue_event(REPO, 5, "reopened", actor="erin")
    return "erin reopened the issue"


def _edit_title(fake: FakeGitHubServer, notice: dict[str, Any]) -> str:
    fake.edit_issue(REPO, 5, title="Widget bug 5 (only on ARM)", actor="frank")
    return "frank edited the issue's title"


def _edit_body(fake: FakeGitHubServer, notice: dict[str, Any]) -> str:
    fake.edit_issue(REPO, 5, body="It breaks, but only on ARM.", actor="grace")
    return "someone edited the issue's title or body"


@pytest.mark.parametrize(
    "objection",
    [_comment, _thumbs_down_on_notice, _thumbs_down_on_issue, _reopen, _edit_title, _edit_body],
)
def test_an_objection_since_the_notice_withdraws_the_close(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
    objection: Any,
) -> None:
    waiting = noticed(db, world, github_client)
    [notice] = issues.comments(REPO, 5)
    expected = objection(issues, notice)
    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()

    after = execution_state(db, world, waiting.id)
    assert after.state is ExecutionState.PARTIAL
    assert after.detail is not None and after.detail.startswith(
        f"notice posted; not closed: {expected}"
    )
    assert issue(issues)["state"] == "open"
    assert (
        closes(issues) == []
        and len([c for c in issues.comments(REPO, 5) if c["user"]["login"] == SERVICE_LOGIN]) == 1
    )
    events = [event for event, _ in audit_events(db, world, waiting.id)]
    assert events[-1] == AuditEvent.EXECUTION_OBJECTED.value


def test_what_is_not_an_objection_still_closes(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    # Before the notice: someone's comment and thumbs-down; after it: the bot's own.
    issues.add_comment_directly(REPO, 5, "Same here.", "octocat", created_at=OLD)
    issues.add_reaction(REPO, 5, "-1", user="carol", created_at=OLD)
    waiting = noticed(db, world, github_client)
    [_, notice] = issues.comments(REPO, 5)
    issues.add_comment_directly(REPO, 5, "Another note from the bot.", SERVICE_LOGIN)
    issues.add_reaction(REPO, 5, "-1", user=SERVICE_LOGIN, comment_id=notice["id"])
    issues.add_reaction(REPO, 5, "+1", user="carol", comment_id=notice["id"])
    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, waiting.id).state is ExecutionState.SENT
    assert issue(issues)["state_reason"] == "duplicate"


def test_an_issue_closed_meanwhile_is_left_alone_and_said_so(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    waiting = noticed(db, world, github_client)
    issues.add_issue_event(REPO, 5, "closed", actor="maintainer")
    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, waiting.id)
    assert after.state is ExecutionState.PARTIAL
    assert after.detail == (
        "notice posted; nothing to do: the issue was already closed by maintainer (completed)"
    )
    assert closes(issues) == []


# --- chains and circles --------------------------------------------------------------------


def test_proposal_refuses_itself_a_closed_duplicate_and_a_circle(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    with pytest.raises(InvalidInput, match="cannot be a duplicate of itself"):
        propose(db, world, github_client, issue=5, of=5)
    # #5 closed as a duplicate of #3 through the gate: #9 may not point to #5.
    waiting = noticed(db, world, github_client)
    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()
    with pytest.raises(PolicyViolation, match=r"#5 is closed as a duplicate of #3: propose #3"):
        propose(db, world, github_client, issue=9, of=5)
    # #7 is proposed as a duplicate of #9: #9 as a duplicate of #7 is a circle.
    propose(db, world, github_client, issue=7, of=9)
    with pytest.raises(PolicyViolation, match="circle"):
        propose(db, world, github_client, issue=9, of=7)


def test_an_original_closed_as_duplicate_by_hand_is_refused_without_a_name(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
) -> None:
    github_client.close_issue_as_duplicate(RepoName.parse(REPO), 7, None)
    with pytest.raises(PolicyViolation, match="#7 is closed as a duplicate: propose the issue"):
        propose(db, world, github_client, issue=9, of=7)


def test_the_chain_is_checked_again_before_the_notice_and_before_the_close(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    # Before the notice: the original was closed as a duplicate after the approval.
    approved = approve(db, world, propose(db, world, github_client, issue=9, of=7))
    github_client.close_issue_as_duplicate(RepoName.parse(REPO), 7, None)
    make_executor(db, github_client).run_due()
    refused = execution_state(db, world, approved.execution.id)
    assert refused.state is ExecutionState.FAILED
    assert "#7 is closed as a duplicate" in (refused.detail or "")
    assert issues.comments(REPO, 9) == []

    # Before the close: a circle recorded meanwhile (two proposals racing past each other).
    waiting = noticed(db, world, github_client)  # #5 as a duplicate of #3
    circle = build_close_duplicate(REPO, 3, 5, 72)
    proposals._insert_first_version(
        db, world.requester(db), circle, None, None, "principal", DEFAULT_QUIET
    )
    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, waiting.id)
    assert after.state is ExecutionState.PARTIAL
    assert "circle" in (after.detail or "")
    assert issue(issues)["state"] == "open"


# --- dropped responses and reconciliation -------------------------------------------------


def test_a_dropped_notice_is_found_by_its_marker_and_the_grace_runs_from_it(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    approved = approve(db, world, propose(db, world, github_client))
    issues.inject(DropAfterWrite(), method="POST", path=f"/repos/{REPO}/issues/5/comments")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.UNKNOWN

    [settled] = make_reconciler(db, github_client).run()
    assert settled.state is ExecutionState.PENDING
    make_executor(db, github_client).run_due()  # schedules the wait from the notice
    waiting = execution_state(db, world, approved.execution.id)
    [notice] = issues.comments(REPO, 5)
    assert waiting.state is ExecutionState.PENDING and waiting.comment_id == notice["id"]
    assert waiting.notice_at is not None
    assert waiting.notice_at.isoformat().replace("+00:00", "Z") == notice["created_at"]
    assert waiting.not_before - waiting.notice_at == timedelta(hours=72)

    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, waiting.id).state is ExecutionState.SENT
    assert len(issues.comments(REPO, 5)) == 1 and len(closes(issues)) == 1


def test_a_dropped_close_is_confirmed_by_the_issue_history_never_sent_twice(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    waiting = noticed(db, world, github_client)
    make_due(superuser, waiting.id)
    issues.inject(DropAfterWrite(), method="PATCH", path=f"/repos/{REPO}/issues/5")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, waiting.id).state is ExecutionState.UNKNOWN

    [settled] = make_reconciler(db, github_client).run()
    assert settled.state is ExecutionState.SENT
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, waiting.id).state is ExecutionState.SENT
    assert len(issues.comments(REPO, 5)) == 1 and len(closes(issues)) == 1
    assert issue(issues)["state_reason"] == "duplicate"


def test_a_close_that_never_arrived_is_checked_again_and_sent_once(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    waiting = noticed(db, world, github_client)
    make_due(superuser, waiting.id)
    issues.inject(Status(502), method="PATCH", path=f"/repos/{REPO}/issues/5")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, waiting.id).state is ExecutionState.UNKNOWN
    assert issue(issues)["state"] == "open"

    [settled] = make_reconciler(db, github_client).run()
    assert settled.state is ExecutionState.PENDING
    make_executor(db, github_client).run_due()
    after = execution_state(db, world, waiting.id)
    assert after.state is ExecutionState.SENT
    assert len(closes(issues)) == 1 and len(issues.comments(REPO, 5)) == 1
