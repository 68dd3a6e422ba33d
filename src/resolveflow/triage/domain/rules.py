"""Classification by rules (no model) and the proposal each branch makes.

Issue text is untrusted. It can never choose the branch except through rules the team wrote (a
policy's title-prefix rule), never picks a label outside the branch's allowed set, and is never
pasted into a proposed comment: comments are built from check-run data, made inert by
``domain/inert_markdown.py`` like everything posted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from resolveflow.domain.counted import counted
from resolveflow.domain.inert_markdown import inert, link
from resolveflow.gate.domain.actions.intent import LabelNote
from resolveflow.policy_file import Classification, RepositoryPolicy
from resolveflow.triage.domain.evidence import IssueEvidence

INVESTIGATION_NOT_CONFIGURED = "investigation not configured"
MAX_LISTED_CHECKS = 20


@dataclass(frozen=True)
class ClassificationResult:
    classification: Classification
    rule: str
    reason: str
    policy_labels: tuple[str, ...] = ()  # labels a policy rule adds to the proposal


def classify(evidence: IssueEvidence, policy: RepositoryPolicy) -> ClassificationResult:
    """Policy rules first, in order; then failing CI, then sparse information; else a person."""
    for rule in policy.rules:
        if rule.when_label is not None and rule.when_label in evidence.labels:
            return ClassificationResult(
                rule.classification,
                f"policy:{rule.name}",
                f"the issue carries the label {rule.when_label!r}",
                rule.labels,
            )
        if rule.when_title_prefix is not None and evidence.title.lower().startswith(
            rule.when_title_prefix.lower()
        ):
            return ClassificationResult(
                rule.classification,
                f"policy:{rule.name}",
                f"the title starts with {rule.when_title_prefix!r}",
                rule.labels,
            )
    failing = evidence.facts["has_failing_ci"]
    if failing.value:
        return ClassificationResult(Classification.DETERMINISTIC, "has_failing_ci", failing.rule)
    sparse = evidence.facts["is_information_sparse"]
    if sparse.value:
        return ClassificationResult(
            Classification.AI_INVESTIGATION, "is_information_sparse", sparse.rule
        )
    return ClassificationResult(
        Classification.HUMAN_REVIEW, "fallback", f"no rule matched ({sparse.rule})"
    )


@dataclass(frozen=True)
class ProposedAction:
    comment: str | None
    labels: tuple[str, ...]
    notes: tuple[str, ...]  # why labels were left out, and the like, for the reviewer
    # why each learned label, and how sure (``label_notes.py``); a rule's label has none
    label_notes: tuple[LabelNote, ...] = ()
    # the repository's config sends approved labels as GitHub suggestions (``github_suggestions``)
    suggest: bool = False

    @property
    def empty(self) -> bool:
        return self.comment is None and not self.labels


def propose(
    evidence: IssueEvidence,
    result: ClassificationResult,
    policy: RepositoryPolicy,
    branch: Classification,
) -> ProposedAction:
    """The action for ``branch`` (the branch actually taken, after any re-routing)."""
    notes: list[str] = []
    wanted: list[str] = list(result.policy_labels)
    if branch is Classification.DETERMINISTIC and policy.ci_label:
        wanted.insert(0, policy.ci_label)
    if branch is Classification.HUMAN_REVIEW and policy.triage_label:
        wanted.insert(0, policy.triage_label)
    usable = usable_labels(wanted, policy.labels_for(branch), evidence)
    labels, notes = list(usable.labels), list(usable.notes)
    comment = None
    if branch is Classification.DETERMINISTIC and evidence.failing_checks:
        comment = failing_checks_comment(evidence)
    elif branch is Classification.DETERMINISTIC:
        notes.append("no failing check to report, so no CI comment")
    elif branch is Classification.HUMAN_REVIEW and policy.comment_on_human_review:
        comment = (
            "Thanks for the report. A maintainer will take a look; ResolveFlow found no failing "
            "check and no rule that applies automatically."
        )
    return ProposedAction(comment=comment, labels=tuple(labels), notes=tuple(notes))


@dataclass(frozen=True)
class UsableLabels:
    labels: tuple[str, ...]
    notes: tuple[str, ...]  # why each other label was left out


def usable_labels(
    wanted: Iterable[str], allowed: Collection[str] | None, evidence: IssueEvidence
) -> UsableLabels:
    """The one filter every proposed label passes, whoever proposes it (a rule, the
    investigation, the label model): it exists in the repository, is not on the issue yet, and
    the policy (as the repository's file narrows it) allows it (``allowed``; None: any)."""
    labels: list[str] = []
    notes: list[str] = []
    existing = set(evidence.repository_labels)
    for label in dict.fromkeys(wanted):
        if allowed is not None and label not in allowed:
            notes.append(f"label {label!r} is not allowed for this branch by the policy")
        elif label not in existing:
            notes.append(f"label {label!r} does not exist in {evidence.repository}")
        elif label in evidence.labels:
            notes.append(f"label {label!r} is already on the issue")
        else:
            labels.append(label)
    return UsableLabels(tuple(labels), tuple(notes))


def failing_checks_comment(evidence: IssueEvidence) -> str:
    failing = evidence.failing_checks
    lines = [
        f"ResolveFlow found {counted(len(failing), 'failing CI check')} on this "
        f"{'pull request' if evidence.is_pull_request else 'issue'}:",
        "",
    ]
    for run in failing[:MAX_LISTED_CHECKS]:
        entry = link(inert(run.name, 120), run.url)
        kind = "workflow run" if run.kind == "workflow_run" else "check"
        lines.append(f"- {entry}: {kind} concluded **{inert(run.conclusion or 'unknown', 20)}**")
    if len(failing) > MAX_LISTED_CHECKS:
        lines.append(f"- … and {len(failing) - MAX_LISTED_CHECKS} more")
    lines += ["", "Drafted by ResolveFlow from the check results and approved by a maintainer."]
    return "\n".join(lines)
