"""Proposals written before action kinds existed still verify, approve and execute unchanged."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from conftest import World, execution_state, make_executor
from resolveflow.domain.records import ExecutionState
from resolveflow.gate import approvals, proposals
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.database import Database

GOLDEN = json.loads(
    (Path(__file__).parents[2] / "data" / "github_issue_digests_v1.json").read_text("utf-8")
)


def test_rows_stored_by_the_previous_release_approve_and_post_as_approved(
    db: Database,
    world: World,
    superuser: psycopg.Connection[Any],
    fake_github: FakeGitHubServer,
    github_client: Any,
) -> None:
    case = GOLDEN["cases"][0]
    stored = case["stored_action"]
    assert stored["target"] == {"issue": 42, "repository": "acme/widgets"}
    fake_github.add_issue("acme/widgets", 42, "Widget squeaks", "It squeaks.", user="octocat")
    proposal_id = uuid.uuid4()
    requester = world.requester(db)
    # Exactly the row the previous release wrote: its action JSON and its digest, byte for byte.
    superuser.execute(
        "INSERT INTO proposals (id, tenant_id, lineage_id, version, action, digest, author_kind,"
        " created_by) VALUES (%s, %s, %s, 1, %s, %s, 'principal', %s)",
        (proposal_id, world.tenant.id, proposal_id, Jsonb(stored), case["digest"], requester.id),
    )
    shown = proposals.describe(db, world.approver(db), proposal_id)
    assert (shown["kind"], shown["digest"]) == ("github.issue", case["digest"])
    approved = approvals.approve(db, world.approver(db), proposal_id, case["digest"], 3600)
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
    [posted] = fake_github.comments("acme/widgets", 42)
    assert posted["body"].startswith(stored["comment"])
