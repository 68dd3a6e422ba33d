"""The pure parts of ``github.issue_close_duplicate``: its canonical form and limits, what counts
as an objection to its notice, and which originals are refused (chains and circles)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from resolveflow.errors import InvalidInput, PolicyViolation
from resolveflow.gate.domain.actions import (
    action_digest,
    build_close_duplicate,
    default_notice,
    parse_action,
    revise,
)
from resolveflow.gate.domain.actions.revise import ActionChanges
from resolveflow.gate.domain.duplicates import (
    OriginalState,
    Said,
    check_original,
    find_objection,
    text_digest,
)

REPO = "acme/widgets"
NOTICE_AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
AFTER = NOTICE_AT + timedelta(hours=1)
BEFORE = NOTICE_AT - timedelta(hours=1)
BOT = "resolveflow-bot"


# --- canonical form and limits -------------------------------------------------------------


def test_canonical_form_holds_issue_original_comment_and_grace() -> None:
    action = build_close_duplicate("Acme/Widgets", 5, 3, 72, "Duplicate of #3.\r\nSee there.")
    assert action.canonical() == {
        "comment": "Duplicate of #3.\nSee there.",
        "grace_hours": 72,
        "kind": "github.issue_close_duplicate",
        "original": 3,
        "target": {"issue": 5, "repository": "acme/widgets"},
    }
    same = build_close_duplicate("acme/widgets", 5, 3, 72, "Duplicate of #3.\nSee there.")
    assert action_digest(action) == action_digest(same)
    for other in (
        build_close_duplicate(REPO, 5, 3, 48, "Duplicate of #3.\nSee there."),
        build_close_duplicate(REPO, 6, 3, 72, "Duplicate of #3.\nSee there."),
        build_close_duplicate(REPO, 5, 3, 72, "Duplicate of #3. See there."),
    ):
        assert action_digest(other) != action_digest(action)


def test_the_default_notice_names_the_original_and_the_wait() -> None:
    action = build_close_duplicate(REPO, 5, 3, 72)
    assert action.comment == default_notice(3, 72)
    assert "duplicate of #3 in 3 days unless someone objects" in action.comment


@pytest.mark.parametrize(
    ("issue", "original", "hours", "comment", "error"),
    [
        (5, 5, 72, "Duplicate of #5.", "duplicate of itself"),
        (5, 3, 0, "Duplicate of #3.", "grace_hours"),
        (5, 3, 721, "Duplicate of #3.", "grace_hours"),
        (5, 3, 72, "Duplicate of #30.", "must mention the original as #3"),
        (5, 3, 72, "Duplicate of #3 <!-- resolveflow:action=x -->", "marker"),
        (5, 3, 72, "   ", "may not be empty"),
    ],
)
def test_limits_are_refused_with_one_line(
    issue: int, original: int, hours: int, comment: str, error: str
) -> None:
    with pytest.raises(InvalidInput, match=error):
        build_close_duplicate(REPO, issue, original, hours, comment)


def test_only_the_notice_can_be_edited() -> None:
    action = build_close_duplicate(REPO, 5, 3, 72)
    edited = revise(action, ActionChanges(comment="Same as #3, closing soon."))
    assert edited.canonical()["comment"] == "Same as #3, closing soon."
    with pytest.raises(InvalidInput, match="propose again"):
        revise(action, ActionChanges(labels=("bug",)))
    assert parse_action(action.canonical()) == action


# --- objections ------------------------------------------------------------------------------


def objection(**overrides: object) -> object:
    values: dict[str, object] = {
        "bot": BOT,
        "notice_id": 10,
        "notice_at": NOTICE_AT,
        "comments": [Said(BOT, "comment", NOTICE_AT, 10)],
        "issue_reactions": [],
        "notice_reactions": [],
        "events": [],
        "watched_digest": text_digest("T", "B"),
        "current_digest": text_digest("T", "B"),
        **overrides,
    }
    return find_objection(**values)  # type: ignore[arg-type]


def test_nothing_since_the_notice_is_no_objection() -> None:
    assert objection() is None
    assert (
        objection(
            comments=[Said("carol", "comment", BEFORE, 9), Said(BOT, "comment", AFTER, 11)],
            issue_reactions=[Said("carol", "-1", BEFORE, 1), Said("dave", "+1", AFTER, 2)],
            notice_reactions=[Said(BOT, "-1", AFTER, 3), Said("erin", "heart", AFTER, 4)],
            events=[Said("erin", "labeled", AFTER), Said(BOT, "renamed", AFTER)],
            current_digest=text_digest("T", "B\r\n"),
        )
        is None
    )


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"comments": [Said("Carol", "comment", AFTER, 11)]}, "Carol commented"),
        (
            {"notice_reactions": [Said("dave", "-1", AFTER)]},
            "dave reacted with a thumbs-down to the notice",
        ),
        (
            {"issue_reactions": [Said("dave", "-1", NOTICE_AT)]},
            "dave reacted with a thumbs-down to the issue",
        ),
        ({"events": [Said("erin", "reopened", AFTER)]}, "erin reopened the issue"),
        ({"events": [Said("frank", "renamed", AFTER)]}, "frank edited the issue's title"),
        (
            {"current_digest": text_digest("T", "B, on ARM")},
            "someone edited the issue's title or body",
        ),
    ],
)
def test_each_objection_is_named(overrides: dict[str, object], words: str) -> None:
    found = objection(**overrides)
    assert found is not None and found.words.startswith(words)  # type: ignore[attr-defined]


# --- chains and circles ----------------------------------------------------------------------


def original(**overrides: object) -> OriginalState:
    values: dict[str, object] = {
        "number": 3,
        "exists": True,
        "is_pull_request": False,
        "state": "open",
        "state_reason": None,
        "duplicate_of": None,
        **overrides,
    }
    return OriginalState(**values)  # type: ignore[arg-type]


def test_an_open_or_completed_original_is_fine() -> None:
    check_original(5, original())
    check_original(5, original(state="closed", state_reason="completed"))


@pytest.mark.parametrize(
    ("state", "circles", "error"),
    [
        ({"number": 5}, (), "duplicate of itself"),
        ({"exists": False}, (), "does not exist"),
        ({"is_pull_request": True}, (), "pull request"),
        (
            {"state": "closed", "state_reason": "duplicate", "duplicate_of": 2},
            (),
            "#3 is closed as a duplicate of #2: propose #2 instead",
        ),
        ({"state": "closed", "state_reason": "duplicate", "duplicate_of": 5}, (), "a circle"),
        ({"state": "closed", "state_reason": "duplicate"}, (), "propose the issue it duplicates"),
        ({}, (5,), "a circle"),
        ({}, (8,), "propose #8 instead"),
    ],
)
def test_chains_and_circles_are_refused(
    state: dict[str, object], circles: tuple[int, ...], error: str
) -> None:
    with pytest.raises(PolicyViolation, match=error):
        check_original(5, original(**state), circles)
