"""One issue's proposal, composed from what triage found (pure).

The live run (``graph/build.py``) and the backtest (``backtest.py``) both call ``compose``, so a
replayed issue is proposed exactly what a live run of it would be: the branch's own action (the
rules' ``propose``, or the investigation's on its branch), whose labels pass the repository's one
label filter (``rules.usable_labels``); the notes the evidence carries; the policy file's ``off``
modes for the branch's kind and for each part's kind; and the kept parts joined (labels added,
paragraphs in the comment). On the investigated branch the related issues are the
investigation's own comment, so the related part is left out there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from resolveflow.domain.vocabulary import SuggestionKind, SuggestionMode
from resolveflow.gate.domain.quiet import apply_off, off_reason
from resolveflow.gate.domain.suggestions import branch_kind
from resolveflow.policy_file import Classification, RepositoryPolicy
from resolveflow.triage.domain.evidence import IssueEvidence
from resolveflow.triage.domain.parts import Part, PartName, TriageParts, left_out
from resolveflow.triage.domain.rules import (
    ClassificationResult,
    ProposedAction,
    propose,
    usable_labels,
)

Modes = dict[SuggestionKind, SuggestionMode]

# The suggestion kind each part is counted as, and silenced by (the policy's ``suggestions``).
PART_KINDS = {
    PartName.LABELS: SuggestionKind.LABEL,
    PartName.MISSING_FACTS: SuggestionKind.MISSING_FACTS,
    PartName.RELATED: SuggestionKind.RELATED,
    PartName.DUPLICATE: SuggestionKind.DUPLICATE,
    PartName.FILES: SuggestionKind.FILES,
    PartName.DOCS: SuggestionKind.DOCS,
}
INVESTIGATION_LISTS_RELATED = "the investigation's comment lists them"


@dataclass(frozen=True)
class Composed:
    """What is proposed (``action``) and every part, kept or left out, with why."""

    action: ProposedAction
    parts: TriageParts


def compose(
    evidence: IssueEvidence,
    result: ClassificationResult,
    policy: RepositoryPolicy,
    branch: Classification,
    modes: Modes,
    parts: TriageParts,
    investigated: ProposedAction | None = None,
    acceptance: Mapping[PartName, float] | None = None,
) -> Composed:
    """The proposal for ``branch`` (the branch taken, after any re-routing) with ``parts``;
    ``investigated``: the investigation's action, on its branch; ``acceptance``: how the team's
    decisions fared in a part's score band, where measured (its labels' confidence)."""
    place = evidence.repository
    on_investigation = branch is Classification.AI_INVESTIGATION and investigated is not None
    if investigated is not None and on_investigation:
        # Whatever the investigation suggests, only labels the repository's filter lets through
        # survive (the review's permission gate also checks the tenant's policy).
        kept = usable_labels(investigated.labels, policy.labels_for(branch), evidence)
        action = replace(investigated, labels=kept.labels)
    else:
        action = propose(evidence, result, policy, branch)
    if evidence.notes:  # e.g. linked runs that could not be read: the reviewer should know
        action = replace(action, notes=action.notes + evidence.notes)
    action = quieted(action, modes, place, branch)
    shown = TriageParts(tuple(unless_off(part, modes, place) for part in parts.parts))
    if on_investigation:
        shown = shown.without(PartName.RELATED, INVESTIGATION_LISTS_RELATED)
    return Composed(shown.joined(action, acceptance), shown)


def unless_off(part: Part, modes: Modes, place: str) -> Part:
    """``part``, or left out when its kind is off in this place (and said so)."""
    kind = PART_KINDS.get(part.name)
    if kind is not None and modes.get(kind) is SuggestionMode.OFF:
        return left_out(part.name, off_reason(kind, place))
    return part


def quieted(
    action: ProposedAction, modes: Modes, place: str, branch: Classification
) -> ProposedAction:
    """The action under the policy file's ``off`` modes: nothing when the branch's kind is off,
    no labels when labels are; the note says why (the run's record keeps it)."""
    kind = branch_kind(branch.value)
    if kind is None:
        return action
    kept = apply_off(modes, place, kind, action.labels)
    if not kept.proposed:
        return ProposedAction(comment=None, labels=(), notes=action.notes + kept.notes)
    return replace(action, labels=kept.labels, notes=action.notes + kept.notes)
