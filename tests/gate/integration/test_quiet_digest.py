"""Quiet by default (issue 31, part 3) through the gate and Postgres: a kind set to ``digest`` is
recorded but kept out of the inbox, listed in the digest and still approved by its digest; a kind
set to ``off`` is refused in one line; a kind whose acceptance falls below the floor goes to the
digest by itself, the inbox says so, and comes back once approvals lift it; the CLI."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from test_decision_examples import REPO, _approve, _reject, _run_proposal

from conftest import World
from fixtures_cli import InProcessCli
from resolveflow.bootstrap.policy import PRODUCT_SECTIONS
from resolveflow.domain.records import Proposal
from resolveflow.domain.vocabulary import REFINE_PROPOSAL_NOTE, RunStatus, SuggestionKind
from resolveflow.errors import PolicyViolation
from resolveflow.gate import approvals, proposals, quiet
from resolveflow.gate.domain.actions import build_action
from resolveflow.gate.domain.quiet import DigestWhy, QuietRules
from resolveflow.gate.quiet import Quiet
from resolveflow.policy_file import parse_policy
from resolveflow.store.database import Database
from resolveflow.triage.store import runs as run_store
from resolveflow.web import views

K = SuggestionKind
ISSUES = itertools.count(100)
SMALL = QuietRules(floor=0.5, minimum=4, last=4)  # a short history is enough


def _quiet(text: str = "", rules: QuietRules = SMALL) -> Quiet:
    return Quiet(parse_policy(text, "policy.toml", PRODUCT_SECTIONS), rules)


def _review(db: Database, world: World, q: Quiet) -> Proposal:
    """A triage run's request for review (its branch says what it suggests), each on an issue
    of its own (one exact action is approved once)."""
    issue = next(ISSUES)
    made = _run_proposal(db, world, "human_review", "fallback", [], quiet=q, issue=issue)
    return _waiting(db, world, made)


def _waiting(db: Database, world: World, proposal: Proposal) -> Proposal:
    """The run waits for a decision, as the graph leaves it (the inbox lists such runs)."""
    assert proposal.run_id is not None
    with db.tenant(world.tenant.id) as conn:
        run_store.set_status(
            conn, world.tenant.id, proposal.run_id, RunStatus.AWAITING_APPROVAL, {}
        )
    return proposal


def _inbox_proposals(db: Database, world: World) -> set[str]:
    items = views.inbox(db, world.approver(db))["items"]
    return {item["proposal_id"] for item in items if item["proposal_id"]}


def _digest_ids(db: Database, world: World) -> list[str]:
    found = quiet.digest(db, world.approver(db))
    return [str(i.proposal_id) for d in found.days for g in d.groups for i in g.items]


def test_digest_only_is_out_of_the_inbox_in_the_digest_and_approvable(
    db: Database, world: World
) -> None:
    q = _quiet('[repositories."acme/widgets".suggestions]\nreview_request = "digest"')
    quieted = _review(db, world, q)
    refine = proposals.create_prepared_proposal(
        db, world.requester(db), build_action(REPO, 7, "Related: #3.", []), REFINE_PROPOSAL_NOTE, q
    )
    own = proposals.create_proposal(  # a person's own proposal is no suggestion: never moved
        db, world.requester(db), repository=REPO, issue=1, comment="mine", labels=[], quiet=q
    )
    inbox = _inbox_proposals(db, world)
    assert str(quieted.id) not in inbox
    assert {str(refine.id), str(own.id)} <= inbox
    found = quiet.digest(db, world.approver(db))
    [day] = found.days
    [group] = day.groups
    assert (group.place, group.kind) == (REPO, K.REVIEW_REQUEST)
    [item] = group.items
    assert (item.proposal_id, item.why, item.state) == (quieted.id, DigestWhy.POLICY, "waiting")
    assert item.summary is not None and REPO in item.summary
    # Opened from the digest, it is decided through the same gate and digest as any other.
    with pytest.raises(Exception, match="digest"):
        approvals.approve(db, world.approver(db), quieted.id, "0" * 64, 3600)
    _approve(db, world, quieted)
    [again] = [
        i for d in quiet.digest(db, world.approver(db)).days for g in d.groups for i in g.items
    ]
    assert again.state != "waiting"
    assert quiet.digest(db, world.approver(db), quiet.parse_day("2001-01-01")).days == []


def test_off_makes_no_proposal_and_says_why(db: Database, world: World) -> None:
    q = _quiet('[repositories."acme/widgets".suggestions]\nreview_request = "off"\nlabel = "off"')
    with pytest.raises(PolicyViolation) as refused:
        _review(db, world, q)
    assert refused.value.message == (
        "review request suggestions are off for acme/widgets (policy file)"
    )
    with pytest.raises(PolicyViolation, match="label suggestions are off for acme/widgets"):
        _run_proposal(db, world, "deterministic", "has_failing_ci", ["ci-failure"], quiet=q)
    # what is left without labels is proposed, and goes to the inbox
    kept = _waiting(
        db, world, _run_proposal(db, world, "deterministic", "has_failing_ci", [], quiet=q)
    )
    assert str(kept.id) in _inbox_proposals(db, world)
    assert _digest_ids(db, world) == []


def test_low_acceptance_moves_a_kind_to_the_digest_and_back(db: Database, world: World) -> None:
    q = _quiet()
    for n in range(4):  # 1 of 4 approved: 25 %, below the floor of 50 %
        made = _review(db, world, q)
        if n == 0:
            _approve(db, world, made)
        else:
            _reject(db, world, made, "not needed")
    assert quiet.notices(db, world.approver(db), _quiet(rules=QuietRules())) == []  # 4 < 10
    [line] = quiet.notices(db, world.approver(db), q)
    assert line.text == (
        "Review request suggestions on acme/widgets go to the digest: 1 of 4 approved over the"
        " last 4 decisions (floor 50 %)."
    )
    moved = _review(db, world, q)
    assert str(moved.id) not in _inbox_proposals(db, world)
    [item] = [
        i for d in quiet.digest(db, world.approver(db)).days for g in d.groups for i in g.items
    ]
    assert (item.proposal_id, item.why, item.approved, item.decisions) == (
        moved.id,
        DigestWhy.ACCEPTANCE,
        1,
        4,
    )
    # a policy "always" keeps the kind in the inbox; "off" still wins (tested above)
    kept = _review(db, world, _quiet('[defaults.suggestions]\nreview_request = "always"'))
    assert str(kept.id) in _inbox_proposals(db, world)
    # approvals from the digest lift it: the last 4 are 3 approved of 4 -> the inbox again
    _approve(db, world, moved)
    _approve(db, world, kept)
    assert quiet.notices(db, world.approver(db), q) == []  # last 4: 2 of 4, at the floor
    back = _review(db, world, q)
    assert str(back.id) in _inbox_proposals(db, world)


def test_the_cli_lists_the_digest_and_the_inbox_line(
    db: Database, world: World, database_url: str, tmp_path: Path
) -> None:
    q = _quiet(rules=QuietRules())  # the defaults, as the CLI's settings have them
    for n in range(12):  # 3 of 12 approved
        made = _review(db, world, q)
        _approve(db, world, made) if n < 3 else _reject(db, world, made, "no")
    moved = _review(db, world, q)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(RESOLVEFLOW_DATABASE_URL=database_url, RESOLVEFLOW_HOME=str(tmp_path), COLUMNS="160")
    cli = InProcessCli(env)
    data = cli.json("digest", token=world.approver_token)
    # from the tenth decision on (3 of 10) each new request went to the digest: the 11th, the
    # 12th (both decided since) and the one made now
    entries = [i for d in data["days"] for g in d["groups"] for i in g["items"]]
    assert [e["why"] for e in entries] == ["acceptance"] * 3
    assert entries[-1]["proposal_id"] == str(moved.id) and entries[-1]["state"] == "waiting"
    assert [m["text"] for m in data["moved"]] == [
        "Review request suggestions on acme/widgets go to the digest: 3 of 12 approved over the"
        " last 12 decisions (floor 50 %)."
    ]
    printed = cli.run("digest", token=world.approver_token).stdout
    assert str(moved.id) in printed and "acceptance 3 of 12" in printed
    listed = cli.run("proposals", "list", token=world.approver_token).stdout
    assert "Review request suggestions on acme/widgets go to the digest" in listed
    bad = cli.run("digest", "--day", "yesterday", token=world.approver_token, ok=False)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "day must be YYYY-MM-DD" in bad.stderr + bad.stdout
