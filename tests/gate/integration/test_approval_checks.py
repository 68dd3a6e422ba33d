"""The checks a page shows are the checks ``approve`` runs: same names, same order, same facts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from conftest import World
from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.domain.records import Role
from resolveflow.errors import ResolveFlowError
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import ActionChanges
from resolveflow.store.database import Database

TTL = 3600


def _fresh(db: Database, world: World, su: psycopg.Connection[Any]) -> tuple[Any, Any]:
    return proposals.create_proposal(
        db, world.requester(db), repository=world.repository, issue=1, comment="hi", labels=[]
    ), world.approver(db)


def _own_request(db: Database, world: World, su: psycopg.Connection[Any]) -> tuple[Any, Any]:
    both = admin.add_principal(db, "acme", "sam", [Role.REQUESTER, Role.APPROVER])
    sam = authenticate(db, both.token)
    return proposals.create_issue_proposal(
        db, sam, repository=world.repository, title="t", body="b", labels=[], assignees=[]
    ), sam


def _requester_only(db: Database, world: World, su: psycopg.Connection[Any]) -> tuple[Any, Any]:
    proposal, _ = _fresh(db, world, su)
    return proposal, world.requester(db)


def _superseded(db: Database, world: World, su: psycopg.Connection[Any]) -> tuple[Any, Any]:
    proposal, approver = _fresh(db, world, su)
    proposals.edit_proposal(db, world.requester(db), proposal.id, ActionChanges(comment="v2"))
    return proposal, approver


def _too_old(db: Database, world: World, su: psycopg.Connection[Any]) -> tuple[Any, Any]:
    proposal, approver = _fresh(db, world, su)
    su.execute(
        "UPDATE proposals SET created_at = now() - interval '2 hours' WHERE id = %s",
        (proposal.id,),
    )
    return proposal, approver


def _off_allowlist(db: Database, world: World, su: psycopg.Connection[Any]) -> tuple[Any, Any]:
    proposal, approver = _fresh(db, world, su)
    admin.remove_repository(db, "acme", world.repository)
    return proposal, approver


def _already_rejected(db: Database, world: World, su: psycopg.Connection[Any]) -> tuple[Any, Any]:
    proposal, approver = _fresh(db, world, su)
    approvals.reject(db, approver, proposal.id, "no")
    return proposal, approver


Scenario = Callable[[Database, World, psycopg.Connection[Any]], tuple[Any, Any]]


@pytest.mark.parametrize(
    ("scenario", "failing"),
    [
        (_fresh, None),
        (_own_request, "not your own request"),
        (_requester_only, "approver role"),
        (_superseded, "latest version"),
        (_too_old, "approval window"),
        (_off_allowlist, "repository allowed"),
        (_already_rejected, "undecided"),
    ],
)
def test_approve_refuses_exactly_where_the_page_shows_the_first_red_check(
    db: Database,
    world: World,
    superuser: psycopg.Connection[Any],
    scenario: Scenario,
    failing: str | None,
) -> None:
    proposal, viewer = scenario(db, world, superuser)
    shown = approvals.checks_for(db, viewer, proposal.id, TTL)
    assert [check.name for check in shown][:3] == ["same tenant", "undecided", "approver role"]
    red = [check for check in shown if not check.ok]
    if failing is None:
        assert red == []
        approvals.approve(db, viewer, proposal.id, proposal.digest, TTL)
        return
    assert red[0].name == failing
    with pytest.raises(ResolveFlowError) as refused:
        approvals.approve(db, viewer, proposal.id, proposal.digest, TTL)
    assert refused.value.message == red[0].reason
    assert type(refused.value) is type(red[0].error)
