"""The backtest's figures as a pure function of hand-built replay records and ground truth: every
definition (right, wrong, unverified; each part's figures), and the edge cases (no ground truth,
an empty replay, no duplicate pairs given)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from resolveflow.retrieval.records import SourceDocument
from resolveflow.triage.backtest_truth import ground_truth, read_resolutions
from resolveflow.triage.domain.backtest_figures import (
    ClosedAs,
    GroundTruth,
    ProposedPart,
    ReplayRecord,
    backtest_figures,
)
from resolveflow.triage.domain.parts import PartName

L, R, D, F = PartName.LABELS, PartName.RELATED, PartName.DUPLICATE, PartName.FILES


def _record(
    issue: str, seconds: float = 1.0, proposed: bool = True, **parts: list[str]
) -> ReplayRecord:
    made = tuple(ProposedPart(PartName(name), tuple(items)) for name, items in parts.items())
    return ReplayRecord(issue, proposed, seconds, made)


def _truth(duplicates: dict[str, frozenset[str]] | None = None) -> GroundTruth:
    return GroundTruth(
        labels={"1": frozenset({"bug", "io"}), "2": frozenset({"docs"}), "5": frozenset({"bug"})},
        duplicates=duplicates,
        same_fix={"3": frozenset({"30"})},
        fixed_files={"4": frozenset({"src/a.py", "tests/test_a.py"}), "5": frozenset({"src/z.py"})},
    )


def test_labels_right_wrong_and_unverified() -> None:
    records = [
        _record("1", labels=["bug", "ui"]),  # bug right, ui wrong
        _record("2"),  # labelled, nothing proposed: not covered
        _record("6", labels=["bug"]),  # no topical label: unverified, never wrong
        _record("5", labels=["bug"]),  # right
    ]
    figures = backtest_figures(records, _truth()).as_json()
    assert figures["parts"]["labels"] == {
        "precision": round(2 / 3, 4),  # bug (1), bug (5) right; ui wrong
        "recall": 0.5,  # 2 of the 4 labels of the labelled issues (1: 2, 2: 1, 5: 1)
        "coverage": round(2 / 3, 4),  # 1 and 5 of the labelled 1, 2 and 5
        "labelled_issues": 3,
        "issues_with_a_label": 2,
        "proposed": 3,
        "right": 2,
        "unverified": 1,
    }
    assert figures["wrong"] == {"total": 1, "labels": 1, "duplicate": 0, "files": 0}
    assert figures["wrong_per_100"] == 25.0  # 1 wrong over 4 replayed issues


def test_duplicates_precision_and_recall_on_the_known_pairs() -> None:
    truth = _truth(duplicates={"7": frozenset({"70"}), "8": frozenset({"80", "81"})})
    records = [
        _record("7", duplicate=["70"]),  # right
        _record("8", duplicate=["99"]),  # a known duplicate, but not of this one: wrong
        _record("9", duplicate=["70"]),  # no known duplicate at all: wrong
    ]
    figures = backtest_figures(records, truth).as_json()
    assert figures["parts"]["duplicates"] == {
        "precision": round(1 / 3, 4),
        "precision_all_flags": round(1 / 3, 4),
        "recall": round(1 / 3, 4),  # 1 of the pairs 7-70, 8-80, 8-81
        "flags": 3,
        "right": 1,
        "wrong": 2,  # the corpus says nothing of closing: the pairs are the whole truth
        "unverified": 0,
        "unverified_closed_as_duplicate": 0,
        "known_pairs": 3,
    }
    assert figures["wrong"]["duplicate"] == 2
    # A known duplicate named in the related part helps too (it relates), and is never wrong.
    related = backtest_figures([_record("8", related=["81", "5"])], truth).as_json()
    assert related["helped"] == {"issues": 1, "with_ground_truth": 1}
    assert related["wrong"]["total"] == 0


def test_without_duplicate_pairs_a_flag_is_neither_right_nor_wrong() -> None:
    figures = backtest_figures([_record("9", duplicate=["70"])], _truth()).as_json()
    assert figures["parts"]["duplicates"] == {
        "precision": None,
        "precision_all_flags": None,
        "recall": None,
        "flags": 1,
        "right": 0,
        "wrong": 0,
        "unverified": 1,
        "unverified_closed_as_duplicate": 0,
        "known_pairs": None,
    }
    assert figures["wrong"]["duplicate"] == 0
    assert figures["helped_share"] is None  # issue 9 has no ground truth of any kind


def _closing_truth() -> GroundTruth:
    """Pairs 7-70 and 8-80; the corpus says how 7, 8, 10, 11 and 12 were closed; 13 is open."""
    closed = {
        "7": ClosedAs.DUPLICATE,
        "8": ClosedAs.OTHER,  # a pair listed, though Bugzilla says FIXED: the pair decides
        "10": ClosedAs.OTHER,
        "11": ClosedAs.DUPLICATE,
        "12": ClosedAs.OTHER,
    }
    base = _truth(duplicates={"7": frozenset({"70"}), "8": frozenset({"80"})})
    return GroundTruth(base.labels, base.duplicates, base.same_fix, base.fixed_files, closed)


def test_a_flag_is_right_on_its_pair_and_wrong_on_another_original() -> None:
    records = [_record("7", duplicate=["70"]), _record("8", duplicate=["81"])]
    dups = backtest_figures(records, _closing_truth()).as_json()["parts"]["duplicates"]
    assert (dups["right"], dups["wrong"], dups["unverified"]) == (1, 1, 0)
    assert dups["precision"] == 0.5 and dups["recall"] == 0.5  # of the pairs 7-70 and 8-80


def test_a_flag_on_an_issue_closed_as_something_else_is_wrong() -> None:
    figures = backtest_figures([_record("10", duplicate=["3"])], _closing_truth()).as_json()
    assert figures["parts"]["duplicates"]["wrong"] == 1
    assert figures["parts"]["duplicates"]["precision"] == 0.0
    assert figures["wrong"]["duplicate"] == 1 and figures["wrong_per_100"] == 100.0


def test_a_flag_on_a_duplicate_with_no_pair_listed_or_an_open_issue_is_unverified() -> None:
    records = [
        _record("7", duplicate=["70"]),  # right
        _record("11", duplicate=["5"]),  # closed as a duplicate, of what nobody lists
        _record("13", duplicate=["5"]),  # still open: nobody has said
        _record("12", duplicate=["5"]),  # closed as something else: wrong
    ]
    figures = backtest_figures(records, _closing_truth()).as_json()
    assert figures["parts"]["duplicates"] == {
        "precision": 0.5,  # 1 right over 1 right + 1 wrong; the 2 unverified left out
        "precision_all_flags": 0.25,  # every flag not naming a pair counted wrong
        "recall": 1.0,  # the one pair replayed, 7-70 (8 is not replayed here)
        "flags": 4,
        "right": 1,
        "wrong": 1,
        "unverified": 2,
        "unverified_closed_as_duplicate": 1,
        "known_pairs": 1,
    }
    assert figures["wrong"]["duplicate"] == 1


def test_without_pairs_the_closing_still_verifies_a_flag_wrong() -> None:
    base = _closing_truth()
    truth = GroundTruth(base.labels, None, closed_as=base.closed_as)
    records = [_record("10", duplicate=["3"]), _record("11", duplicate=["3"])]
    dups = backtest_figures(records, truth).as_json()["parts"]["duplicates"]
    assert (dups["right"], dups["wrong"], dups["unverified"]) == (0, 1, 1)
    assert dups["precision"] == 0.0 and dups["recall"] is None and dups["known_pairs"] is None


def test_files_hit_in_the_first_five_and_a_miss_is_one_wrong_part() -> None:
    six = ["src/b.py", "src/c.py", "src/d.py", "src/e.py", "src/f.py", "src/z.py"]
    records = [
        _record("4", files=["src/x.py", "tests/test_a.py"]),  # hit (any file the fix changed)
        _record("5", files=six),  # the fix's file is sixth: a miss, one wrong part
        _record("1", files=["src/a.py"]),  # no known fix: unverified
    ]
    figures = backtest_figures(records, _truth()).as_json()
    assert figures["parts"]["files"] == {
        "hit@5": 0.5,
        "fixed_issues": 2,
        "issues_with_files": 2,
        "hits": 1,
    }
    assert figures["wrong"]["files"] == 1
    # No files suggested on a fixed issue: a miss for Hit@5, but nothing shown, so not wrong.
    quiet = backtest_figures([_record("4")], _truth()).as_json()
    assert quiet["parts"]["files"]["hit@5"] == 0.0 and quiet["wrong"]["files"] == 0


def test_related_share_counts_issues_citing_a_same_fix_or_duplicate_issue() -> None:
    truth = _truth(duplicates={"7": frozenset({"70"})})
    records = [
        _record("3", related=["31", "30"]),  # cites its same-fix issue (second)
        _record("7", related=["71"]),  # has a known duplicate, cites something else
        _record("1", related=["40"]),  # nothing known relates to 1
    ]
    related = backtest_figures(records, truth).as_json()["parts"]["related"]
    assert related == {
        "share": 0.5,  # 3 of the issues 3 and 7
        "issues_with_known_related": 2,
        "issues_citing_known": 1,
        "issues_citing": 3,
        "citations": 4,
        "citations_known": 1,
    }


def test_helped_share_over_the_issues_with_any_ground_truth() -> None:
    records = [
        _record("1", labels=["ui"]),  # labelled, only a wrong label: not helped
        _record("3", related=["30"]),  # same fix cited: helped
        _record("4", files=["tests/test_a.py"]),  # fix's file first: helped
        _record("6", labels=["bug"]),  # no ground truth: left out of both counts
        _record("2", proposed=False),  # labelled, nothing proposed: not helped
    ]
    figures = backtest_figures(records, _truth()).as_json()
    assert figures["helped"] == {"issues": 2, "with_ground_truth": 4}
    assert figures["helped_share"] == 0.5
    assert figures["proposal_rate"] == 0.8


def test_parts_with_no_ground_truth_are_counted_with_examples_only_on_request() -> None:
    records = [_record(str(n), missing_facts=["version", "reproduction"]) for n in range(7)]
    records.append(_record("20", docs=["guide/install.md"]))
    figures = backtest_figures(records, _truth())
    assert figures.as_json()["parts"]["missing_facts"] == {"count": 7}
    shown = figures.as_json(examples=True)["parts"]
    assert len(shown["missing_facts"]["examples"]) == 5
    assert shown["missing_facts"]["examples"][0] == {
        "issue": "0",
        "items": ["version", "reproduction"],
    }
    assert shown["docs"] == {
        "count": 1,
        "examples": [{"issue": "20", "items": ["guide/install.md"]}],
    }
    assert shown["failing_checks"] == {"count": 0, "examples": []}
    assert figures.as_json()["wrong"]["total"] == 0  # none of them can be verified wrong


def test_seconds_per_issue_median_and_nearest_rank_p95() -> None:
    records = [_record(str(n), seconds=float(n)) for n in range(1, 21)]  # 1 .. 20 s
    figures = backtest_figures(records, _truth()).as_json()
    assert figures["seconds_per_issue"] == {"median": 10.5, "p95": 19.0}
    one = backtest_figures([_record("1", seconds=0.25)], _truth()).as_json()
    assert one["seconds_per_issue"] == {"median": 0.25, "p95": 0.25}


def test_an_empty_replay_has_no_shares_and_nothing_wrong() -> None:
    figures = backtest_figures([], _truth()).as_json()
    assert figures["helped_share"] is None and figures["wrong_per_100"] is None
    assert figures["proposal_rate"] is None
    assert figures["seconds_per_issue"] == {"median": None, "p95": None}
    parts = figures["parts"]
    assert parts["labels"]["precision"] is None and parts["labels"]["coverage"] is None
    assert parts["files"]["hit@5"] is None and parts["related"]["share"] is None
    assert figures["wrong"]["total"] == 0


def test_no_ground_truth_at_all() -> None:
    empty = GroundTruth(labels={}, duplicates=None)
    records = [_record("1", labels=["bug"], related=["2"]), _record("2")]
    figures = backtest_figures(records, empty).as_json()
    assert figures["helped_share"] is None and figures["helped"]["with_ground_truth"] == 0
    assert figures["wrong_per_100"] == 0.0 and figures["parts"]["labels"]["unverified"] == 1


def test_a_record_lists_its_parts_items_and_omits_empty_parts() -> None:
    record = _record("1", labels=["bug"], related=[], files=["a.py", "b.py"])
    assert record.items(L) == ("bug",) and record.items(R) == () and record.items(D) == ()
    assert record.items(F) == ("a.py", "b.py")
    assert record.as_json() == {"labels": ["bug"], "files": ["a.py", "b.py"]}


def _doc(id_: str, day: int, labels: list[str] | None = None) -> SourceDocument:
    return SourceDocument(
        source="backtest",
        external_id=id_,
        kind="issue",
        title=f"issue {id_}",
        body="",
        labels=labels or [],
        created_at=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=day),
    )


def test_ground_truth_keeps_the_earlier_relatives_and_tells_no_pairs_from_none() -> None:
    docs = [_doc("1", 1, ["bug", "good first issue"]), _doc("2", 2), _doc("3", 3, ["stale"])]
    replayed = {"2", "3", "1"}
    truth = ground_truth(
        docs, replayed, duplicates=[("1", "2")], merged_fix_links={"3": {"9"}, "1": {"9"}}
    )
    assert truth.labels == {"1": frozenset({"bug"})}  # topical labels only; 3 has none
    assert truth.duplicates == {"2": frozenset({"1"})}  # the later report names the earlier
    assert truth.same_fix == {"3": frozenset({"1"})}
    assert truth.fixed_files == {}  # no clone
    assert ground_truth(docs, replayed).duplicates is None
    assert ground_truth(docs, replayed, duplicates=[]).duplicates == {}


def test_how_issues_were_closed_is_read_from_resolution_state_reason_and_the_label(
    tmp_path: Path,
) -> None:
    rows = [
        {"id": 1, "resolution": "DUPLICATE"},
        {"id": 2, "resolution": "FIXED"},
        {"id": 3, "resolution": ""},  # open in Bugzilla: unknown
        {"id": "4", "state_reason": "duplicate"},
        {"id": "5", "state_reason": "not_planned"},
        {"id": "6", "state_reason": "reopened"},  # says nothing of a duplicate
        {"id": "7", "kind": "pull", "state_reason": "completed"},  # a pull request: not read
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    resolutions = read_resolutions([corpus])
    assert resolutions == {"1": "duplicate", "2": "fixed", "4": "duplicate", "5": "not_planned"}
    docs = [_doc(str(n), n) for n in range(1, 7)] + [_doc("8", 8, ["Duplicate"])]
    replayed = {str(n) for n in range(2, 9)}  # 1 is not replayed
    truth = ground_truth(docs, replayed, resolutions=resolutions)
    assert truth.closed_as == {
        "2": ClosedAs.OTHER,
        "4": ClosedAs.DUPLICATE,
        "5": ClosedAs.OTHER,
        "8": ClosedAs.DUPLICATE,  # the duplicate label, whatever its case
    }
    # A corpus with neither a resolution nor a duplicate label says nothing of closing.
    assert ground_truth(docs[:6], replayed, resolutions={}).closed_as is None
