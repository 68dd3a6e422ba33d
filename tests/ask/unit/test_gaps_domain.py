"""The coverage-gap grouping and the issue it proposes (issue 31), by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from resolveflow.ask.domain.gaps import SHOWN_CHARS, GapTopic, gap_issue, shown
from resolveflow.ask.gaps import topics
from resolveflow.domain.inert_markdown import ZWJ


def test_questions_join_the_closest_topic_above_the_threshold_in_order() -> None:
    vectors = np.array(
        [
            [1.0, 0.0, 0.0],
            [0.9, 0.1, 0.0],  # close to the first
            [0.0, 1.0, 0.0],  # a topic of its own
            [0.0, 0.95, 0.1],  # close to the third
            [0.5, 0.5, 0.7],  # close to neither (cosine 0.53 and 0.54 with the centres)
        ]
    )
    assert topics(vectors, 0.6) == [[0, 1], [2, 3], [4]]
    assert topics(vectors, 0.999) == [[0], [1], [2], [3], [4]]
    assert topics(vectors, 0.5) == [[0, 1], [2, 3, 4]]  # the closest centre wins, not the first


def test_a_question_is_shown_by_its_subject_or_first_line() -> None:
    assert shown("VPN password\n\nI cannot reset it, how?") == "VPN password"
    assert (
        shown("\n  How do I reset   my VPN password?  \nthanks")
        == "How do I reset my VPN password?"
    )
    assert len(shown("x" * 500)) == SHOWN_CHARS


def test_the_issue_quotes_the_questions_inert() -> None:
    topic = GapTopic(
        representative="How do I reset my VPN password?",
        count=3,
        abstained=2,
        tentative=1,
        examples=("ping @octocat <img src=x> [here](https://evil.example)", "reset VPN"),
        last_asked=datetime(2026, 12, 1, tzinfo=UTC),
    )
    title, body = gap_issue(topic, 90)
    assert title == "Docs do not answer: How do I reset my VPN password?"
    assert "People asked about this 3 times in the last 90 days" in body
    assert '2 got "nothing in the documents relates" and 1 "no page answers this for sure"' in body
    hostile = next(line for line in body.splitlines() if "octocat" in line)
    assert f"@{ZWJ}octocat" in hostile  # nobody is mentioned
    assert "<img" not in hostile and "[here]" not in hostile and "https://" not in hostile
    assert "- reset VPN" in body
