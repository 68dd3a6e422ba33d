"""One composition of a triage proposal (``triage/domain/composition.py``), the one a live run
and the backtest both call: the repository's one label filter applies to every proposer (a rule,
the investigation, the label model), the policy's ``off`` modes silence the branch and the parts,
and the investigated branch leaves the related part to its own comment."""

from __future__ import annotations

from typing import Any

from resolveflow.domain.vocabulary import SuggestionKind, SuggestionMode
from resolveflow.policy_file import Classification, RepositoryPolicy
from resolveflow.triage.domain.composition import compose
from resolveflow.triage.domain.evidence import IssueEvidence, normalize
from resolveflow.triage.domain.parts import Part, PartItem, PartName, TriageParts
from resolveflow.triage.domain.rules import ProposedAction, classify, usable_labels
from resolveflow.triage.labels import Example, LabelModel
from resolveflow.triage.parts import Learned, label_part

REPO_LABELS = ["bug", "docs", "needs-triage", "wontfix"]
RELATED = Part(PartName.RELATED, 0.9, 0.15, (PartItem("7", 0.9),), "Earlier reports: #7")
LABEL = Part(PartName.LABELS, 0.8, 0.35, (PartItem("docs", 0.8),))


def _evidence(labels: list[str] | None = None, body: str = "") -> IssueEvidence:
    raw: dict[str, Any] = {
        "repository": "acme/widgets",
        "issue": {
            "number": 3, "title": "Widgets", "body": body or "x " * 200, "state": "open",
            "author": "a", "author_association": "NONE", "labels": labels or [],
            "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
            "closed_at": None, "is_pull_request": False,
            "url": "https://github.com/acme/widgets/issues/3",
        },
        "comments": [],
        "check_runs": [],
        "repository_labels": REPO_LABELS,
    }  # fmt: skip
    return normalize(raw)


def test_one_filter_for_every_proposed_label() -> None:
    evidence = _evidence(labels=["bug"])
    kept = usable_labels(["bug", "missing", "wontfix", "docs", "docs"], {"bug", "docs"}, evidence)
    assert kept.labels == ("docs",)
    assert kept.notes == (
        "label 'bug' is already on the issue",
        "label 'missing' is not allowed for this branch by the policy",
        "label 'wontfix' is not allowed for this branch by the policy",
    )
    assert usable_labels(["missing"], None, evidence).notes == (
        "label 'missing' does not exist in acme/widgets",
    )


def test_the_investigation_s_labels_pass_the_same_filter_and_related_is_its_own() -> None:
    evidence = _evidence(labels=["bug"])
    policy = RepositoryPolicy(extra_labels={Classification.AI_INVESTIGATION: ("bug", "docs")})
    investigated = ProposedAction("Found #7.", ("bug", "docs", "invented", "wontfix"), ())
    composed = compose(
        evidence,
        classify(evidence, policy),
        policy,
        Classification.AI_INVESTIGATION,
        {},
        TriageParts((RELATED,)),
        investigated,
    )
    assert composed.action.labels == ("docs",)
    assert composed.action.comment == "Found #7."
    [related] = composed.parts.parts
    assert related.left_out == "the investigation's comment lists them"


def test_off_modes_silence_the_branch_s_labels_and_a_part() -> None:
    evidence = _evidence()
    policy = RepositoryPolicy()
    modes = {SuggestionKind.LABEL: SuggestionMode.OFF}
    composed = compose(
        evidence,
        classify(evidence, policy),
        policy,
        Classification.HUMAN_REVIEW,
        modes,
        TriageParts((LABEL, RELATED)),
    )
    labels, related = composed.parts.parts
    assert labels.left_out == "label suggestions are off for acme/widgets (policy file)"
    assert related.kept
    assert composed.action.labels == ()  # neither the triage label nor the learned one
    assert composed.action.comment is not None and "Earlier reports: #7" in composed.action.comment


def test_the_label_part_uses_the_same_filter() -> None:
    examples = [Example("the docs page has a typo", frozenset({"docs"}))] * 3 + [
        Example("it crashes on save", frozenset({"bug"}))
    ] * 3
    learned = Learned(LabelModel.train(examples), len(examples))
    on_issue = _evidence(labels=["docs"], body="the docs page has a typo")
    part = label_part(learned, on_issue, RepositoryPolicy(), 0.0)
    assert part.labels != ("docs",)  # already on the issue
    narrowed = RepositoryPolicy(allowed_labels=("bug",))
    part = label_part(learned, _evidence(body="the docs page has a typo"), narrowed, 0.0)
    assert part.labels in {("bug",), ()}
