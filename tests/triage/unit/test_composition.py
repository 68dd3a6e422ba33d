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


def test_the_backtest_measures_every_kept_part_whatever_its_name() -> None:
    from resolveflow.triage.backtest import proposed_parts
    from resolveflow.triage.domain.composition import Composed

    docs = Part(PartName.DOCS, 0.7, 0.5, (PartItem("guide.md", 0.7),), "See the guide.")
    quiet = Part(PartName.DUPLICATE, 0.2, 0.5, (PartItem("9", 0.2),), left_out="below")
    parts = TriageParts((LABEL, RELATED, docs, quiet))
    composed = Composed(ProposedAction(None, ("docs", "needs-triage"), ()), parts)
    measured = {p.name: p.items for p in proposed_parts(composed, cited=("5",))}
    assert measured == {
        PartName.LABELS: ("docs",),  # topical only
        PartName.RELATED: ("5", "7"),
        PartName.DOCS: ("guide.md",),
    }


def test_earlier_fixes_are_listed_with_a_replayed_item_and_never_posted() -> None:
    from resolveflow.triage.backtest_report import Replayed
    from resolveflow.triage.domain.backtest_figures import ReplayRecord
    from resolveflow.triage.domain.parts import EarlierFix

    fix = EarlierFix("13", ("abc123",), ("40",), "Guard empty input (#40)")
    files = Part(PartName.FILES, 0.9, None, (PartItem("src/loader.py", 0.9),), fixes=(fix,))
    assert files.paragraph is None  # internal: nothing of it joins the comment
    assert TriageParts((files,)).joined(ProposedAction(None, (), ())).comment is None
    assert files.as_json()["fixes"] == [
        {
            "issue": "13",
            "commits": ["abc123"],
            "pulls": ["40"],
            "subject": "Guard empty input (#40)",
        }
    ]
    item = Replayed("1", "human_review", None, (), ReplayRecord("1", False, 0.1, ()), None, (fix,))
    assert item.as_json()["earlier_fixes"] == files.as_json()["fixes"]
    assert "earlier_fixes" not in replace_fixes(item).as_json()


def replace_fixes(item: Any) -> Any:
    from dataclasses import replace

    return replace(item, earlier_fixes=())
