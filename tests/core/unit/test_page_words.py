"""The pages' words beyond the enums (web/page_words.py, web/filters.py): actors, the sign-in
link's events, our own sentences' machine words, and audit details with records as tables."""

from __future__ import annotations

import pytest

from resolveflow.accounts.sign_in_links import LinkEvent
from resolveflow.web import filters
from resolveflow.web.page_words import LINK_EVENT, actor_words, gate_words, prose


@pytest.mark.parametrize(
    ("actor", "shown"),
    [
        ("principal:alex", "alex"),
        ("github:rita", "rita"),
        ("principal:github-webhook", "a GitHub webhook"),
        ("executor:vm:10831:72ac928c", "the executor"),
        ("reconciler:vm:1:ab", "the reconciler"),
        ("workflow:triage", "the triage workflow"),
        ("webhook:github", "a GitHub webhook"),
        ("operator:root", "an operator (root)"),
        ("operator", "an operator"),
        ("configuration:RESOLVEFLOW_WEB_USERS", "the configuration (RESOLVEFLOW_WEB_USERS)"),
        ("web", "the web app"),
        ("", "–"),
    ],
)
def test_actors_read_as_words(actor: str, shown: str) -> None:
    assert actor_words(actor) == shown


def test_every_link_event_has_words_and_the_audit_filter_uses_them() -> None:
    for event in LinkEvent:
        assert (
            "_" not in LINK_EVENT[event] and filters.event_words(event.value) == LINK_EVENT[event]
        )
    assert filters.event_words("session.started") == "signed in"


def test_our_sentences_lose_their_machine_words_and_keep_the_rest() -> None:
    assert prose("check run conclusion failure or timed_out: CI (failure)") == (
        "check run conclusion failure or timed out: CI (failure)"
    )
    assert prose("no labels; action kind github.issue") == "no labels; action kind comment / labels"
    assert prose("kind github.issue_create") == "kind new issue"  # the longer word wins
    assert prose("awaiting_approval, has_failing_ci") == "waiting for a decision, CI is failing"
    assert prose("see my_var and x.github.issue") == "see my_var and x.github.issue"  # not ours
    assert gate_words("duplicate_sanity") == "duplicate check"


def test_a_list_of_records_is_a_table_with_plain_headings() -> None:
    details = {
        "gates": [
            {"name": "groundedness", "passed": True, "reason": "every citation retrieved"},
            {"name": "duplicate_sanity", "passed": False, "reason": "x is the issue itself"},
        ],
        "snippets": [{"id": "S1", "external_id": "2", "relevance": 0.753}],
        "outcome": "escalate",
        "investigation_id": "abc",
    }
    shown = {item.label: item for item in filters.details_shown(details)}
    gates = shown["gates"].table
    assert gates is not None and gates.headings == ["name", "passed", "reason"]
    assert gates.rows == [
        ["grounded in the sources", "yes", "every citation retrieved"],
        ["duplicate check", "no", "x is the issue itself"],
    ]
    snippets = shown["snippets"].table
    assert snippets is not None and snippets.headings == ["id", "document", "relevance"]
    assert snippets.rows == [["S1", "2", "0.753"]]
    assert shown["outcome"].text == "escalated to a person" and shown["investigation"].text == "abc"
    # Plain values stay plain pairs, as before.
    assert filters.detail_items({"state": "not_sent"}) == [
        ("state", "not sent (a person confirmed it)")
    ]
