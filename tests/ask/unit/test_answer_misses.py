"""``eval answers``' misses: which figure each question cost, the first that applies."""

from __future__ import annotations

import pytest

from resolveflow.ask.evaluation import MissKind, Outcome, Question, miss, misses

ANSWERABLE = Question("a", "Disk full on node-3", ("node/Disk.md",))
NO_SOURCE = Question("b", "How long should sourdough proof?", ())


@pytest.mark.parametrize(
    ("outcome", "kind"),
    [
        (Outcome(ANSWERABLE, 1, False, True, True, "node/Disk.md"), None),
        (Outcome(NO_SOURCE, None, True, False, False, "node/Disk.md"), None),
        # "these may help" on a question no page answers claims no answer: not a miss
        (Outcome(NO_SOURCE, None, False, False, False, "node/Disk.md", True), None),
        (
            Outcome(NO_SOURCE, None, False, False, False, "node/Disk.md"),
            MissKind.ANSWERED_WITHOUT_SOURCE,
        ),
        (Outcome(ANSWERABLE, 1, True, False, False, "node/Disk.md"), MissKind.ABSTAINED),
        (Outcome(ANSWERABLE, None, False, False, False, "x.md"), MissKind.NOT_IN_TOP_5),
        (Outcome(ANSWERABLE, 6, False, False, False, "x.md"), MissKind.NOT_IN_TOP_5),
        (Outcome(ANSWERABLE, 2, False, True, False, "x.md"), MissKind.NOT_FIRST),
        (Outcome(ANSWERABLE, 1, False, True, False, "node/Disk.md"), MissKind.FIRST_CITATION_WRONG),
    ],
)
def test_each_outcome_gets_the_first_miss_that_applies(
    outcome: Outcome, kind: MissKind | None
) -> None:
    found = miss(outcome)
    assert (found.kind if found else None) == kind
    if found:
        assert found.id == outcome.question.id and found.first == outcome.top
        assert found.as_json()["kind"] == kind.name.lower()  # type: ignore[union-attr]


def test_misses_keep_the_question_order() -> None:
    outcomes = [
        Outcome(ANSWERABLE, 2, False, True, False, "x.md"),
        Outcome(NO_SOURCE, None, True, False, False, None),
        Outcome(NO_SOURCE, None, False, False, False, "node/Disk.md"),
    ]
    assert [(m.id, m.kind) for m in misses(outcomes)] == [
        ("a", MissKind.NOT_FIRST),
        ("b", MissKind.ANSWERED_WITHOUT_SOURCE),
    ]
