"""``eval answers``' passage figures: when a quoted passage holds a label, ``passage_right`` and
``confidently_wrong`` over hand-made outcomes, their targets, and the label in the questions file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resolveflow.ask.domain.answers import Answer, AnswerOutcome, Citation, DocumentRef
from resolveflow.ask.evaluation import (
    TARGET_SETS,
    MissKind,
    Outcome,
    Question,
    holds,
    miss,
    outcome,
    quoted,
    read_questions,
    report,
)
from resolveflow.errors import InvalidInput


def cite(section: str, quote: str, path: str = "commands/shelf-build.html") -> Citation:
    return Citation(
        n=1, chunk_id=7, document_id="d", title="t", path=path, url=None, section=section,
        quote=quote,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("section", "quote", "label", "held"),
    [
        ("Output Options", "`--out-dir` *directory*: Folder for all results.", ["--out-dir"], True),
        # casefolded, whitespace runs as one space, ` * _ removed, on both sides
        ("", "Set   SHELF_OUT_DIR\nto move\tthe   folder.", ["shelf_out_dir to move"], True),
        ("", "**Deletes** the whole\n  output folder", ["deletes the WHOLE output folder"], True),
        # the section's heading is part of the quoted passage
        ("Caret requirements", "An update is allowed if ...", ["caret requirements"], True),
        # every string of the label, not one of them
        ("Output Options", "`--out-dir` *directory*", ["--out-dir", "environment variable"], False),
        ("", "Remove results from the output folder.", ["--out-dir"], False),
        ("", "anything", [], False),  # no label: nothing to hold
    ],
)
def test_a_quoted_passage_holds_a_label_when_every_string_occurs_in_it(
    section: str, quote: str, label: list[str], held: bool
) -> None:
    assert holds(cite(section, quote), label) is held


def test_a_miss_names_the_section_and_first_words_of_what_was_quoted() -> None:
    long = " ".join(f"w{i}" for i in range(30))
    assert quoted(cite("Output Options", long)) == (
        "Output Options § w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 …"
    )
    assert quoted(cite("", "Short text.")) == "Short text."


LABELLED = Question("a", "put results elsewhere", ("commands/shelf-build.html",), ("--out-dir",))
UNLABELLED = Question("b", "why is the first build slow", ("faq.md",))
UNANSWERABLE = Question("c", "publish to npm", ())


def done(
    question: Question, *, held: bool = False, abstained: bool = False, tentative: bool = False
) -> Outcome:
    rank = 1 if question.answers else None
    return Outcome(question, rank, abstained, True, True, "x", tentative, passage_held=held,
                   quoted="Output Options § Folder for all results")  # fmt: skip


def test_passage_right_is_over_answered_labelled_questions() -> None:
    outcomes = [
        done(LABELLED, held=True),
        done(LABELLED, held=False),
        done(LABELLED, held=False, tentative=True),  # not an answer: not counted
        done(LABELLED, held=False, abstained=True),  # not counted
        done(UNLABELLED),  # no label: not counted
        done(UNANSWERABLE),
    ]
    result = report(outcomes)
    assert result.passage_labelled == 4
    assert result.passage_right == pytest.approx(1 / 2)


def test_confidently_wrong_counts_answers_holding_no_label_and_answered_unanswerables() -> None:
    outcomes = [
        done(LABELLED, held=True),  # right
        done(LABELLED, held=False),  # wrong
        done(UNANSWERABLE),  # answered though nothing answers it: wrong
        done(UNANSWERABLE, abstained=True),  # not an answer
        done(UNANSWERABLE, tentative=True),  # not an answer
        done(UNLABELLED),  # answerable without a label: not judged
    ]
    assert report(outcomes).confidently_wrong == pytest.approx(2 / 3)


def test_without_labels_there_are_no_passage_figures_nor_their_target() -> None:
    result = report([done(UNLABELLED), done(UNANSWERABLE)])
    assert result.passage_right is None and result.confidently_wrong is None
    assert "passage_right" not in result.checks(TARGET_SETS["general"])
    # asked for explicitly, a passage figure has no value and is not met
    checks = result.checks(TARGET_SETS["passages"])
    assert checks["passage_right"] == {"value": None, "target": ">= 0.85", "met": False}
    assert checks["confidently_wrong"]["met"] is False


def test_passage_right_is_held_to_its_target_on_any_labelled_corpus() -> None:
    result = report([done(LABELLED, held=True), done(LABELLED, held=False)])
    for name in ("general", "runbooks"):
        assert result.checks(TARGET_SETS[name])["passage_right"] == {
            "value": 0.5, "target": ">= 0.85", "met": False,
        }  # fmt: skip
    checks = result.checks(TARGET_SETS["passages"])
    assert set(checks) >= {"mrr_at_5", "passage_right", "confidently_wrong"}
    assert checks["mrr_at_5"]["target"] == ">= 0.8"
    assert checks["confidently_wrong"] == {"value": 0.5, "target": "<= 0.1", "met": False}


def test_a_confidently_wrong_answer_is_a_miss_with_what_it_quoted() -> None:
    found = miss(done(LABELLED, held=False))
    assert found is not None and found.kind is MissKind.PASSAGE_NOT_QUOTED
    assert found.quoted == "Output Options § Folder for all results"
    assert found.as_json()["quoted"] == found.quoted
    answered_anyway = miss(done(UNANSWERABLE))
    assert answered_anyway is not None
    assert answered_anyway.kind is MissKind.ANSWERED_WITHOUT_SOURCE
    assert answered_anyway.quoted == "Output Options § Folder for all results"
    assert miss(done(LABELLED, held=True)) is None


def test_an_outcome_holds_the_label_when_any_citation_does() -> None:
    first = cite("Building", "Building compiles every part.", "guide.html")
    second = cite("Output Options", "`--out-dir` *directory*: Folder for all results.")
    ref = DocumentRef(document_id="d", chunk_id=7, title="t", path="guide.html", url=None, score=1)
    answer = Answer(question="q", text="...", abstained=False, outcome=AnswerOutcome.ANSWERED,
                    citations=[first, second], retrieved=[ref])  # fmt: skip
    found = outcome(LABELLED, answer)
    assert found.passage_held and not found.confidently_wrong
    assert found.quoted == "Building § Building compiles every part."
    assert not outcome(LABELLED, answer.model_copy(update={"citations": [first]})).passage_held


def test_the_questions_file_carries_the_label(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    rows = [
        {"id": "a", "question": "q", "answers": ["x.html"], "passage": ["--out-dir", "folder"]},
        {"id": "b", "question": "q", "answers": ["x.html"]},
        {"id": "c", "question": "q", "answers": [], "passage": []},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [q.passage for q in read_questions(path)] == [("--out-dir", "folder"), (), ()]
    path.write_text(json.dumps({**rows[0], "passage": "--out-dir"}) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"q\.jsonl line 1: not a question .*passage"):
        read_questions(path)
