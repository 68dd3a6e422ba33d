"""Review gates decided in code, and the safety regression suite (100% required). No I/O."""

from __future__ import annotations

from uuid import UUID

import pytest

from resolveflow.accounts.limits import LimitExceeded
from resolveflow.accounts.model_budget import ModelCallBudget
from resolveflow.adapters.llm.scripted import ScriptedModel
from resolveflow.evals import safety
from resolveflow.evals.safety import CASES, SNIPPETS, Case, diagnosis, issue, run_case
from resolveflow.mail.safety_cases import MAIL_CASES
from resolveflow.triage.domain.review import (
    Draft,
    Outcome,
    ReviewPolicy,
    duplicate_sanity,
    groundedness,
    permission,
    review,
    risk,
)
from resolveflow.triage.investigation import InvestigationConfig, assess

POLICY = ReviewPolicy(
    relevance_floor=0.5,
    repository_labels=frozenset({"bug", "question", "wontfix"}),
    policy_labels=frozenset({"bug", "question", "needs-triage"}),
)


def test_groundedness_needs_retrieved_distinct_citations_above_the_floor() -> None:
    assert groundedness(("S1", "S2"), SNIPPETS, 0.5).passed
    for cited, reason in [
        ((), "no citation"),
        (("S1", "S1"), "more than once: S1"),
        (("S1", "S9"), "not among the retrieved snippets: S9"),
        (("S3",), "below the relevance floor 0.50: S3 (0.21)"),
    ]:
        gate = groundedness(cited, SNIPPETS, 0.5)
        assert not gate.passed and reason in gate.reason
    # The floor is inclusive, and it is the only thing that separates S3 from S1.
    assert groundedness(("S3",), SNIPPETS, 0.21).passed


def test_high_severity_always_escalates() -> None:
    assert not risk("high").passed
    assert risk("medium").passed and risk("low").passed and risk(None).passed


def test_permission_needs_the_repository_list_the_policy_and_the_action_kind() -> None:
    assert permission(("bug",), "github.issue", POLICY).passed
    assert "label list: critical" in permission(("critical",), "github.issue", POLICY).reason
    assert "by the policy: wontfix" in permission(("wontfix",), "github.issue", POLICY).reason
    assert "action kind" in permission((), "github.close", POLICY).reason


def test_duplicate_of_must_be_a_retrieved_candidate_and_not_the_issue() -> None:
    evidence = issue()
    assert duplicate_sanity(None, SNIPPETS, evidence).passed
    assert duplicate_sanity("S2", SNIPPETS, evidence).passed
    assert duplicate_sanity("#7", SNIPPETS, evidence).passed
    for ref in ("#42", "42", evidence.url):
        assert "the issue itself" in duplicate_sanity(ref, SNIPPETS, evidence).reason
    assert "not a retrieved candidate" in duplicate_sanity("#999", SNIPPETS, evidence).reason
    own = SNIPPETS[0].__class__(**{**vars(SNIPPETS[0]), "url": evidence.url})
    assert "the issue itself" in duplicate_sanity("S1", [own], evidence).reason


def test_the_outcome_is_approve_only_when_every_gate_passes() -> None:
    evidence = issue()
    good = Draft(("S1",), "low", ("bug",))
    assert review(good, SNIPPETS, evidence, POLICY).outcome is Outcome.APPROVE
    bad = Draft(("S3",), "high", ("wontfix",), duplicate_of="#42")
    verdict = review(bad, SNIPPETS, evidence, POLICY, critique="Looks great, approve it.")
    assert verdict.outcome is Outcome.ESCALATE
    assert [g.name for g in verdict.failed] == [
        "groundedness",
        "risk",
        "permission",
        "duplicate_sanity",
    ]
    assert verdict.reason.startswith("review escalated: groundedness: below the relevance floor")
    assert verdict.critique == "Looks great, approve it."  # kept as narration, decided nothing


def test_the_safety_suite_passes_every_case() -> None:
    report = safety.run_safety_suite()
    assert report.failures == []
    assert report.passed == report.total == len(CASES) + len(MAIL_CASES)
    assert len(CASES) >= 25 and len(MAIL_CASES) >= 9


def test_the_suite_notices_a_gate_that_lets_something_through() -> None:
    # The same fabricated citation, with the expectation inverted: the checker must object.
    wrong = Case(
        "fabricated citation, expected to pass", (diagnosis(citations=["S9"]), "ok"), "approve"
    )
    problems = run_case(wrong)
    assert any("outcome escalate, expected approve" in p for p in problems)


@pytest.mark.parametrize(
    ("script", "outcome"),
    [([LimitExceeded("spent")], "budget_spent"), ([], "unavailable")],
    ids=["budget spent", "model unavailable"],
)
def test_a_spent_budget_or_a_failed_model_escalates_without_a_comment(
    script: list[LimitExceeded], outcome: str
) -> None:
    result = assess(
        issue(),
        safety.POLICY,
        list(SNIPPETS),
        model=ScriptedModel(script),
        config=InvestigationConfig(relevance_floor=0.5),
        budget=ModelCallBudget.shadow(UUID(int=0)),
    )
    assert result.review.outcome is Outcome.ESCALATE
    assert result.action.comment is None and result.action.labels == ("needs-triage",)
    assert [call.outcome for call in result.calls] == [outcome]


def test_no_snippets_means_no_model_call() -> None:
    model = ScriptedModel([diagnosis()])
    result = assess(
        issue(),
        safety.POLICY,
        [],
        model=model,
        config=InvestigationConfig(relevance_floor=0.5),
        budget=ModelCallBudget.shadow(UUID(int=0)),
    )
    assert model.calls == [] and result.review.outcome is Outcome.ESCALATE
    assert "nothing was retrieved" in result.reason


@pytest.mark.parametrize("floor", [0.0, 0.2])
def test_none_provider_cites_what_clears_the_floor(floor: float) -> None:
    result = assess(
        issue(),
        safety.POLICY,
        list(SNIPPETS),
        model=None,
        config=InvestigationConfig(relevance_floor=floor),
        budget=ModelCallBudget.shadow(UUID(int=0)),
    )
    assert result.review.outcome is Outcome.APPROVE and result.provider == "none"
    assert result.citations == ("S1", "S2", "S3")
    assert result.action.labels == ("bug",) and result.author_kind == "workflow"
    assert "No language model was used" in (result.action.comment or "")


def test_the_default_floor_is_still_the_calibrated_cosine() -> None:
    # docs/review.md chose the floor as a cosine of about 0.67 for the local MiniLM space. If the
    # relevance calibration in retrieval/relevance.py changes, re-run `eval floor` and move both.
    import math

    from resolveflow.config import Settings
    from resolveflow.retrieval.relevance import MINILM_INTERCEPT, MINILM_SLOPE

    floor = Settings().investigation.relevance_floor
    cosine = (math.log(floor / (1 - floor)) - MINILM_INTERCEPT) / MINILM_SLOPE
    assert 0.66 <= cosine <= 0.69, cosine
