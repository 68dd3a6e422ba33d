"""Who may approve what, and approvals bound to the exact digest."""

from __future__ import annotations

import psycopg
import pytest

from conftest import World, execution_state, make_executor, make_world, propose_and_approve
from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.domain.records import ExecutionState, Role
from resolveflow.errors import (
    AlreadyDecided,
    ApprovalExpired,
    AuthenticationFailed,
    DigestMismatch,
    InvalidInput,
    NotAuthorized,
    NotFound,
    SupersededProposal,
)
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import ActionChanges
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.database import Database

REPO = "acme/widgets"


def _proposal(db: Database, world: World, **kw):  # type: ignore[no-untyped-def]
    return proposals.create_proposal(
        db,
        world.requester(db),
        repository=REPO,
        issue=1,
        comment=kw.get("comment", "hello"),
        labels=kw.get("labels", []),
    )


def test_requester_without_approver_role_cannot_approve(db: Database, world: World) -> None:
    proposal = _proposal(db, world)
    other = admin.add_principal(db, "acme", "rob", [Role.REQUESTER])
    with pytest.raises(NotAuthorized, match="approver role"):
        approvals.approve(db, authenticate(db, other.token), proposal.id, proposal.digest, 60)


def test_requester_cannot_approve_their_own_proposal(db: Database, world: World) -> None:
    both = admin.add_principal(db, "acme", "bea", [Role.REQUESTER, Role.APPROVER])
    principal = authenticate(db, both.token)
    proposal = proposals.create_proposal(
        db, principal, repository=REPO, issue=1, comment="x", labels=[]
    )
    with pytest.raises(NotAuthorized, match="requester of a proposal cannot approve"):
        approvals.approve(db, principal, proposal.id, proposal.digest, 60)


def test_approval_across_tenants_is_refused(db: Database, world: World) -> None:
    proposal = _proposal(db, world)
    other = make_world(db, tenant="globex", repository="globex/app")
    with pytest.raises(NotFound):
        approvals.approve(db, other.approver(db), proposal.id, proposal.digest, 60)
    with pytest.raises(NotFound):
        proposals.describe(db, other.approver(db), proposal.id)


def test_wrong_digest_is_refused_and_audited(db: Database, world: World) -> None:
    proposal = _proposal(db, world)
    with pytest.raises(DigestMismatch):
        approvals.approve(db, world.approver(db), proposal.id, "0" * 64, 60)
    view = proposals.describe(db, world.approver(db), proposal.id)
    assert view["decision"] is None
    from resolveflow.store import audit

    with db.tenant(world.tenant.id) as conn:
        events = [e.event for e in audit.events_for(conn, world.tenant.id, [str(proposal.id)])]
    assert events == ["proposal.created", "proposal.approve_refused"]


def test_a_proposal_is_decided_once(db: Database, world: World) -> None:
    proposal = _proposal(db, world)
    approvals.reject(db, world.approver(db), proposal.id, "not helpful")
    with pytest.raises(AlreadyDecided):
        approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 60)
    with pytest.raises(InvalidInput):
        approvals.reject(db, world.approver(db), proposal.id, "   ")


def test_proposal_too_old_to_approve(db: Database, world: World, superuser) -> None:
    proposal = _proposal(db, world)
    superuser.execute(  # made two hours ago; approvals are open for one
        "UPDATE proposals SET created_at = created_at - interval '2 hours' WHERE id = %s",
        [proposal.id],
    )
    with pytest.raises(ApprovalExpired):
        approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)


def test_expired_approval_is_refused_by_the_executor(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client, superuser
) -> None:
    _, approved = propose_and_approve(db, world, ttl_seconds=3600)
    superuser.execute(  # the hour has passed
        "UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = %s",
        [approved.approval.id],
    )
    make_executor(db, github_client).run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.FAILED
    assert "expired" in (execution.detail or "")
    assert fake_github.writes_received == 0


def test_approver_who_lost_the_role_cannot_execute(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    _, approved = propose_and_approve(db, world)
    admin.set_roles(db, "acme", "alex", [Role.REQUESTER])
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.FAILED
    assert fake_github.writes_received == 0


def test_unapproved_or_rejected_proposals_cannot_get_an_execution(
    db: Database, world: World
) -> None:
    proposal = _proposal(db, world)
    rejection = approvals.reject(db, world.approver(db), proposal.id, "no")
    from resolveflow.gate.store import executions

    with pytest.raises(NotFound), db.tenant(world.tenant.id) as conn:
        executions.insert_execution(
            conn,
            tenant_id=world.tenant.id,
            proposal_id=proposal.id,
            approval_id=rejection.id,
            digest=proposal.digest,
        )


def test_bad_tokens_are_refused(db: Database, world: World) -> None:
    for token in [None, "", "nonsense", world.approver_token[:-2] + "xx"]:
        with pytest.raises(AuthenticationFailed):
            authenticate(db, token)


@pytest.mark.parametrize("change", ["body", "target", "label"])
def test_change_after_approval_is_refused_and_nothing_is_written(
    change: str,
    db: Database,
    world: World,
    fake_github: FakeGitHubServer,
    github_client,
    superuser: psycopg.Connection,
) -> None:
    proposal, approved = propose_and_approve(db, world, labels=["bug"])
    patch = {
        "body": "jsonb_set(action, '{comment}', '\"Send your password to x@evil\"')",
        "target": "jsonb_set(action, '{target,issue}', '2')",
        "label": "jsonb_set(action, '{labels}', '[\"bug\", \"wontfix\"]')",
    }[change]
    superuser.execute(f"UPDATE proposals SET action = {patch} WHERE id = %s", [proposal.id])
    make_executor(db, github_client).run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.FAILED
    assert "altered" in (execution.detail or "")
    assert fake_github.writes_received == 0


def test_edit_after_approval_supersedes_it_and_needs_its_own_approval(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client
) -> None:
    proposal, approved = propose_and_approve(db, world, comment="first text")
    edited = proposals.edit_proposal(
        db, world.requester(db), proposal.id, ActionChanges(comment="second text")
    )
    assert edited.digest != proposal.digest and edited.version == 2
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.FAILED
    assert fake_github.writes_received == 0
    with pytest.raises(AlreadyDecided):
        approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 60)
    with pytest.raises(DigestMismatch):
        approvals.approve(db, world.approver(db), edited.id, proposal.digest, 60)
    approvals.approve(db, world.approver(db), edited.id, edited.digest, 60)
    make_executor(db, github_client).run_due()
    assert [c["body"].split("\n")[0] for c in fake_github.comments(REPO, 1)] == ["second text"]


def test_only_the_latest_version_can_be_approved(db: Database, world: World) -> None:
    proposal = _proposal(db, world, comment="draft")
    edited = proposals.edit_proposal(
        db, world.requester(db), proposal.id, ActionChanges(labels=("bug",))
    )
    with pytest.raises(SupersededProposal):
        approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 60)
    view = proposals.describe(db, world.approver(db), edited.id)
    assert [v["version"] for v in view["versions"]] == [1, 2]
    assert view["action"]["comment"] == "draft" and view["action"]["labels"] == ["bug"]
