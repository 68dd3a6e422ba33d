"""Decisions as labelled examples and the acceptance figures (issue 31), worked out by hand."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from resolveflow.domain.vocabulary import (
    REFINE_PROPOSAL_NOTE,
    Decision,
    SuggestionKind,
    SuggestionOutcome,
)
from resolveflow.gate.domain.actions import (
    AnyAction,
    build_action,
    build_issue_create,
    parse_action,
)
from resolveflow.gate.domain.suggestions import (
    Decided,
    DecisionExample,
    acceptance,
    changes,
    examples,
    suggestion_kind,
)

REPO = "acme/widgets"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
K, OUT = SuggestionKind, SuggestionOutcome


def issue(comment: str | None = "Thanks!", labels: tuple[str, ...] = ("bug",)) -> AnyAction:
    return build_action(REPO, 7, comment, list(labels))


def email() -> AnyAction:
    return parse_action(
        {
            "kind": "email.send",
            "mailbox": "support@acme.example",
            "to": ["alice@customer.example"],
            "cc": [],
            "subject": "Re: Refund",
            "text": "Hello Alice",
            "in_reply_to": "<req-1@customer.example>",
            "references": ["<req-1@customer.example>"],
            "attachments": [],
        }
    )


def decided(
    first: AnyAction,
    final: AnyAction | None = None,
    *,
    decision: Decision = Decision.APPROVED,
    version: int = 1,
    branch: str | None = "deterministic",
    rule: str | None = "ci_failed",
    author: str = "workflow",
    note: str | None = None,
    reason: str | None = None,
    days_ago: int = 0,
) -> Decided:
    return Decided(
        proposal_id=uuid.uuid4(),
        lineage_id=uuid.uuid4(),
        version=version,
        first=first,
        decided=final or first,
        author_kind=author,
        note=note,
        branch=branch,
        rule=rule,
        decision=decision,
        reason=reason,
        decided_at=T0 - timedelta(days=days_ago),
    )


def outcomes(found: list[DecisionExample]) -> list[tuple[Any, ...]]:
    return [(e.kind, e.detail, e.outcome, e.changes, e.reason) for e in found]


def test_what_each_first_version_suggests() -> None:
    new = build_issue_create(REPO, "Disk full", "It is.", [], [])
    assert suggestion_kind(issue(), "workflow", None, "deterministic") is K.RULE_COMMENT
    assert suggestion_kind(issue(), "model", None, "ai_investigation") is K.DUPLICATE
    assert suggestion_kind(issue(), "workflow", None, "human_review") is K.REVIEW_REQUEST
    assert suggestion_kind(email(), "principal", "reply drafted for <x>", None) is K.DRAFT
    assert suggestion_kind(issue(), "principal", REFINE_PROPOSAL_NOTE, None) is K.REFINE_SUMMARY
    assert suggestion_kind(new, "principal", "project ops", None) is K.NEW_ISSUE
    # A person's own proposal, even with a note or a new issue, is no suggestion.
    assert suggestion_kind(issue(), "principal", "my note", None) is None
    assert suggestion_kind(new, "principal", None, None) is None


def test_approved_as_proposed_counts_the_proposal_and_each_label() -> None:
    found = examples(decided(issue(labels=("bug", "ci"))))
    assert outcomes(found) == [
        (K.RULE_COMMENT, "ci_failed", OUT.APPROVED, (), None),
        (K.LABEL, "bug", OUT.APPROVED, (), None),
        (K.LABEL, "ci", OUT.APPROVED, (), None),
    ]
    assert {e.place for e in found} == {REPO}


def test_an_approved_edit_says_what_changed_and_a_removed_label_is_rejected() -> None:
    first = issue("Thanks!", ("bug", "ci"))
    final = issue("Thanks, looking at it.", ("ci", "docs"))
    found = examples(decided(first, final, version=2))
    what = ("comment", "labels +docs -bug")
    assert outcomes(found) == [
        (K.RULE_COMMENT, "ci_failed", OUT.EDITED, what, None),
        (K.LABEL, "bug", OUT.REJECTED, what, "removed by the edit that was approved"),
        (K.LABEL, "ci", OUT.APPROVED, what, None),
    ]
    assert changes(first, first) == ()


def test_a_rejection_rejects_every_label_with_its_reason() -> None:
    found = examples(
        decided(issue(labels=("bug",)), decision=Decision.REJECTED, reason="not a bug")
    )
    assert outcomes(found) == [
        (K.RULE_COMMENT, "ci_failed", OUT.REJECTED, (), "not a bug"),
        (K.LABEL, "bug", OUT.REJECTED, (), "not a bug"),
    ]


def test_a_persons_own_proposal_makes_no_example() -> None:
    assert examples(decided(issue(), branch=None, author="principal")) == []


def test_acceptance_over_the_last_n_decisions_per_place_kind_and_detail() -> None:
    history = [
        decided(issue(labels=())),  # approved
        decided(issue(labels=()), version=2, days_ago=1),  # edited (nothing changed: still edited)
        decided(issue(labels=()), decision=Decision.REJECTED, reason="no", days_ago=2),
        decided(issue(labels=()), days_ago=3),  # approved, but older than the last 3
        decided(issue(labels=()), rule="stale", days_ago=1),  # another rule: its own figure
    ]
    found = [e for d in history for e in examples(d)]
    figures = {(a.kind, a.detail): a for a in acceptance(found, last=3)}
    ci = figures[(K.RULE_COMMENT, "ci_failed")]
    assert (ci.approved, ci.edited, ci.rejected, ci.decisions) == (1, 1, 1, 3)
    assert ci.rate == 2 / 3
    assert ci.since == T0 - timedelta(days=2)
    stale = figures[(K.RULE_COMMENT, "stale")]
    assert (stale.approved, stale.decisions, stale.rate) == (1, 1, 1.0)
    everything = {(a.kind, a.detail): a for a in acceptance(found, last=50)}
    assert everything[(K.RULE_COMMENT, "ci_failed")].decisions == 4
