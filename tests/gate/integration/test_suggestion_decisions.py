"""Labels sent as GitHub suggestions: what a maintainer does with each in GitHub is recorded once
(from the webhook's signal or a read of the issue's suggestions), replaces the approval's example
of that label in the acceptance figures, and a labels step whose answer was lost is not
suggested a second time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from conftest import (
    World,
    classified_run,
    execution_state,
    make_due,
    make_executor,
    make_reconciler,
)
from resolveflow.adapters.github import intent_form
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.domain.records import Execution, ExecutionState, Proposal
from resolveflow.domain.vocabulary import GitHubVerdict, SuggestedPart, SuggestionKind
from resolveflow.gate import approvals, feedback, proposals, suggestion_decisions
from resolveflow.gate.domain.suggestion_decisions import SuggestionSignal
from resolveflow.gate.store import executions
from resolveflow.gate.store import suggestion_decisions as decision_store
from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.server import DropAfterWrite, FakeGitHubServer, Status
from resolveflow.store.database import Database

REPO = "acme/widgets"


@pytest.fixture(autouse=True)
def _fresh_host_memory() -> Iterator[None]:
    intent_form.forget_hosts()
    yield


def _suggested(db: Database, world: World, labels: list[str], issue: int = 1) -> Proposal:
    """A human-review run's proposal whose labels go as GitHub suggestions, approved."""
    requester = world.requester(db)
    run_id = classified_run(db, world, issue, repository=REPO)
    proposal = proposals.create_proposal(
        db,
        requester,
        repository=REPO,
        issue=issue,
        comment=None,
        labels=labels,
        run_id=run_id,
        author_kind="workflow",
        suggest=True,
    )
    approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)
    return proposal


def _pending(fake: FakeGitHubServer) -> list[str]:
    return sorted(s.target_value for s in fake.issue_suggestions(REPO, 1) if s.state == "pending")


def _signal(db: Database, world: World, label: str, verdict: GitHubVerdict) -> bool:
    signal = SuggestionSignal(SuggestedPart.LABEL, label, verdict, "maintainer")
    with db.tenant(world.tenant.id) as conn:
        return suggestion_decisions.record_signal(
            conn, world.tenant.id, REPO, 1, signal, datetime.now(UTC)
        )


def _recorded(db: Database, world: World) -> list[tuple[str, str, str | None, str]]:
    with db.tenant(world.tenant.id) as conn:
        rows = decision_store.decisions_on_issue(conn, world.tenant.id, REPO, 1)
    return sorted((r.label, r.outcome, r.decided_by, r.seen_by) for r in rows)


def _label_figures(db: Database, world: World) -> dict[str, tuple[int, int]]:
    report = feedback.acceptance_report(db, world.approver(db))
    return {
        f.detail: (f.approved, f.rejected) for f in report.figures if f.kind is SuggestionKind.LABEL
    }


def test_a_labels_step_whose_answer_was_lost_is_not_suggested_twice(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    proposal = _suggested(db, world, ["bug", "question"])
    fake_github.inject(DropAfterWrite(), method="PATCH", path=f"/repos/{REPO}/issues/1$")
    make_executor(db, github_client).run_due()
    execution = _execution_of(db, world, proposal)
    assert execution_state(db, world, execution.id).state is ExecutionState.UNKNOWN
    assert _pending(fake_github) == ["bug", "question"]  # the PATCH reached GitHub

    make_reconciler(db, github_client).run()
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, execution.id).state is ExecutionState.SENT
    assert _pending(fake_github) == ["bug", "question"]  # once each, not twice
    assert [w.applied for w in fake_github.write_log if w.method == "PATCH"] == [True]


