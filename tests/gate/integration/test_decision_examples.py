"""Every decision on a suggestion is a labelled example, and each kind's acceptance is measured
per repository (issue 31): a small history made through the gate itself, its figures worked
out by hand, through the service, a proposal's "suggestions like this" and the CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import World, classified_run, make_world
from fixtures_cli import InProcessCli
from resolveflow.accounts import admin
from resolveflow.domain.records import Proposal
from resolveflow.domain.vocabulary import REFINE_PROPOSAL_NOTE, SuggestionKind
from resolveflow.gate import approvals, feedback, proposals
from resolveflow.gate.domain.actions import ActionChanges, build_action
from resolveflow.gate.domain.suggestions import Acceptance
from resolveflow.gate.quiet import DEFAULT_QUIET, Quiet
from resolveflow.store.database import Database

REPO = "acme/widgets"
K = SuggestionKind


def _run_proposal(
    db: Database,
    world: World,
    branch: str,
    rule: str,
    labels: list[str],
    repository: str = REPO,
    quiet: Quiet = DEFAULT_QUIET,
    issue: int = 7,
) -> Proposal:
    """A triage run's proposal, as the graph makes one: the run, its classification, then the
    proposal with the run's id."""
    requester = world.requester(db)
    run_id = classified_run(db, world, issue, repository=repository, branch=branch, rule=rule)
    return proposals.create_proposal(
        db,
        requester,
        repository=repository,
        issue=issue,
        comment="CI is failing: build, lint.",
        labels=labels,
        run_id=run_id,
        author_kind="workflow",
        quiet=quiet,
    )


def _approve(db: Database, world: World, proposal: Proposal) -> None:
    approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)


def _reject(db: Database, world: World, proposal: Proposal, reason: str) -> None:
    approvals.reject(db, world.approver(db), proposal.id, reason)


@pytest.fixture
def history(db: Database, world: World) -> World:
    # 1. a rule's comment with its label, approved as proposed
    _approve(db, world, _run_proposal(db, world, "deterministic", "has_failing_ci", ["ci-failure"]))
    # 2. the same, edited (the comment, and bug for ci-failure) and then approved
    edited = proposals.edit_proposal(
        db,
        world.requester(db),
        _run_proposal(db, world, "deterministic", "has_failing_ci", ["ci-failure"]).id,
        ActionChanges(comment="CI is failing on lint only.", labels=["bug"]),
    )
    _approve(db, world, edited)
    # 3. the same, rejected
    failing = _run_proposal(db, world, "deterministic", "has_failing_ci", ["ci-failure"])
    _reject(db, world, failing, "flaky runner, not the change")
    # 4. a request for a person's review, approved
    _approve(db, world, _run_proposal(db, world, "human_review", "fallback", ["needs-triage"]))
    # 5. a person's own proposal: no suggestion, no example
    own = proposals.create_proposal(
        db, world.requester(db), repository=REPO, issue=1, comment="mine", labels=["bug"]
    )
    _approve(db, world, own)
    # 6. refine's enrichment, rejected
    refine = proposals.create_prepared_proposal(
        db,
        world.requester(db),
        build_action(REPO, 7, "Related: #3.", []),
        note=REFINE_PROPOSAL_NOTE,
    )
    _reject(db, world, refine, "the related task is unrelated")
    return world


def _figures(found: list[Acceptance]) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {(f.kind.value, f.detail): (f.approved, f.edited, f.rejected) for f in found}


def test_acceptance_per_repository_and_kind_by_hand(db: Database, history: World) -> None:
    report = feedback.acceptance_report(db, history.approver(db))
    assert {f.place for f in report.figures} == {REPO}
    assert _figures(report.figures) == {
        ("rule_comment", "has_failing_ci"): (1, 1, 1),
        # approved once; taken away by the approved edit once; rejected with its proposal once
        ("label", "ci-failure"): (1, 0, 2),
        ("review_request", ""): (1, 0, 0),
        ("label", "needs-triage"): (1, 0, 0),
        ("refine_summary", ""): (0, 0, 1),
    }  # bug is no suggestion: added by an edit, and the person's own proposal's
    rule = next(f for f in report.figures if f.kind is K.RULE_COMMENT)
    assert rule.decisions == 3 and rule.rate == pytest.approx(2 / 3)
    # Over each one's latest two decisions: the edit and the rejection.
    latest = feedback.acceptance_report(db, history.approver(db), last=2)
    assert _figures(latest.figures)[("rule_comment", "has_failing_ci")] == (0, 1, 1)


