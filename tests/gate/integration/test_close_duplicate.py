"""``github.issue_close_duplicate`` through the whole gate against the sandbox forge over HTTP:
approve, notice, wait (the due time is made to pass through the store, never by sleeping),
close; objections; chains and circles; dropped responses; exactly one notice and one close."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from conftest import World, execution_state, make_due, make_executor, make_reconciler
from fixtures_github import SERVICE_LOGIN
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.bootstrap.app import migrate
from resolveflow.domain.records import ExecutionState
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import AlreadyExists, InvalidInput, PolicyViolation
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import (
    ActionChanges,
    action_digest,
    build_close_duplicate,
    execution_marker,
)
from resolveflow.gate.quiet import DEFAULT_QUIET
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.sandbox.forge.server import DropAfterWrite, FakeGitHubServer, Status
from resolveflow.store import migrate as migrations
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


# --- one close-as-duplicate in flight per issue --------------------------------------------


def notices(fake: FakeGitHubServer, number: int = 5) -> list[dict[str, Any]]:
    """The notices on the forge: comments by the executor's account carrying a marker."""
    return [
        c
        for c in fake.comments(REPO, number)
        if c["user"]["login"] == SERVICE_LOGIN and "<!-- resolveflow:action=" in c["body"]
    ]


def test_a_second_close_as_duplicate_of_one_issue_is_refused_naming_the_first(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    first = propose(db, world, github_client, issue=5, of=3)
    reads = issues.requests_received
    for of, comment in ((7, None), (3, "Closing: same crash as #3.")):
        with pytest.raises(AlreadyExists) as refused:
            propose(db, world, github_client, issue=5, of=of, comment=comment)
        assert refused.value.message == (
            f"{REPO}#5 already has a close-as-duplicate in flight: proposal {first.id} "
            "(as a duplicate of #3); reject it, or wait until it ends, to propose another"
        )
    assert issues.requests_received == reads  # refused before GitHub was asked anything
    propose(db, world, github_client, issue=9, of=3)  # another issue is free

    approve(db, world, first)
    make_executor(db, github_client).run_due()
    make_executor(db, github_client).run_due()
    assert len(notices(issues)) == 1

    # The close withdrawn (an objection): the issue may be proposed again, by a new decision.
    [notice] = notices(issues)
    issues.add_reaction(REPO, 5, "-1", user="carol", comment_id=notice["id"])
    waiting = execution_state(db, world, execution_of(db, world, first))
    make_due(superuser, waiting.id)
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, waiting.id).state is ExecutionState.PARTIAL
    propose(db, world, github_client, issue=5, of=7)


def execution_of(db: Database, world: World, proposal: Any) -> Any:
    with db.tenant(world.tenant.id) as conn:
        row = conn.execute(
            "SELECT id FROM executions WHERE proposal_id = %s", [proposal.id]
        ).fetchone()
    assert row is not None
    return row["id"]


