"""Each label's own floor (``triage/labels.py``): the lowest probability above which that label,
proposed as an issue's likeliest on issues held out of training, was right at least
``TARGET_PRECISION`` of the time; never below the global floor; the global floor for a label
too rarely proposed to measure; never proposed when it never reaches the target."""

from __future__ import annotations

import pytest

from resolveflow.triage.labels import (
    MIN_MEASURED,
    NEVER,
    TARGET_PRECISION,
    Example,
    LabelModel,
    precision_floor,
)


def test_the_floor_is_the_lowest_probability_at_which_the_precision_reaches_the_target() -> None:
    probabilities = [0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.38, 0.36, 0.3]
    right = [True, True, True, True, True, True, False, True, False, False]
    # Precision at or above each, by hand: 1 (x6), 6/7 = 0.857, 7/8 = 0.875, 7/9 = 0.778, 0.7.
    assert TARGET_PRECISION == 0.85
    assert precision_floor(probabilities, right) == 0.38
    # The order they come in does not matter.
    assert precision_floor(probabilities[::-1], right[::-1]) == 0.38


def test_a_floor_lets_every_equal_probability_through_so_a_tie_is_read_as_one_point() -> None:
    probabilities = [0.9] * 6 + [0.5] * 4
    right = [True] * 6 + [True, False, False, False]
    # At 0.5 all four tied proposals pass: 7 right of 10 (0.7), not the 7 of 7 of the first.
    assert precision_floor(probabilities, right) == 0.9


def test_a_label_never_right_often_enough_is_never_proposed_and_a_rare_one_is_not_measured() -> (
    None
):
    assert precision_floor([0.9, 0.8] * 5, [False, True] * 5) == NEVER > 1.0
    assert precision_floor([0.9] * (MIN_MEASURED - 1), [True] * (MIN_MEASURED - 1)) is None


def _history() -> list[Example]:
    """Two labels told apart by their words; two given at random to reports that read the same
    (a coin toss for any model); a rare one."""
    examples = []
    for i in range(30):
        examples.append(Example(f"crash traceback error when saving item{i}", frozenset({"bug"})))
        examples.append(
            Example(f"please add a feature option thing{i}", frozenset({"enhancement"}))
        )
    for i in range(40):
        label = "question" if i % 2 else "support"
        examples.append(Example(f"how do I configure the loader setting{i}", frozenset({label})))
    examples += [Example(f"typo in docs page{i}", frozenset({"docs"})) for i in range(4)]
    return examples


@pytest.fixture(scope="module")
def model() -> LabelModel:
    return LabelModel.train(_history())


def test_the_model_learns_each_label_s_floor_from_its_held_out_history(model: LabelModel) -> None:
    assert model.labels == ["bug", "docs", "enhancement", "question", "support"]
    # Told apart cleanly: measured, reached, and never below the global floor.
    assert model.floors["bug"] <= 1.0 and model.floors["enhancement"] <= 1.0
    assert model.floor("enhancement", 0.35) == max(0.35, model.floors["enhancement"])
    assert model.floor("enhancement", 0.99) == max(0.99, model.floors["enhancement"])
    # Too rare to measure: the global floor.
    assert "docs" not in model.floors and model.floor("docs", 0.35) == 0.35
    [crash] = model.suggest_many(["crash traceback error when saving"])
    assert crash is not None and crash.label == "bug"


def test_a_label_that_is_a_coin_toss_is_not_proposed_even_when_it_is_the_likeliest(
    model: LabelModel,
) -> None:
    measured = {label for label in ("question", "support") if label in model.floors}
    assert measured  # 40 held-out predictions between them: one has at least 20
    assert all(model.floors[label] == NEVER for label in measured)
    text = "how do I configure the loader"
    for label in measured:
        [raw] = model.suggest_many([text], allowed={label}, min_probability=0.0, own_floors=False)
        assert raw is not None and raw.label == label
        assert model.suggest_many([text], allowed={label}, min_probability=0.0) == [None]


def test_learning_without_floors_keeps_the_global_one_for_every_label() -> None:
    model = LabelModel.train(_history(), own_floors=False)
    assert model.floors == {} and model.floor("bug", 0.35) == 0.35


def test_a_word_most_issues_use_is_never_a_reason() -> None:
    """The word "with" is in every issue and twice in each bug: a weight towards ``bug``, but no reason;
    the words only bugs use are."""
    examples = [
        Example(f"crash with traceback with error item{i}", frozenset({"bug"})) for i in range(20)
    ] + [Example(f"please add option with thing{i}", frozenset({"enhancement"})) for i in range(40)]
    model = LabelModel.train(examples, own_floors=False)
    reasons = model.reasons("a crash with a traceback", "bug")
    assert reasons and "with" not in reasons
    assert set(reasons) <= {"crash", "traceback"}
