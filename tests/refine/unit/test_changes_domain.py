"""The pure rules that find fixing commits: squash subjects, closing keywords, their negatives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from resolveflow.adapters.git import CommitInfo
from resolveflow.domain.commit_messages import fix_references, squash_pr
from resolveflow.refine.domain.changes import fixing_commits


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Fix loader (#1234)", 1234),
        ("Fix loader (#7)  ", 7),
        ("Fix #12 in loader (#15)", 15),
        ("Fix (#12) in loader", None),  # not at the end
        ("Fix loader (#12) and more", None),
        ("Fix loader #12", None),
        ("Fix loader (12)", None),
        ("Fix loader (#0)", None),
        ("Fix loader (#12)(#13)", 13),
        ("Fix loader (owner/repo#12)", None),
        ("", None),
    ],
)
def test_squash_pr(subject: str, expected: int | None) -> None:
    assert squash_pr(subject) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fixes #12", {12}),
        ("Fix #12", {12}),
        ("FIXED #9", {9}),
        ("resolves #7", {7}),
        ("Resolved #7.", {7}),
        ("closes #3", {3}),
        ("Close #3", {3}),
        ("closed #3", {3}),
        ("Fixes: #12", {12}),
        ("closes #3, #4", {3, 4}),
        ("closes #3, #4 and #5", {3, 4, 5}),
        ("fixes #3 & #4", {3, 4}),
        ("Fix #1 and fix #2", {1, 2}),
        ("Some change\n\nFixes #12\nCloses #13", {12, 13}),
        ("(fixes #12)", {12}),
        ("fix #12-ish", {12}),
        # negatives
        ("prefixes #3", set()),
        ("hotfix #3", set()),
        ("pre-fix #3", set()),
        ("see #12", set()),
        ("fixes the bug in #3", set()),
        ("fixes #12abc", set()),
        ("fixes owner/repo#12", set()),
        ("fixes https://github.com/owner/repo/issues/12", set()),
        ("fixes https://example.com/page#12", set()),
        ("see https://example.com/fix#12", set()),
        ("path/fix #12", set()),
        ("fixes GH-12", set()),
        ("fixes #0", set()),
        ("fixes #12/comments", set()),
        ("closes #3, see #4", {3}),
        ("fixes#12", set()),
    ],
)
def test_fix_references(text: str, expected: set[int]) -> None:
    assert fix_references(text) == frozenset(expected)


def _commit(sha: str, day: int, subject: str, message: str = "") -> CommitInfo:
    return CommitInfo(sha, datetime(2023, 1, day, tzinfo=UTC), subject, message)


def test_fixing_commits_by_squash_pr_and_by_message_oldest_first_without_duplicates() -> None:
    squash = _commit("a" * 40, 5, "Fix loader (#7)")
    says = _commit("b" * 40, 2, "Loader: handle empty files", "Longer text.\n\nFixes #3")
    in_subject = _commit("c" * 40, 9, "fix #3 again")
    unrelated = [
        _commit("d" * 40, 1, "Fix loader (#8)"),  # another pull request
        _commit("e" * 40, 3, "Refactor (#3)"),  # '(#3)' is pull request 3, not issue 3
        _commit("f" * 40, 4, "prefixes #3"),
        _commit("0" * 40, 6, "Mention (#7) not at the end"),
    ]
    commits = [in_subject, squash, *unrelated, says, squash]
    assert fixing_commits(commits, 3, [7]) == [says, squash, in_subject]
    assert fixing_commits(commits, 3, []) == [says, in_subject]
    assert fixing_commits(commits, 99, {7}) == [squash]
    assert fixing_commits([], 3, [7]) == []


def test_fixing_commits_keeps_the_input_order_for_equal_dates() -> None:
    first, second = _commit("1" * 40, 2, "fixes #3"), _commit("2" * 40, 2, "closes #3")
    assert fixing_commits([first, second], 3, ()) == [first, second]
    assert fixing_commits([second, first], 3, ()) == [second, first]
