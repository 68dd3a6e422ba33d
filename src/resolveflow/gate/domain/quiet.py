"""Quiet by default (issue 31, part 3): where each kind of suggestion goes in one place. Pure.

The policy file sets a mode per kind, in ``[defaults.suggestions]`` and per repository (a
repository's table overrides the defaults kind by kind)::

    [repositories."acme/widgets".suggestions]
    duplicate = "digest"
    label = "off"

``on`` (the default): into the inbox, unless the kind's measured acceptance in that place fell
below the floor, which moves it to the digest by itself. ``always``: into the inbox whatever its
acceptance. ``digest``: recorded and listed in the daily digest, not in the inbox. ``off``: not
proposed; the product says why. The automatic move is never to ``off``, and ``off`` and
``digest`` in the policy file win over it.

Labels ride inside a proposal: with ``label = "off"`` a product drops the labels it would have
proposed (and says so in the proposal's notes); the proposal is made only when something is
left. A label's own acceptance moves nothing (a comment is not sent to the digest because one of
its labels is often removed), so the automatic move is for the proposal kinds only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from pydantic import ConfigDict, RootModel

from resolveflow.domain.vocabulary import SuggestionKind, SuggestionMode
from resolveflow.gate.domain.suggestions import Acceptance, DecisionExample, acceptance
from resolveflow.policy_file import PolicyFile

# The floor and the count below which no move is made. Half: a kind the team rejects more often
# than it approves costs more of a reviewer's attention in the inbox than it saves; the digest
# still shows it to whoever wants it. Ten decisions: fewer than that say little (three rejections
# in a row are 0 %), and a new place would otherwise go quiet before anyone had looked.
FLOOR = 0.5
MINIMUM = 10
LAST = 50  # decisions per place and kind the figure is read over (as gate/feedback.LAST)

NOUN: dict[SuggestionKind, str] = {
    SuggestionKind.RULE_COMMENT: "rule comment",
    SuggestionKind.DUPLICATE: "duplicate",
    SuggestionKind.REVIEW_REQUEST: "review request",
    SuggestionKind.LABEL: "label",
    SuggestionKind.MISSING_FACTS: "request for missing facts",
    SuggestionKind.DOCS: "documentation answer",
    SuggestionKind.DRAFT: "reply draft",
    SuggestionKind.REFINE_SUMMARY: "refine summary",
    SuggestionKind.NEW_ISSUE: "new issue",
    SuggestionKind.RELATED: "related issues",
    SuggestionKind.FILES: "likely files",
}


class SuggestionModes(RootModel[dict[SuggestionKind, SuggestionMode]]):
    """One ``suggestions`` table of the policy file: kind -> mode."""

    model_config = ConfigDict(frozen=True)


class DigestWhy(StrEnum):
    """Why a proposal went to the digest."""

    POLICY = "policy"  # the policy file says digest
    ACCEPTANCE = "acceptance"  # its kind's measured acceptance fell below the floor


@dataclass(frozen=True)
class QuietRules:
    """The automatic move's settings (``RESOLVEFLOW_SUGGESTIONS_*``)."""

    floor: float = FLOOR
    minimum: int = MINIMUM
    last: int = LAST


@dataclass(frozen=True)
class Route:
    """Where one suggestion of ``kind`` in ``place`` goes, and why."""

    place: str
    kind: SuggestionKind
    configured: SuggestionMode  # what the policy file says (``on`` when it says nothing)
    mode: SuggestionMode  # what holds: ``digest`` when the automatic move made it so
    figures: Acceptance | None  # the kind's figures in the place, when they were read
    floor: float

    @property
    def in_digest(self) -> bool:
        return self.mode is SuggestionMode.DIGEST

    @property
    def off(self) -> bool:
        return self.mode is SuggestionMode.OFF

    @property
    def why(self) -> DigestWhy | None:
        if not self.in_digest:
            return None
        return (
            DigestWhy.POLICY if self.configured is SuggestionMode.DIGEST else DigestWhy.ACCEPTANCE
        )


def place_modes(policy: PolicyFile, place: str) -> dict[SuggestionKind, SuggestionMode]:
    """The modes the policy file sets for ``place`` (a repository's table over the defaults',
    kind by kind; a kind neither names is ``on``); ``ConfigError`` for a bad table."""
    modes = dict(_table(policy, policy.defaults.get("suggestions", {}), "defaults").root)
    for name, raw in policy.repositories.items():
        if name.lower() == place.lower():
            found = _table(policy, raw.get("suggestions", {}), f"repositories.{name}")
            modes.update(found.root)
    return modes


def _table(policy: PolicyFile, raw: object, where: str) -> SuggestionModes:
    return policy.section(SuggestionModes, raw, f"{where}.suggestions")


def check_suggestions(policy: PolicyFile) -> None:
    """Every ``suggestions`` table, read now (a ``SectionCheck`` of ``parse_policy``)."""
    for name in policy.repositories:
        place_modes(policy, name)
    place_modes(policy, "")


def route(
    place: str,
    kind: SuggestionKind,
    configured: SuggestionMode,
    figures: Acceptance | None,
    rules: QuietRules,
) -> Route:
    """``configured`` as it holds now: ``on`` moves to ``digest`` when ``figures`` (the kind's
    last decisions in the place) are enough and below the floor."""
    moved = (
        configured is SuggestionMode.ON
        and kind is not SuggestionKind.LABEL
        and below_floor(figures, rules)
    )
    mode = SuggestionMode.DIGEST if moved else configured
    return Route(place, kind, configured, mode, figures, rules.floor)


def below_floor(figures: Acceptance | None, rules: QuietRules) -> bool:
    return figures is not None and figures.decisions >= rules.minimum and figures.rate < rules.floor


def kind_figures(found: list[DecisionExample], rules: QuietRules) -> list[Acceptance]:
    """Per place and proposal kind (a rule's comments together, whatever the rule; no labels),
    over the last ``rules.last`` decisions."""
    proposals = [replace(e, detail="") for e in found if e.kind is not SuggestionKind.LABEL]
    return acceptance(proposals, rules.last)


def off_reason(kind: SuggestionKind, place: str) -> str:
    """What a product records instead of a proposal of a kind that is off."""
    return f"{NOUN[kind]} suggestions are off for {place} (policy file)"


def moved_line(figures: Acceptance, floor: float) -> str:
    """The inbox's line for a kind the automatic move sent to the digest."""
    accepted = figures.approved + figures.edited
    return (
        f"{NOUN[figures.kind].capitalize()} suggestions on {figures.place} go to the digest:"
        f" {accepted} of {figures.decisions} approved over the last {figures.decisions}"
        f" decisions (floor {floor:.0%})."
    ).replace("%)", " %)")


@dataclass(frozen=True)
class Kept:
    """What is left of a product's suggestion once the modes of its place are applied."""

    proposed: bool  # False: the kind is off, nothing is proposed
    labels: tuple[str, ...]
    notes: tuple[str, ...]  # why something was left out, for the record


def apply_off(
    modes: dict[SuggestionKind, SuggestionMode],
    place: str,
    kind: SuggestionKind,
    labels: tuple[str, ...],
) -> Kept:
    """A product's suggestion of ``kind`` with ``labels``, under the ``off`` modes of its place:
    nothing when the kind is off; without its labels when labels are."""
    if modes.get(kind) is SuggestionMode.OFF:
        return Kept(False, (), (off_reason(kind, place),))
    if labels and modes.get(SuggestionKind.LABEL) is SuggestionMode.OFF:
        return Kept(True, (), (off_reason(SuggestionKind.LABEL, place),))
    return Kept(True, labels, ())
