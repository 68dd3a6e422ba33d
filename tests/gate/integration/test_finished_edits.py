"""Issue 11, finding 7: a proposal whose execution has started or ended cannot be edited.

An execution that may have written something (``sending``, ``sent``, ``partial``, ``unknown``, or
``pending`` once an attempt was made: the comment may be posted while the labels wait out a rate
limit) freezes its lineage: a new version could be approved and posted as a second write. One that
certainly wrote nothing and never will (``failed``, ``not_sent``, or ``pending`` with no attempt,
which the executor refuses once a newer version exists) leaves the lineage open to a new version.

A version written after the posted one (a record from before this rule) is never offered for
approval: the proposal page shows no passing decision for it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from conftest import World, execution_state, make_executor, propose_and_approve
from resolveflow.domain.records import ExecutionState, Proposal
from resolveflow.errors import InvalidTransition
from resolveflow.gate import approvals, proposals
from resolveflow.gate import executions as execution_service
from resolveflow.gate.domain.actions import ActionChanges, action_digest, build_action
from resolveflow.gate.store import executions as execution_store
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.sandbox.forge.server import FakeGitHubServer, SecondaryRateLimit, Status
from resolveflow.store.database import Database
from resolveflow.web import views

REPO = "acme/widgets"
TTL = 3600


def _versions(db: Database, world: World, proposal: Proposal) -> list[int]:
    with db.tenant(world.tenant.id) as conn:
        rows = proposal_store.lineage_versions(conn, world.tenant.id, proposal.lineage_id)
    return [row.version for row in rows]


def _edit(db: Database, world: World, proposal: Proposal, text: str = "v2") -> Proposal:
    return proposals.edit_proposal(
        db, world.requester(db), proposal.id, ActionChanges(comment=text)
    )


# --- ways an execution comes to have started or ended ------------------------------------------


def _sent(db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any) -> None:
    make_executor(db, github).run_due()


def _partial(
    db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any
) -> None:
    fake.inject(Status(422), method="PATCH", path=r"/issues/\d+$")
    make_executor(db, github).run_due()


def _unknown(
    db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any
) -> None:
    fake.inject(Status(502))
    make_executor(db, github).run_due()


def _pending_after_the_comment(
    db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any
) -> None:
    """The comment is posted; the labels wait out a rate limit: pending, yet half written."""
    fake.inject(SecondaryRateLimit(retry_after=60), method="PATCH", path=r"/issues/\d+$")
    make_executor(db, github).run_due()


def _sending(
    db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any
) -> None:
    with db.tenant(world.tenant.id) as conn:
        claimed = execution_store.claim_by_id(conn, world.tenant.id, execution.id, "someone", 30.0)
    assert claimed is not None


STARTED: dict[str, tuple[Callable[..., None], ExecutionState]] = {
    "sent": (_sent, ExecutionState.SENT),
    "partial": (_partial, ExecutionState.PARTIAL),
    "unknown": (_unknown, ExecutionState.UNKNOWN),
    "pending after the comment": (_pending_after_the_comment, ExecutionState.PENDING),
    "sending": (_sending, ExecutionState.SENDING),
}


@pytest.mark.parametrize("how", list(STARTED))
def test_an_edit_is_refused_once_an_execution_started_or_ended(
    how: str, db: Database, world: World, fake_github: FakeGitHubServer, github_client: Any
) -> None:
    proposal, approved = propose_and_approve(db, world, comment="v1", labels=["bug"])
    make_it, state = STARTED[how]
    make_it(db, world, fake_github, github_client, approved.execution)
    assert execution_state(db, world, approved.execution.id).state is state
    writes = fake_github.writes_received

    with pytest.raises(InvalidTransition, match="cannot be edited"):
        _edit(db, world, proposal)
    assert _versions(db, world, proposal) == [1]
    assert fake_github.writes_received == writes


def test_the_reported_case_v2_sent_then_no_v3(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: Any
) -> None:
    """The finding as reported: v1 edited to v2 before approval, v2 approved and sent."""
    first = proposals.create_proposal(
        db, world.requester(db), repository=REPO, issue=1, comment="v1", labels=[]
    )
    second = _edit(db, world, first, "v2")
    approved = approvals.approve(db, world.approver(db), second.id, second.digest, TTL)
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    for base in (first, second):  # editing through any version of the lineage
        with pytest.raises(InvalidTransition, match=r"version 2 .* cannot be edited"):
            _edit(db, world, base, "v3")
    assert _versions(db, world, first) == [1, 2]


def _failed(
    db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any
) -> None:
    fake.inject(Status(404))
    make_executor(db, github).run_due()


def _not_sent(
    db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any
) -> None:
    fake.inject(Status(502))
    make_executor(db, github).run_due()
    execution_service.resolve(db, world.approver(db), execution.id, was_sent=False, note="none")


def _pending_untouched(
    db: Database, world: World, fake: FakeGitHubServer, github: Any, execution: Any
) -> None:
    """Approved, never claimed: the edit supersedes it and the executor refuses the old text."""


NOTHING_WRITTEN: dict[str, tuple[Callable[..., None], ExecutionState]] = {
    "failed": (_failed, ExecutionState.FAILED),
    "not_sent": (_not_sent, ExecutionState.NOT_SENT),
    "pending, never attempted": (_pending_untouched, ExecutionState.PENDING),
}


@pytest.mark.parametrize("how", list(NOTHING_WRITTEN))
def test_a_new_version_is_allowed_after_an_execution_that_wrote_nothing(
    how: str, db: Database, world: World, fake_github: FakeGitHubServer, github_client: Any
) -> None:
    proposal, approved = propose_and_approve(db, world, comment="v1")
    make_it, state = NOTHING_WRITTEN[how]
    make_it(db, world, fake_github, github_client, approved.execution)
    assert execution_state(db, world, approved.execution.id).state is state

    second = _edit(db, world, proposal, "v2")
    assert second.version == 2
    again = approvals.approve(db, world.approver(db), second.id, second.digest, TTL)
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, again.execution.id).state is ExecutionState.SENT
    posted = [c["body"].split("\n")[0] for c in fake_github.comments(REPO, 1)]
    assert posted == ["v2"]  # the first version never arrived, the second once
    with pytest.raises(InvalidTransition, match="cannot be edited"):
        _edit(db, world, second, "v3")


def _legacy_version(db: Database, world: World, base: Proposal, comment: str) -> Proposal:
    """A version written after the posted one, as the code before this rule allowed."""
    action = build_action(REPO, 1, comment, [])
    with db.tenant(world.tenant.id) as conn:
        return proposal_store.insert_proposal(
            conn,
            proposal_id=uuid.uuid4(),
            tenant_id=world.tenant.id,
            lineage_id=base.lineage_id,
            version=base.version + 1,
            action=action.canonical(),
            digest=action_digest(action),
            author_kind="principal",
            created_by=world.requester(db).id,
            run_id=base.run_id,
        )


def test_a_version_written_after_the_posted_one_is_not_offered_for_approval(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: Any
) -> None:
    proposal, _ = propose_and_approve(db, world, comment="v1")
    make_executor(db, github_client).run_due()
    later = _legacy_version(db, world, proposal, "v2, after v1 was posted")

    view = views.proposal_page(db, world.approver(db), later.id, TTL)
    assert view["decidable"] is False
    assert view["posted"] == {"id": str(proposal.id), "version": 1, "state": "sent"}
    posted_view = views.proposal_page(db, world.approver(db), proposal.id, TTL)
    assert posted_view["posted"]["id"] == str(proposal.id) and posted_view["decidable"] is False


def test_a_version_written_before_the_edit_rule_cannot_be_approved_once_another_was_sent(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: Any, superuser: Any
) -> None:
    """Versions that already exist (written before edits were refused) stay undecidable through
    the CLI and the API too, not only on the pages."""
    first, approved = propose_and_approve(db, world)
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    later_id = uuid.uuid4()
    superuser.execute(  # v2, as an older release could still have written it after v1 was sent
        "INSERT INTO proposals (id, tenant_id, lineage_id, version, action, digest, author_kind,"
        " created_by) SELECT %s, tenant_id, lineage_id, 2, action, digest, 'principal', created_by"
        " FROM proposals WHERE id = %s",
        (later_id, first.id),
    )
    with pytest.raises(InvalidTransition, match="version 1 of this proposal was already carried"):
        approvals.approve(db, world.approver(db), later_id, first.digest, 3600)
    assert len(fake_github.comments("acme/widgets", 1)) == 1
