"""The diagnosis evaluation's pure parts (issue 30): which past issues have a known answer, and
the figures of a small set of outcomes worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from resolveflow.errors import InvalidInput
from resolveflow.retrieval.records import SourceDocument
from resolveflow.triage.diagnosis_evaluation import DiagnosisOutcome, report
from resolveflow.triage.known_relations import DUPLICATE, SAME_FIX, KnownCase, known_cases


def doc(id_: str, day: int, kind: str = "issue") -> SourceDocument:
    return SourceDocument(
        "backtest", id_, kind, f"t{id_}", "b", created_at=datetime(2024, 1, day, tzinfo=UTC)
    )


DOCS = [doc("1", 1), doc("2", 2), doc("3", 3), doc("4", 4), doc("5", 5), doc("9", 9, "pull")]


def test_the_later_report_of_a_pair_is_the_case_and_the_earlier_its_known_answer() -> None:
    cases = known_cases(DOCS, duplicates=[("3", "1"), ("2", "4"), ("7", "1"), ("5", "5")])
    # (7, 1): 7 is not in the corpus; (5, 5): an issue is not its own duplicate.
    assert cases == [
        KnownCase("3", frozenset({"1"}), DUPLICATE),
        KnownCase("4", frozenset({"2"}), DUPLICATE),
    ]


def test_issues_fixed_by_one_pull_request_know_the_earlier_ones() -> None:
    links = {"1": {"9"}, "2": {"9"}, "4": {"9", "10"}, "5": {"11"}}
    cases = known_cases(DOCS, fix_links=links)
    # PR 9 fixed 1, 2 and 4: 2 knows 1, 4 knows 1 and 2; 5 alone in PR 11 has no known answer.
    assert cases == [
        KnownCase("2", frozenset({"1"}), SAME_FIX),
        KnownCase("4", frozenset({"1", "2"}), SAME_FIX),
    ]
    both = known_cases(DOCS, duplicates=[("4", "3")], fix_links=links)
    assert both[-1] == KnownCase("4", frozenset({"1", "2", "3"}), DUPLICATE)


def outcome(id_: str, **kw: object) -> DiagnosisOutcome:
    base: dict[str, object] = {
        "id": id_,
        "how": DUPLICATE,
        "outcome": "approve",
        "model_wrote": True,
        "failed_gates": (),
        "known_retrieved": True,
        "cited_known": False,
        "duplicate_named": False,
        "severity": "low",
        "request_like": False,
    }
    return DiagnosisOutcome(**{**base, **kw})  # type: ignore[arg-type]


def test_figures_of_four_diagnoses_by_hand() -> None:
    outcomes = [
        outcome("a", cited_known=True, duplicate_named=True),
        outcome("b", outcome="escalate", failed_gates=("risk",), severity="high",
                request_like=True),
        outcome("c", how=SAME_FIX, known_retrieved=False, request_like=True, severity="medium"),
        outcome("d", outcome="escalate", model_wrote=False, failed_gates=("model_output",),
                severity=None, known_retrieved=True, cited_known=True, request_like=True),
    ]  # fmt: skip
    result = report(outcomes)
    assert result.as_json() == {
        "cases": 4,
        "duplicate_cases": 3,
        "escalated": 0.5,
        "model_wrote": 0.75,
        "known_retrieved": 0.75,  # a, b, d
        "cited_known": 0.5,  # a, d
        "cited_known_of_retrieved": 0.6667,  # 2 of 3
        "duplicate_named": 0.3333,  # a, of the duplicates a, b, d
        "severity": {"high": 1, "low": 1, "medium": 1, "none": 1},
        # requests with a severity: b (high) and c (medium); d gave none
        "request_like": 2,
        "severity_sane": 0.5,
        "failed_gates": {"model_output": 1, "risk": 1},
    }
    with pytest.raises(InvalidInput, match="no issue of the corpus has a known"):
        report([])
    assert report([outcome("z")]).severity_sane is None  # no request to judge it on


@pytest.mark.parametrize(
    ("labels", "not_defect"),
    [
        (("enhancement",), True),
        (("dataset request",), True),
        (("type: Documentation",), True),
        (("bug", "question"), True),
        (("bug",), False),
        (("good first issue",), False),  # "issue" says nothing of what kind
        ((), False),
    ],
)
def test_which_labels_say_an_issue_is_not_a_defect(
    labels: tuple[str, ...], not_defect: bool
) -> None:
    from resolveflow.triage.diagnosis_evaluation import _request_like

    assert _request_like(labels) is not_defect


def test_the_duplicates_file_its_header_and_a_bad_line(tmp_path: Path) -> None:
    from resolveflow.retrieval.sources import read_pairs

    good = tmp_path / "d.tsv"
    good.write_text("id_a\tid_b\n1\t2\n\n3\t4\n", encoding="utf-8")
    assert read_pairs(good) == [("1", "2"), ("3", "4")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("id_a\tid_b\n1 2\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad.tsv line 2: expected two tab-separated ids"):
        read_pairs(bad)
    with pytest.raises(InvalidInput, match="cannot read"):
        read_pairs(tmp_path / "none.tsv")


def test_only_merged_pull_requests_fixed_what_they_name(tmp_path: Path) -> None:
    from resolveflow.triage.backtest import read_fix_links

    links = tmp_path / "fix_links.tsv"
    links.write_text("issue\tpr\tpr_merged\n1\t9\t1\n2\t9\t1\n3\t8\t0\n4\t8\t0\n", "utf-8")
    assert read_fix_links(links) == {"1": {"9"}, "2": {"9"}, "3": {"8"}, "4": {"8"}}
    merged = read_fix_links(links, merged_only=True)
    assert merged == {"1": {"9"}, "2": {"9"}}
    assert known_cases(DOCS, fix_links=merged) == [KnownCase("2", frozenset({"1"}), SAME_FIX)]