def test_a_rejected_close_as_duplicate_lets_the_issue_go_and_an_edit_claims_it_again(
    db: Database, world: World, issues: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    first = propose(db, world, github_client, issue=5, of=3)
    approvals.reject(db, world.approver(db), first.id, "not a duplicate")
    second = propose(db, world, github_client, issue=5, of=7)
    # Editing the rejected one would put two in flight: the database refuses the new version.
    with pytest.raises(AlreadyExists, match="another close-as-duplicate of this issue"):
        proposals.edit_proposal(
            db, world.requester(db), first.id, ActionChanges(comment="Duplicate of #3, really.")
        )
    approve(db, world, second)
    make_executor(db, github_client).run_due()
    assert len(notices(issues)) == 1 and "#7" in notices(issues)[0]["body"]


def _propose_as_before_the_claims(
    database_url: str, world: World, requester_id: Any, of: int, comment: str
) -> Any:
    """A close-as-duplicate proposal of #5 inserted as a release without the claims did (its
    trigger off): two such lineages are live for one issue, as data from before could be."""
    action = build_close_duplicate(REPO, 5, of, 72, comment)
    proposal_id = uuid.uuid4()
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SET session_replication_role = replica")
        return proposal_store.insert_proposal(
            conn,
            proposal_id=proposal_id,
            tenant_id=world.tenant.id,
            lineage_id=proposal_id,
            version=1,
            action=action.canonical(),
            digest=action_digest(action),
            author_kind="principal",
            created_by=requester_id,
            run_id=None,
            note=None,
        )


def test_two_executions_at_once_for_one_issue_post_one_notice(
    db: Database,
    world: World,
    issues: FakeGitHubServer,
    github_client: GitHubKitClient,
    database_url: str,
) -> None:
    requester = world.requester(db)
    lineages = [
        _propose_as_before_the_claims(database_url, world, requester.id, of, f"Same as #{of}.")
        for of in (3, 7)
    ]
    executions = [approve(db, world, proposal).execution.id for proposal in lineages]
    start = threading.Barrier(2)

    def run() -> None:
        executor = make_executor(db, github_client)
        start.wait(timeout=30)
        executor.run_due()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    make_executor(db, github_client).run_due()  # whatever one executor left, the other takes

    assert len(notices(issues)) == 1, notices(issues)
    after = {e: execution_state(db, world, e) for e in executions}
    posted = [e for e, x in after.items() if x.comment_id is not None]
    refused = [x for x in after.values() if x.state is ExecutionState.FAILED]
    assert len(posted) == 1 and len(refused) == 1, after
    winner = lineages[executions.index(posted[0])]
    assert refused[0].detail == (
        f"refused before sending: {REPO}#5 already has a close-as-duplicate in flight: "
        f"proposal {winner.id} (as a duplicate of #{winner.action['original']}); reject it, "
        "or wait until it ends, to propose another"
    )


@pytest.fixture
def pre_0036_url(pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database with only the migrations before the claims (0036) applied."""
    name = f"t_pre36_{uuid.uuid4().hex[:10]}"
    root = pg_server.get_uri()
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    url = pg_server.get_uri(name)
    earlier = [m for m in migrations.available_migrations() if m.version < "0036"]
    with (
        monkeypatch.context() as patch,
        psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn,
    ):
        patch.setattr(migrations, "available_migrations", lambda: earlier)
        migrations.upgrade(conn)
    yield url
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


def _old_proposal(owner: psycopg.Connection[Any], tenant: Any, issue: int, of: int) -> Any:
    action = build_close_duplicate(REPO, issue, of, 72, f"Same as #{of}.")
    pid = uuid.uuid4()
    owner.execute(
        "INSERT INTO proposals (id, tenant_id, lineage_id, version, action, digest, author_kind)"
        " VALUES (%s, %s, %s, 1, %s, %s, 'principal')",
        [pid, tenant, pid, Jsonb(action.canonical()), action_digest(action)],
    )
    return pid, action_digest(action)


def test_the_migration_gives_each_issue_one_claim_the_noticed_lineage_first(
    pre_0036_url: str,
) -> None:
    with psycopg.connect(pre_0036_url, autocommit=True, row_factory=dict_row) as owner:
        row = owner.execute("INSERT INTO tenants (name) VALUES ('acme') RETURNING id").fetchone()
        tenant = row["id"]  # type: ignore[index]
        alex = owner.execute(
            "INSERT INTO principals (tenant_id, subject, roles, token_hash)"
            " VALUES (%s, 'alex', '{approver}', %s) RETURNING id",
            [tenant, "a" * 64],
        ).fetchone()["id"]  # type: ignore[index]
        older, _ = _old_proposal(owner, tenant, 5, 3)
        noticed, digest = _old_proposal(owner, tenant, 5, 7)  # newer, but its notice is out
        rejected, rejected_digest = _old_proposal(owner, tenant, 9, 3)
        approval = owner.execute(
            "INSERT INTO approvals (tenant_id, proposal_id, digest, decision, principal_id,"
            " expires_at) VALUES (%s, %s, %s, 'approved', %s, now() + interval '1 day')"
            " RETURNING id",
            [tenant, noticed, digest, alex],
        ).fetchone()["id"]  # type: ignore[index]
        owner.execute(
            "INSERT INTO executions (tenant_id, proposal_id, approval_id, digest,"
            " idempotency_key, comment_id) VALUES (%s, %s, %s, %s, %s, 123)",
            [tenant, noticed, approval, digest, f"{tenant}:{digest}"],
        )
        owner.execute(
            "INSERT INTO approvals (tenant_id, proposal_id, digest, decision, principal_id,"
            " reason) VALUES (%s, %s, %s, 'rejected', %s, 'no')",
            [tenant, rejected, rejected_digest, alex],
        )

    migrate(pre_0036_url)
    with psycopg.connect(pre_0036_url, autocommit=True, row_factory=dict_row) as owner:
        claims = owner.execute(
            "SELECT lineage_id, repository, issue, released_at FROM close_duplicate_claims"
        ).fetchall()
    assert claims == [
        {"lineage_id": noticed, "repository": REPO, "issue": 5, "released_at": None}
    ], (older, claims)
