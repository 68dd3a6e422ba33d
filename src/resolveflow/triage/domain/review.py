"""The independent review's verdict, decided in code from gates. Pure.

A model writes a critique, which is kept as narration for the person who decides; nothing here
reads it. Each gate records whether it passed and why:

- groundedness: at least one citation; every citation one of the retrieved ids, none twice, and
  each cited snippet at or above the relevance floor (a real snippet about something else is not
  evidence: docs/review.md);
- risk: high severity always escalates, however good the citations;
- permission: every label in the repository's label list and allowed for the branch by the
  policy, and the action kind one the branch may propose;
- duplicate sanity: duplicate_of, when given, is a retrieved candidate and not the issue itself.

The outcome is ``approve`` (the drafted proposal goes to a person as it is) only when every gate
passed; otherwise ``escalate`` (a person gets a proposal that lists the failed gates).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from resolveflow.domain.vocabulary import ReviewOutcome
from resolveflow.gate.domain.actions import ACTION_KIND
from resolveflow.triage.domain.diagnosis import Snippet, is_same_issue
from resolveflow.triage.domain.evidence import IssueEvidence

# The review's verdict is one of the domain's words (the pages and the CLI put it in words
# without importing the review); here by its old name.
Outcome = ReviewOutcome


@dataclass(frozen=True)
class Gate:
    name: str
    passed: bool
    reason: str

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "passed": self.passed, "reason": self.reason}


@dataclass(frozen=True)
class ReviewPolicy:
    relevance_floor: float
    repository_labels: frozenset[str]
    policy_labels: frozenset[str]  # what the ai_investigation branch may propose
    action_kinds: frozenset[str] = frozenset({ACTION_KIND})

    @property
    def allowed_labels(self) -> frozenset[str]:
        return self.repository_labels & self.policy_labels


@dataclass(frozen=True)
class Draft:
    """What the review judges: from a model's diagnosis, or from retrieval alone (no severity)."""

    citations: tuple[str, ...]
    severity: str | None
    labels: tuple[str, ...]
    duplicate_of: str | None = None
    action_kind: str = ACTION_KIND


@dataclass(frozen=True)
class Review:
    outcome: Outcome
    gates: tuple[Gate, ...]
    critique: str | None = None
    notes: tuple[str, ...] = field(default=())  # e.g. why the critique is missing

    @property
    def failed(self) -> tuple[Gate, ...]:
        return tuple(gate for gate in self.gates if not gate.passed)

    @property
    def reason(self) -> str:
        if self.outcome is Outcome.APPROVE:
            return "review: every gate passed"
        return "review escalated: " + "; ".join(f"{g.name}: {g.reason}" for g in self.failed)

    def as_json(self) -> dict[str, object]:
        return {
            "outcome": self.outcome.value,
            "gates": [gate.as_json() for gate in self.gates],
            "critique": self.critique,
            "notes": list(self.notes),
        }


def groundedness(citations: tuple[str, ...], snippets: list[Snippet], floor: float) -> Gate:
    if not citations:
        return Gate("groundedness", False, "no citation")
    by_id = {snippet.id: snippet for snippet in snippets}
    repeated = sorted({c for c in citations if citations.count(c) > 1})
    if repeated:
        return Gate("groundedness", False, f"cited more than once: {', '.join(repeated)}")
    unknown = [c for c in citations if c not in by_id]
    if unknown:
        return Gate(
            "groundedness", False, f"not among the retrieved snippets: {', '.join(unknown)}"
        )
    weak = [f"{c} ({by_id[c].relevance:.2f})" for c in citations if by_id[c].relevance < floor]
    if weak:
        return Gate(
            "groundedness", False, f"below the relevance floor {floor:.2f}: {', '.join(weak)}"
        )
    scores = ", ".join(f"{c} ({by_id[c].relevance:.2f})" for c in citations)
    return Gate(
        "groundedness", True, f"every citation retrieved and at or above {floor:.2f}: {scores}"
    )


def risk(severity: str | None) -> Gate:
    if severity is None:
        return Gate("risk", True, "no severity judged (no model was used)")
    if severity == "high":
        return Gate("risk", False, "high severity always goes to a person")
    return Gate("risk", True, f"{severity} severity")


def permission(labels: tuple[str, ...], action_kind: str, policy: ReviewPolicy) -> Gate:
    if action_kind not in policy.action_kinds:
        return Gate("permission", False, f"action kind {action_kind!r} is not allowed")
    unknown = sorted({label for label in labels if label not in policy.repository_labels})
    if unknown:
        return Gate(
            "permission", False, f"not in the repository's label list: {', '.join(unknown)}"
        )
    refused = sorted({label for label in labels if label not in policy.policy_labels})
    if refused:
        return Gate(
            "permission", False, f"not allowed for this branch by the policy: {', '.join(refused)}"
        )
    shown = ", ".join(labels) if labels else "no labels"
    return Gate("permission", True, f"{shown}; action kind {action_kind}")


def resolve_reference(reference: str, snippets: list[Snippet]) -> Snippet | None:
    """A snippet id (S2), or an issue reference (#12, 12) that names a retrieved document."""
    text = reference.strip()
    for snippet in snippets:
        if snippet.id == text:
            return snippet
    number = text.removeprefix("#")
    if number.isdigit():
        return next((s for s in snippets if s.external_id == number), None)
    return None


def duplicate_sanity(
    duplicate_of: str | None, snippets: list[Snippet], issue: IssueEvidence
) -> Gate:
    if duplicate_of is None:
        return Gate("duplicate_sanity", True, "no duplicate proposed")
    text = duplicate_of.strip()
    if text.removeprefix("#") == str(issue.number) or text == issue.url:
        return Gate("duplicate_sanity", False, f"{text} is the issue itself")
    target = resolve_reference(text, snippets)
    if target is None:
        return Gate("duplicate_sanity", False, f"{text} is not a retrieved candidate")
    if is_same_issue(target, issue):
        return Gate("duplicate_sanity", False, f"{text} is the issue itself")
    return Gate("duplicate_sanity", True, f"{text} is retrieved candidate {target.external_id}")


def review(
    draft: Draft,
    snippets: list[Snippet],
    issue: IssueEvidence,
    policy: ReviewPolicy,
    *,
    critique: str | None = None,
    notes: tuple[str, ...] = (),
) -> Review:
    gates = (
        groundedness(draft.citations, snippets, policy.relevance_floor),
        risk(draft.severity),
        permission(draft.labels, draft.action_kind, policy),
        duplicate_sanity(draft.duplicate_of, snippets, issue),
    )
    outcome = Outcome.APPROVE if all(g.passed for g in gates) else Outcome.ESCALATE
    return Review(outcome, gates, critique, notes)


def not_reviewable(gate: str, reason: str, notes: tuple[str, ...] = ()) -> Review:
    """No answer to judge (the model failed, the budget is spent, retrieval failed): escalate."""
    return Review(Outcome.ESCALATE, (Gate(gate, False, reason),), None, notes)
