"""The duplicate part's score (pure): signals that mean the same on any corpus, one score in
[0, 1], a floor below which the candidate is left out and counted, and a paragraph in plain,
inert words. Only the report's own text and the retrieved earlier issues are read."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from resolveflow.triage.domain.diagnosis import Snippet
from resolveflow.triage.domain.duplicate_signals import (
    DUPLICATE_FLOOR,
    REPORTER_SAYS,
    DuplicateSignals,
    duplicate_score,
    likely_original,
)
from resolveflow.triage.domain.evidence import IssueEvidence, normalize
from resolveflow.triage.domain.parts import PartName, duplicate_part

REPO = "acme/widgets"


def _issue(number: int, title: str, text: str, relevance: float) -> Snippet:
    return Snippet(
        id=f"S{number}",
        source=f"github:{REPO}",
        external_id=str(number),
        kind="issue",
        title=title,
        url=f"https://github.com/{REPO}/issues/{number}",
        state="open",
        labels=(),
        text=text,
        relevance=relevance,
    )


def _evidence(title: str, body: str) -> IssueEvidence:
    return normalize(
        {
            "repository": REPO,
            "issue": {
                "number": 90,
                "title": title,
                "body": body,
                "state": "open",
                "author": "someone",
                "author_association": "NONE",
                "labels": [],
                "created_at": datetime(2024, 1, 1, tzinfo=UTC).isoformat(),
                "updated_at": datetime(2024, 1, 1, tzinfo=UTC).isoformat(),
                "closed_at": None,
                "is_pull_request": False,
                "url": f"https://github.com/{REPO}/issues/90",
            },
            "comments": [],
            "check_runs": [],
            "repository_labels": [],
        }
    )


TRACE = (
    'Traceback (most recent call last):\n  File "/x/loader.py", line 12, in read_rows\n'
    "ValueError: cannot parse row header in parquet shard\n"
)
ORIGINAL = _issue(7, "load_rows fails on parquet shards", TRACE, 0.74)
OTHERS = [
    _issue(8, "Export to CSV drops the index", "It drops the index.", 0.31),
    _issue(9, "Docs typo in the quickstart", "A typo.", 0.22),
    _issue(10, "Slow load on big files", "It is slow.", 0.2),
]


def test_a_report_quoting_the_same_error_as_an_earlier_issue_names_it_above_the_floor() -> None:
    found = likely_original("load_rows fails reading a parquet shard", TRACE, [ORIGINAL, *OTHERS])
    assert found is not None and found.snippet.external_id == "7"
    assert found.signals.shared_error == "ValueError: cannot parse row header in parquet shard"
    assert "parquet" in found.signals.shared_words
    assert found.score >= DUPLICATE_FLOOR
    part = duplicate_part(found, _evidence("load_rows fails reading a parquet shard", TRACE), 0.45)
    assert part.kept and part.items[0].ref == "7" and part.score == found.score
    assert part.paragraph is not None
    assert part.paragraph.startswith(
        f"This looks like a duplicate of [#7](https://github.com/{REPO}/issues/7)"
    )
    assert "both quote the error" in part.paragraph


def test_a_candidate_below_the_floor_is_left_out_and_counted_with_its_score() -> None:
    weak = [replace(s, relevance=0.2) for s in (ORIGINAL, *OTHERS)]
    found = likely_original("Widgets look odd", "They look odd to me.", weak)
    assert found is not None and found.score < DUPLICATE_FLOOR
    part = duplicate_part(found, _evidence("Widgets look odd", "They look odd to me."), 0.45)
    assert not part.kept and part.paragraph is None and part.items == ()
    assert (part.score, part.floor) == (found.score, 0.45)
    assert part.left_out is not None and "below the floor" in part.left_out
    assert part.name is PartName.DUPLICATE
    assert duplicate_part(None, _evidence("x", "y"), 0.45).left_out == "no earlier issue was found"


def test_the_same_complaint_about_another_web_site_is_not_a_duplicate() -> None:
    query = "www.shop-a.com - Design is broken"
    same_site = [_issue(3, "www.shop-a.com - Menu is broken", "", 0.6), *OTHERS]
    other_site = [_issue(3, "www.shop-b.com - Design is broken", "", 0.6), *OTHERS]
    same = likely_original(query, "", same_site)
    other = likely_original(query, "", other_site)
    assert same is not None and other is not None
    assert not same.signals.names_differ and other.signals.names_differ
    assert other.score < same.score and other.score < DUPLICATE_FLOOR


def test_a_template_many_earlier_issues_match_equally_scores_lower_than_a_standout() -> None:
    standout = likely_original("Crash on save", "", [_issue(1, "Crash on save", "", 0.7), *OTHERS])
    crowded = [_issue(n, "Crash on save", "", 0.7) for n in range(1, 5)]
    alike = likely_original("Crash on save", "", crowded)
    assert standout is not None and alike is not None
    assert alike.signals.margin == 0.0 and standout.signals.margin > 0.3
    assert alike.score < standout.score


def test_the_reporter_s_own_words_name_the_original() -> None:
    body = "Probably the same as #8, but filing anyway."
    found = likely_original("Export loses the index", body, [ORIGINAL, *OTHERS])
    assert found is not None and found.snippet.external_id == "8"
    assert found.signals.reporter_says and found.score >= REPORTER_SAYS


def test_the_score_is_bounded_and_reads_no_future() -> None:
    top = DuplicateSignals(1.0, 1.0, 1.0, ("a",), False, "KeyError: x", True)
    assert duplicate_score(top) == 1.0
    bottom = DuplicateSignals(0.0, -0.4, 0.0, (), True, None, False)
    assert duplicate_score(bottom) == 0.0
    # What happened to the candidate later (its state, labels) is not a signal: the same text
    # scores the same whatever the candidate became.
    closed = [replace(ORIGINAL, state="closed", labels=("duplicate",)), *OTHERS]
    again = likely_original("load_rows fails reading a parquet shard", TRACE, closed)
    first = likely_original("load_rows fails reading a parquet shard", TRACE, [ORIGINAL, *OTHERS])
    assert again is not None and first is not None and again.score == first.score


def test_no_earlier_issue_no_candidate() -> None:
    doc = replace(ORIGINAL, kind="doc")
    assert likely_original("x", "y", []) is None
    assert likely_original("x", "y", [doc]) is None
