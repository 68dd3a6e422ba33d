"""A proposed label's rationale (one sentence, at most 280 characters, never cut mid-word) and
confidence (from the measured band when known, else the score's place above the floor); the
notes ride in the digest-bound action and follow an edit of its labels."""

from __future__ import annotations

import pytest

from resolveflow.cli.action_view import action_rows
from resolveflow.domain.vocabulary import Confidence
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions import (
    ActionChanges,
    action_digest,
    build_action,
    build_close_duplicate,
    parse_action,
    revise,
)
from resolveflow.triage.domain.label_notes import confidence_of, label_note, rationale_sentence
from resolveflow.triage.domain.parts import Part, PartItem, PartName, TriageParts
from resolveflow.triage.domain.repository_config import RepositoryConfig
from resolveflow.triage.domain.rules import ProposedAction

WHY = "learned from 812 labelled issues of this repository; the issue mentions 'crash', 'start'"


def test_the_why_becomes_one_sentence() -> None:
    assert rationale_sentence(WHY, "bug") == (
        "Learned from 812 labelled issues of this repository, and the issue mentions "
        "'crash', 'start'."
    )


def test_a_long_why_loses_whole_words_from_its_end_never_half_of_one() -> None:
    words = ", ".join(f"'word{i:03d}'" for i in range(60))
    sentence = rationale_sentence(f"learned from 9 issues; the issue mentions {words}", "bug")
    assert len(sentence) <= 280 and sentence.endswith("'.")
    assert all(part.startswith("'word") for part in sentence.split("mentions ")[1].split(", "))


@pytest.mark.parametrize(
    ("score", "floor", "acceptance", "expected"),
    [
        (0.95, 0.6, None, Confidence.HIGH),  # (0.95-0.6)/0.4 = 0.875
        (0.75, 0.6, None, Confidence.MEDIUM),  # 0.375
        (0.62, 0.6, None, Confidence.LOW),  # 0.05
        (0.99, 0.6, 0.30, Confidence.LOW),  # the team mostly refused this band
        (0.62, 0.6, 0.85, Confidence.HIGH),
        (0.62, 0.6, 0.60, Confidence.MEDIUM),
        (None, None, None, Confidence.MEDIUM),
    ],
)
def test_confidence_from_the_band_or_the_score_above_the_floor(
    score: float | None, floor: float | None, acceptance: float | None, expected: Confidence
) -> None:
    assert confidence_of(score, floor, acceptance) is expected


def test_joined_parts_give_each_learned_label_its_note() -> None:
    part = Part(PartName.LABELS, 0.9, 0.6, (PartItem("bug", 0.9, WHY),))
    joined = TriageParts((part,)).joined(ProposedAction(None, ("needs-triage",), ()))
    assert joined.labels == ("needs-triage", "bug")
    [note] = joined.label_notes
    assert (note.label, note.confidence) == ("bug", Confidence.HIGH)
    banded = TriageParts((part,)).joined(ProposedAction(None, (), ()), {PartName.LABELS: 0.2})
    assert banded.label_notes[0].confidence is Confidence.LOW


def test_notes_are_in_the_digest_and_follow_an_edit_of_the_labels() -> None:
    note = label_note("bug", WHY, 0.9, 0.6, None)
    plain = build_action("acme/widgets", 1, None, ["bug", "docs"])
    noted = build_action("acme/widgets", 1, None, ["bug", "docs"], (note,))
    assert "notes" not in plain.canonical()  # digests made before notes existed hold
    assert action_digest(plain) != action_digest(noted)
    assert revise(noted, ActionChanges(labels=("docs", "ui"))).notes == ()  # removed: gone
    kept = revise(noted, ActionChanges(labels=("bug", "ui")))
    assert [n.label for n in kept.notes] == ["bug"]  # an added label has none
    assert ("why bug", f"{note.rationale} (HIGH)") in action_rows(kept)


def test_a_note_for_a_label_the_action_does_not_set_is_refused() -> None:
    data = {
        "target": {"repository": "acme/widgets", "issue": 1},
        "labels": ["bug"],
        "notes": [{"label": "docs", "rationale": "Mentions the README.", "confidence": "LOW"}],
    }
    with pytest.raises(InvalidInput, match="does not set"):
        parse_action(data)
    data["notes"] = [{"label": "bug", "rationale": "x", "confidence": "SURE"}]
    with pytest.raises(InvalidInput, match="confidence"):
        parse_action(data)


def test_a_close_carries_its_rationale_confidence_and_suggest_only_when_set() -> None:
    plain = build_close_duplicate("acme/widgets", 2, 1, 72)
    assert {"rationale", "confidence", "suggest"}.isdisjoint(plain.canonical())
    sure = build_close_duplicate(
        "acme/widgets", 2, 1, 72, None, "Same traceback as #1.", Confidence.HIGH, suggest=True
    )
    assert sure.canonical()["confidence"] == "HIGH" and sure.canonical()["suggest"] is True
    edited = revise(sure, ActionChanges(comment="Looks like #1; closing in 3 days."))
    assert (edited.rationale, edited.suggest) == ("Same traceback as #1.", True)


def test_the_repository_config_turns_github_suggestions_on_and_refuses_a_non_boolean() -> None:
    assert RepositoryConfig.model_validate({"github_suggestions": True}).github_suggestions
    assert not RepositoryConfig().github_suggestions
    with pytest.raises(ValueError, match="github_suggestions"):
        RepositoryConfig.model_validate({"github_suggestions": "yes"})
