"""Action kinds: stored digests never change, each kind's canonical form, parsing and edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resolveflow.bootstrap.kinds import KIND_SPECS as SPECS
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions import (
    ActionChanges,
    ActionKind,
    GitHubIssueAction,
    GitHubIssueCreateAction,
    action_digest,
    build_action,
    build_issue_create,
    canonical_json,
    parse_action,
    revise,
)

GOLDEN = json.loads(
    (Path(__file__).parents[2] / "data" / "github_issue_digests_v1.json").read_text("utf-8")
)


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda case: case["digest"][:12])
def test_github_issue_digests_are_the_ones_stored_before_kinds_existed(case: dict) -> None:
    given = case["input"]
    built = build_action(given["repository"], given["issue"], given["comment"], given["labels"])
    assert canonical_json(built) == case["canonical_json"]
    assert action_digest(built) == case["digest"]
    # What the database holds, with and without the kind key, verifies to the same digest.
    assert action_digest(parse_action(case["stored_action"])) == case["digest"]
    stored = {key: value for key, value in case["stored_action"].items() if key != "kind"}
    assert action_digest(parse_action(stored)) == case["digest"]


def test_issue_create_canonical_form_is_normalised() -> None:
    one = build_issue_create("Acme/Widgets", " Crash ", "a\r\nb", ["b", "a", "a"], ["@Bob", "al"])
    two = build_issue_create("acme/widgets", "Crash", "a\nb", ["a", "b"], ["al", "bob"])
    assert action_digest(one) == action_digest(two)
    assert canonical_json(one) == (
        '{"assignees":["al","bob"],"body":"a\\nb","kind":"github.issue_create",'
        '"labels":["a","b"],"target":{"repository":"acme/widgets"},"title":"Crash"}'
    )
    assert action_digest(build_issue_create("acme/widgets", "Crash", "a\nb!", ["a", "b"])) != (
        action_digest(two)
    )


def test_kinds_never_share_a_digest_for_the_same_words() -> None:
    comment = build_action("acme/widgets", 1, "same words", [])
    created = build_issue_create("acme/widgets", "t", "same words")
    assert action_digest(comment) != action_digest(created)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "github.issue_create", "target": {"repository": "a/b"}, "body": "x"}, "title"),
        (
            {
                "kind": "github.issue_create",
                "target": {"repository": "a/b"},
                "title": "t",
                "body": "x <!-- resolveflow:action=1 -->",
            },
            "body may not contain a ResolveFlow marker",
        ),
        (
            {
                "kind": "github.issue_create",
                "target": {"repository": "a/b"},
                "title": "a\nb",
                "body": "x",
            },
            "one line",
        ),
        (
            {
                "kind": "github.issue_create",
                "target": {"repository": "a/b"},
                "title": "t",
                "body": "x",
                "assignees": ["not a login"],
            },
            "not a GitHub login",
        ),
        (
            {
                "kind": "github.issue_create",
                "target": {"repository": "a/b", "issue": 1},
                "title": "t",
                "body": "x",
            },
            "target.issue",
        ),
        ({"kind": "gitlab.issue", "target": {}}, "does not match any of the expected tags"),
    ],
)
def test_bad_actions_get_one_readable_error(data: dict, message: str) -> None:
    with pytest.raises(InvalidInput, match="invalid action") as caught:
        parse_action(data)
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_revise_keeps_what_is_not_changed_and_refuses_fields_of_another_kind() -> None:
    comment = build_action("a/b", 1, "hello", ["bug"])
    relabelled = revise(comment, ActionChanges(labels=("question",)))
    assert isinstance(relabelled, GitHubIssueAction)
    assert (relabelled.comment, relabelled.labels) == ("hello", ("question",))
    assert revise(comment, ActionChanges(comment="")).comment is None  # "" drops the comment
    with pytest.raises(InvalidInput, match="no title"):
        revise(comment, ActionChanges(title="t"))

    created = build_issue_create("a/b", "t", "body", ["bug"], ["al"])
    retitled = revise(created, ActionChanges(title="new title"))
    assert isinstance(retitled, GitHubIssueCreateAction)
    assert (retitled.title, retitled.body, retitled.assignees) == ("new title", "body", ("al",))
    with pytest.raises(InvalidInput, match="a body, not a comment"):
        revise(created, ActionChanges(comment="c"))


def test_every_kind_is_registered_with_its_declarations() -> None:
    assert set(SPECS) == set(ActionKind)
    for kind, spec in SPECS.items():
        assert spec.kind is kind
        assert spec.writes_with and spec.steps and spec.marker and spec.reconciliation
        assert spec.partial


def test_email_send_is_registered_with_its_step_and_write() -> None:
    spec = SPECS[ActionKind.EMAIL_SEND]
    assert spec.writes_with == ("send_message",)
    assert [step.value for step in spec.steps] == ["send"]
    assert "Message-ID" in spec.marker and "Sent folder" in spec.reconciliation
