"""Canonical actions: equivalent actions share a digest, any significant change alters it."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions import (
    GitHubIssueAction,
    action_digest,
    body_with_marker,
    build_action,
    canonical_json,
    check_digest_format,
)

label_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20
).filter(lambda s: s.strip() != "" and "\n" not in s)
comment_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=200
).filter(lambda s: s.strip() != "" and "resolveflow" not in s.lower())
repos = st.sampled_from(["acme/widgets", "huggingface/datasets", "o/r"])
issues = st.integers(min_value=1, max_value=10**6)


def _digest(repo: str, issue: int, comment: str | None, labels: list[str]) -> str:
    return action_digest(build_action(repo, issue, comment, labels))


@given(repos, issues, comment_text, st.lists(label_text, min_size=1, max_size=6), st.randoms())
def test_equivalent_actions_share_a_digest(repo, issue, comment, labels, rnd) -> None:
    shuffled = labels + labels[: rnd.randint(0, len(labels))]  # duplicates too
    rnd.shuffle(shuffled)
    decomposed = unicodedata.normalize("NFD", comment).replace("\n", "\r\n")
    assert _digest(repo, issue, comment, labels) == _digest(
        repo.upper(), issue, decomposed, [unicodedata.normalize("NFD", x) for x in shuffled]
    )


@given(repos, issues, comment_text, st.lists(label_text, max_size=5), comment_text)
def test_any_change_to_the_comment_alters_the_digest(repo, issue, comment, labels, other) -> None:
    assume(unicodedata.normalize("NFC", other) != unicodedata.normalize("NFC", comment))
    assume(other.replace("\r\n", "\n") != comment.replace("\r\n", "\n"))
    assert _digest(repo, issue, comment, labels) != _digest(repo, issue, other, labels)


@given(repos, issues, comment_text, st.lists(label_text, max_size=5), label_text)
def test_adding_a_label_alters_the_digest(repo, issue, comment, labels, extra) -> None:
    normalized = {unicodedata.normalize("NFC", x).strip() for x in labels}
    assume(unicodedata.normalize("NFC", extra).strip() not in normalized)
    assert _digest(repo, issue, comment, labels) != _digest(repo, issue, comment, [*labels, extra])


@given(repos, issues, issues, comment_text)
def test_changing_the_target_alters_the_digest(repo, issue, other_issue, comment) -> None:
    assume(issue != other_issue)
    assert _digest(repo, issue, comment, []) != _digest(repo, other_issue, comment, [])
    assert _digest("acme/widgets", issue, comment, []) != _digest(
        "acme/gadgets", issue, comment, []
    )


@settings(max_examples=50)
@given(repos, issues, comment_text, st.lists(label_text, max_size=5))
def test_round_trip_through_stored_json_keeps_the_digest(repo, issue, comment, labels) -> None:
    action = build_action(repo, issue, comment, labels)
    again = GitHubIssueAction.model_validate(action.canonical())
    assert action_digest(again) == action_digest(action)


def test_canonical_json_is_fixed_text() -> None:
    action = build_action("Acme/Widgets", 7, "Hi\r\nthere", ["b", "a", "a"])
    assert canonical_json(action) == (
        '{"comment":"Hi\\nthere","kind":"github.issue","labels":["a","b"],'
        '"target":{"issue":7,"repository":"acme/widgets"}}'
    )


@pytest.mark.parametrize(
    ("repository", "issue", "comment", "labels", "message"),
    [
        ("acme/widgets", 1, None, [], "needs a comment, labels, or both"),
        ("acme/widgets", 1, "   ", [], "needs a comment, labels, or both"),
        ("not a repo", 1, "x", [], "OWNER/REPO"),
        ("acme/widgets", 0, "x", [], "greater than 0"),
        ("acme/widgets", 1, "x", [""], "may not be empty"),
        ("acme/widgets", 1, "hi <!-- resolveflow:action=abc -->", [], "marker"),
        ("acme/widgets", 1, "x" * 70_000, [], "longer than"),
    ],
)
def test_invalid_actions_give_clear_errors(repository, issue, comment, labels, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        build_action(repository, issue, comment, labels)


def test_marker_is_appended_after_the_approved_text() -> None:
    assert body_with_marker("Thanks!", "e1") == "Thanks!\n\n<!-- resolveflow:action=e1 -->"


@pytest.mark.parametrize("value", ["abc", "g" * 64, "a" * 63, ""])
def test_digest_format_is_checked(value: str) -> None:
    with pytest.raises(InvalidInput):
        check_digest_format(value)


def test_digest_format_accepts_prefix_and_uppercase() -> None:
    assert check_digest_format("sha256:" + "A" * 64) == "a" * 64