def test_a_label_already_pending_is_not_suggested_again_by_another_execution(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    _suggested(db, world, ["bug"])
    make_executor(db, github_client).run_due()
    _suggested(db, world, ["bug", "question"])
    make_executor(db, github_client).run_due()
    assert _pending(fake_github) == ["bug", "question"]


def test_the_webhooks_signal_is_recorded_once_and_only_for_our_suggestions(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    _suggested(db, world, ["bug", "question"])
    make_executor(db, github_client).run_due()
    assert _signal(db, world, "BUG", GitHubVerdict.ACCEPTED)  # GitHub's names ignore case
    assert not _signal(db, world, "bug", GitHubVerdict.ACCEPTED)  # a redelivery: nothing new
    assert not _signal(db, world, "bug", GitHubVerdict.DISMISSED)  # the first decision stands
    assert not _signal(db, world, "docs", GitHubVerdict.ACCEPTED)  # we never suggested it
    assert _signal(db, world, "question", GitHubVerdict.DISMISSED)
    assert _recorded(db, world) == [
        ("bug", "accepted", "maintainer", "webhook"),
        ("question", "dismissed", "maintainer", "webhook"),
    ]


def test_a_label_applied_directly_is_no_suggestion_decision(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    plain = proposals.create_proposal(
        db, world.requester(db), repository=REPO, issue=1, comment=None, labels=["bug"]
    )
    approvals.approve(db, world.approver(db), plain.id, plain.digest, 3600)
    make_executor(db, github_client).run_due()
    assert not _signal(db, world, "bug", GitHubVerdict.ACCEPTED)
    assert _recorded(db, world) == []


def test_what_no_delivery_said_is_read_from_the_issues_suggestions(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    _suggested(db, world, ["bug", "question"])
    make_executor(db, github_client).run_due()
    ids = {s.target_value: s.id for s in fake_github.issue_suggestions(REPO, 1)}
    fake_github.resolve_suggestion(REPO, ids["question"], accept=False, actor="maintainer")
    tenant = world.tenant.id
    assert suggestion_decisions.reconcile_issue(db, github_client, tenant, REPO, 1) == 1
    with db.tenant(tenant) as conn:
        [row] = decision_store.decisions_on_issue(conn, tenant, REPO, 1)
    assert (row.label, row.outcome, row.seen_by) == ("question", "dismissed", "read")
    assert row.decided_by_id == payloads.user_id("maintainer")
    # Read again: nothing new. Once every part is decided, the issue is not read at all.
    assert suggestion_decisions.reconcile_issue(db, github_client, tenant, REPO, 1) == 0
    fake_github.resolve_suggestion(REPO, ids["bug"], accept=True, actor="maintainer")
    assert suggestion_decisions.reconcile_issue(db, github_client, tenant, REPO, 1) == 1
    before = fake_github.requests_received
    assert suggestion_decisions.reconcile_issue(db, github_client, tenant, REPO, 1) == 0
    assert fake_github.requests_received == before


def test_github_decisions_replace_the_approvals_label_examples(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    _suggested(db, world, ["bug", "question"])
    make_executor(db, github_client).run_due()
    # Pending in GitHub: the approval said "suggest it", which decides nothing about the label.
    assert _label_figures(db, world) == {}
    report = feedback.acceptance_report(db, world.approver(db))
    assert [(f.kind, f.approved) for f in report.figures] == [(SuggestionKind.REVIEW_REQUEST, 1)]
    _signal(db, world, "bug", GitHubVerdict.ACCEPTED)
    _signal(db, world, "question", GitHubVerdict.DISMISSED)
    assert _label_figures(db, world) == {"bug": (1, 0), "question": (0, 1)}
    found = feedback.decision_examples(db, world.approver(db))
    labels = [e for e in found if e.kind is SuggestionKind.LABEL]
    assert sorted((e.detail, e.reason) for e in labels) == [
        ("bug", None),
        ("question", "dismissed in GitHub by maintainer"),
    ]


def _execution_of(db: Database, world: World, proposal: Proposal) -> Execution:
    with db.tenant(world.tenant.id) as conn:
        found = executions.execution_for_proposal(conn, world.tenant.id, proposal.id)
    assert found is not None
    return found


def test_a_forge_with_no_suggestions_to_list_still_gets_the_write(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    fake_github.inject(Status(404), method="GET", path="/suggestions")
    proposal = _suggested(db, world, ["bug"])
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, _execution_of(db, world, proposal).id).state is (
        ExecutionState.SENT
    )
    assert _pending(fake_github) == ["bug"]


def test_a_suggested_close_whose_answer_was_lost_is_confirmed_and_its_decision_counted(
    db: Database,
    world: World,
    fake_github: FakeGitHubServer,
    github_client: GitHubKitClient,
    superuser: psycopg.Connection[Any],
) -> None:
    for number in (3, 5):
        fake_github.add_issue(REPO, number, f"Widget bug {number}", "It breaks.", user="reporter")
    proposal = proposals.create_close_duplicate_proposal(
        db, world.requester(db), github_client, repository=REPO, issue=5, original=3, suggest=True
    )
    approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)
    make_executor(db, github_client).run_due()  # the notice; the close waits out the grace
    execution = _execution_of(db, world, proposal)
    make_due(superuser, execution.id)
    fake_github.inject(DropAfterWrite(), method="PATCH", path=f"/repos/{REPO}/issues/5$")
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, execution.id).state is ExecutionState.UNKNOWN

    make_reconciler(db, github_client).run()
    make_executor(db, github_client).run_due()
    assert execution_state(db, world, execution.id).state is ExecutionState.SENT
    closes = [s for s in fake_github.issue_suggestions(REPO, 5) if s.action == "close_issue"]
    assert [s.state for s in closes] == ["pending"]  # once, and the issue still open
    signal = SuggestionSignal(SuggestedPart.DUPLICATE, "", GitHubVerdict.ACCEPTED, "maintainer")
    with db.tenant(world.tenant.id) as conn:
        assert suggestion_decisions.record_signal(
            conn, world.tenant.id, REPO, 5, signal, datetime.now(UTC)
        )
    report = feedback.acceptance_report(db, world.approver(db))
    assert [(f.kind, f.approved, f.rejected) for f in report.figures] == [
        (SuggestionKind.DUPLICATE, 1, 0)
    ]