def test_each_example_says_what_changed_and_why_it_was_rejected(
    db: Database, history: World
) -> None:
    found = feedback.decision_examples(db, history.approver(db))
    edited = next(e for e in found if e.kind is K.RULE_COMMENT and e.changes)
    assert edited.changes == ("comment", "labels +bug -ci-failure")
    reasons = {e.reason for e in found if e.reason}
    assert reasons == {
        "flaky runner, not the change",
        "removed by the edit that was approved",
        "the related task is unrelated",
    }
    assert [e.decided_at for e in found] == sorted((e.decided_at for e in found), reverse=True)


def test_a_proposal_counts_the_suggestions_like_it_but_not_itself(
    db: Database, history: World
) -> None:
    waiting = _run_proposal(db, history, "deterministic", "has_failing_ci", ["ci-failure"])
    with db.tenant(history.tenant.id) as conn:
        like = feedback.like_this_in(conn, history.approver(db), waiting.lineage_id)
        other_rule = _run_proposal(db, history, "deterministic", "is_information_sparse", [])
        none_yet = feedback.like_this_in(conn, history.approver(db), other_rule.lineage_id)
        own = proposals.create_proposal(
            db, history.requester(db), repository=REPO, issue=2, comment="x", labels=[]
        )
        mine = feedback.like_this_in(conn, history.approver(db), own.lineage_id)
    assert like is not None
    assert (like.acceptance.approved, like.acceptance.edited, like.acceptance.rejected) == (1, 1, 1)
    assert like.score is None and like.in_band is None  # a rule's comment has no score
    assert none_yet is not None and none_yet.acceptance.decisions == 0
    assert mine is None
    view = proposals.describe(db, history.approver(db), waiting.id)
    assert view["like_this"] == {
        "kind": "rule_comment",
        "detail": "has_failing_ci",
        "approved": 1,
        "edited": 1,
        "rejected": 1,
        "decisions": 3,
        "days": feedback.DAYS,
        "score": None,
    }


def test_a_proposal_counts_its_own_repository_only(db: Database, history: World) -> None:
    admin.add_repository(db, "acme", "acme/gadgets")
    elsewhere = _run_proposal(db, history, "deterministic", "has_failing_ci", [], "acme/gadgets")
    _reject(db, history, elsewhere, "not here")
    waiting = _run_proposal(db, history, "deterministic", "has_failing_ci", [])
    there = _run_proposal(db, history, "deterministic", "has_failing_ci", [], "acme/gadgets")
    with db.tenant(history.tenant.id) as conn:
        here = feedback.like_this_in(conn, history.approver(db), waiting.lineage_id)
        away = feedback.like_this_in(conn, history.approver(db), there.lineage_id)
    assert here is not None
    assert (here.acceptance.approved, here.acceptance.edited, here.acceptance.rejected) == (1, 1, 1)
    assert away is not None
    assert (away.acceptance.place, away.acceptance.rejected, away.acceptance.decisions) == (
        "acme/gadgets",
        1,
        1,
    )
    places = {f.place for f in feedback.acceptance_report(db, history.approver(db)).figures}
    assert places == {REPO, "acme/gadgets"}


def test_another_tenant_sees_none_of_it(db: Database, history: World) -> None:
    other = make_world(db, tenant="globex", repository="globex/app")
    assert feedback.acceptance_report(db, other.approver(db)).figures == []


def test_the_cli_prints_the_same_in_words_and_in_json(
    db: Database, history: World, database_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(RESOLVEFLOW_DATABASE_URL=database_url, RESOLVEFLOW_HOME=str(tmp_path), COLUMNS="120")
    cli = InProcessCli(env)
    data = cli.json("decisions", "acceptance", "--last", "2", token=history.approver_token)
    assert data["last"] == 2 and data["days"] == feedback.DAYS
    rule = next(f for f in data["figures"] if f["kind"] == "rule_comment")
    assert (rule["approved"], rule["edited"], rule["rejected"], rule["acceptance"]) == (
        0,
        1,
        1,
        0.5,
    )
    printed = cli.run("decisions", "acceptance", token=history.approver_token).stdout
    assert "a rule's comment" in printed and "CI is failing" in printed
    assert "rule_comment" not in printed and "has_failing_ci" not in printed
    listed = cli.json("decisions", "list", token=history.approver_token)
    assert len(listed) == 9 and {e["outcome"] for e in listed} == {
        "approved",
        "edited",
        "rejected",
    }
    words = cli.run("decisions", "list", token=history.approver_token).stdout
    assert "approved after an edit" in words and "labels +bug -ci-failure" in words
    bad = cli.run("decisions", "acceptance", "--days", "0", token=history.approver_token, ok=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
