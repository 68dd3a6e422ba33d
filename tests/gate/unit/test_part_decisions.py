"""Each part of a triage run's proposal decided on its own (pure): a paragraph kept word for word
is approved, changed is edited, gone is rejected; a rejected proposal rejects every part; labels
carry their own scores; internal parts make no example; dropping parts before approving makes
the comment and labels a new version needs; the score band's figures."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from resolveflow.domain.vocabulary import Decision, SuggestionKind, SuggestionOutcome
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions import ActionChanges, AnyAction, build_action, revise
from resolveflow.gate.domain.parts import (
    GREETING,
    SIGNATURE,
    Drops,
    PartItemRecord,
    PartRecord,
    dropped,
    item_lines,
    paragraph_outcome,
)
from resolveflow.gate.domain.suggestions import Decided, DecisionExample, examples
from resolveflow.gate.domain.thresholds import Scored, band_of

K, OUT = SuggestionKind, SuggestionOutcome
REPO = "acme/widgets"
RELATED = (
    "Earlier reports that look related:\n\n"
    "- [acme/widgets:12](https://github.com/acme/widgets/issues/12) (closed): Crash on save\n"
    "- [acme/widgets:31](https://github.com/acme/widgets/issues/31): Save fails"
)
FACTS = "To look into this, it would help to know:\n\n- which version you are using"
COMMENT = "\n\n".join([GREETING, RELATED, FACTS, SIGNATURE])


def related_part() -> PartRecord:
    lines = item_lines(RELATED, 2)
    items = (
        PartItemRecord("12", 0.81, "closed", lines[0]),
        PartItemRecord("31", 0.74, "open", lines[1]),
    )
    return PartRecord("related", K.RELATED, 0.81, 0.6, None, True, RELATED, items)


PARTS = (
    PartRecord("labels", K.LABEL, 0.93, 0.5, None, True, None, (PartItemRecord("bug", 0.93),)),
    related_part(),
    PartRecord(
        "missing_facts", K.MISSING_FACTS, None, None, None, True, FACTS, (PartItemRecord("v"),)
    ),
    PartRecord("files", K.FILES, 0.4, None, None, False, None, (PartItemRecord("src/a.py", 0.4),)),
    PartRecord("docs", K.DOCS, None, None, "no document answers it", True),
)


def first() -> AnyAction:
    return build_action(REPO, 7, COMMENT, ["triage", "bug"])


def decided(final: AnyAction, decision: Decision = Decision.APPROVED) -> Decided:
    version = 1 if final == first() else 2
    return Decided(
        uuid.uuid4(),
        uuid.uuid4(),
        version,
        first(),
        final,
        "workflow",
        None,
        "human_review",
        "vague_report",
        decision,
        "not now" if decision is Decision.REJECTED else None,
        datetime(2026, 11, 1, tzinfo=UTC),
        parts=PARTS,
    )


def by_kind(found: list[DecisionExample]) -> dict[tuple[K, str], DecisionExample]:
    return {(e.kind, e.detail): e for e in found}


def test_approved_as_proposed_approves_every_public_part_with_its_score() -> None:
    found = by_kind(examples(decided(first())))
    assert found[(K.REVIEW_REQUEST, "")].outcome is OUT.APPROVED  # the proposal's, as before
    assert found[(K.RELATED, "")].outcome is OUT.APPROVED
    assert found[(K.RELATED, "")].score == 0.81
    assert found[(K.MISSING_FACTS, "")].outcome is OUT.APPROVED
    assert found[(K.MISSING_FACTS, "")].score is None
    assert found[(K.LABEL, "bug")].score == 0.93  # the label's own score
    assert found[(K.LABEL, "triage")].score is None  # the branch's label: no score
    # likely files are internal and the docs part was left out: neither is an example
    assert (K.FILES, "") not in found and (K.DOCS, "") not in found
    assert len(found) == 5


def test_an_edited_paragraph_is_edited_and_a_removed_one_rejected() -> None:
    edited = COMMENT.replace("which version you are using", "which version and OS")
    without_related = edited.replace("\n\n" + RELATED, "")
    final = revise(first(), ActionChanges(comment=without_related))
    found = by_kind(examples(decided(final)))
    assert found[(K.MISSING_FACTS, "")].outcome is OUT.EDITED
    assert found[(K.RELATED, "")].outcome is OUT.REJECTED
    assert found[(K.RELATED, "")].reason == "removed by the edit that was approved"
    assert found[(K.REVIEW_REQUEST, "")].outcome is OUT.EDITED


def test_a_rejected_proposal_rejects_every_part() -> None:
    found = by_kind(examples(decided(first(), Decision.REJECTED)))
    outcomes = {key: e.outcome for key, e in found.items()}
    assert set(outcomes.values()) == {OUT.REJECTED}
    assert (K.RELATED, "") in outcomes and (K.MISSING_FACTS, "") in outcomes
    assert found[(K.RELATED, "")].reason == "not now"


def test_a_dropped_part_is_rejected_and_the_others_approved() -> None:
    changes = dropped(COMMENT, ["triage", "bug"], PARTS, Drops(parts=("related",)))
    assert changes.labels is None
    assert changes.comment == "\n\n".join([GREETING, FACTS, SIGNATURE])
    found = by_kind(examples(decided(revise(first(), changes))))
    assert found[(K.RELATED, "")].outcome is OUT.REJECTED
    assert found[(K.MISSING_FACTS, "")].outcome is OUT.APPROVED
    assert found[(K.LABEL, "bug")].outcome is OUT.APPROVED


def test_dropping_one_link_edits_the_part_and_a_label_rejects_it() -> None:
    drops = Drops(labels=("bug",), items=("related:31",))
    changes = dropped(COMMENT, ["triage", "bug"], PARTS, drops)
    assert changes.labels == ("triage",)
    assert changes.comment is not None and "issues/31" not in changes.comment
    assert "issues/12" in changes.comment
    found = by_kind(examples(decided(revise(first(), changes))))
    assert found[(K.RELATED, "")].outcome is OUT.EDITED
    assert found[(K.LABEL, "bug")].outcome is OUT.REJECTED


def test_dropping_every_link_takes_the_heading_and_every_part_the_comment() -> None:
    both = Drops(items=("related:12", "related:31"))
    comment = dropped(COMMENT, ["bug"], PARTS, both).comment
    assert comment == "\n\n".join([GREETING, FACTS, SIGNATURE])
    everything = dropped(COMMENT, ["bug"], PARTS, Drops(parts=("related", "missing_facts")))
    assert everything.comment == ""  # only the greeting and the signature were left
    labels = dropped(COMMENT, ["triage", "bug"], PARTS, Drops(parts=("labels",)))
    assert labels.labels == ("triage",) and labels.comment is None


@pytest.mark.parametrize(
    ("drops", "words"),
    [
        (Drops(), "nothing to drop"),
        (Drops(parts=("files",)), "no part 'files'"),  # internal: never in the proposal
        (Drops(parts=("docs",)), "no part 'docs'"),  # left out
        (Drops(labels=("wontfix",)), "no label 'wontfix'"),
        (Drops(items=("related:99",)), "no item 'related:99'"),
    ],
)
def test_what_cannot_be_dropped_is_said_in_one_line(drops: Drops, words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        dropped(COMMENT, ["triage", "bug"], PARTS, drops)


def test_a_paragraph_an_edit_changed_cannot_be_dropped_by_name() -> None:
    changed = COMMENT.replace("Earlier reports", "Older reports")
    with pytest.raises(InvalidInput, match="changed by an edit"):
        dropped(changed, ["bug"], PARTS, Drops(parts=("related",)))


def test_paragraph_outcome() -> None:
    assert paragraph_outcome(FACTS, COMMENT) is OUT.APPROVED
    assert paragraph_outcome(FACTS, COMMENT.replace("version", "release")) is OUT.EDITED
    assert paragraph_outcome(FACTS, "Thanks.") is OUT.REJECTED
    assert paragraph_outcome(FACTS, None) is OUT.REJECTED


def test_band_of_counts_the_same_band_only() -> None:
    decided_ = [Scored(0.71, True), Scored(0.79, False), Scored(0.75, True), Scored(0.81, True)]
    figure = band_of(0.72, [*decided_, True])
    assert (figure.low, figure.high) == (0.7, 0.8)
    assert (figure.approved, figure.decisions) == (2, 3)
    assert figure.acceptance == pytest.approx(2 / 3)
    assert band_of(0.95, decided_).acceptance is None  # nothing decided in that band yet
    assert band_of(1.0, [Scored(0.9, True)]).decisions == 1  # the top band holds 1.0


def test_band_of_a_rule_made_part_reads_every_decision_of_its_kind() -> None:
    figure = band_of(None, [True, False, Scored(0.2, True)])
    assert (figure.low, figure.approved, figure.decisions) == (None, 2, 3)
    assert figure.as_json()["band"] is None
