"""The object form of the issue update against the fake GitHub: labels with a rationale and a
confidence, a closing state object, a forge that refuses the object form (plain once, then plain
at once for that host), and suggestions kept pending."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures_github import ISSUE_NUMBER, REPO, SERVICE_TOKEN
from resolveflow.adapters.github import intent_form
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import IntentNote, LabelWrite
from resolveflow.errors import InvalidInput, ProviderRejected
from resolveflow.sandbox.forge.server import FakeGitHubServer

NOTE = IntentNote("The report names a crash on start, as issues labelled bug here do.", "HIGH")


@pytest.fixture(autouse=True)
def _fresh_host_memory() -> Iterator[None]:
    intent_form.forget_hosts()
    yield
    intent_form.forget_hosts()


def _patches(fake_github: FakeGitHubServer) -> list[bool]:
    return [w.applied for w in fake_github.write_log if w.method == "PATCH"]


def test_labels_go_in_the_object_form_with_rationale_and_confidence(
    fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    fake_github.add_issue_event(REPO.full_name, ISSUE_NUMBER, "labeled", label="question")
    after = github_client.set_issue_labels(
        REPO, ISSUE_NUMBER, [LabelWrite("question"), LabelWrite("bug", NOTE)]
    )
    assert sorted(after) == ["bug", "question"]
    assert fake_github.label_intent(REPO.full_name, ISSUE_NUMBER, "bug") == (NOTE.rationale, "HIGH")
    assert fake_github.label_intent(REPO.full_name, ISSUE_NUMBER, "question") is None
    assert _patches(fake_github) == [True]


def test_a_rationale_over_280_characters_is_refused_before_sending(
    fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    with pytest.raises(InvalidInput, match="280"):
        github_client.set_issue_labels(
            REPO, ISSUE_NUMBER, [LabelWrite("bug", IntentNote("x" * 281, "LOW"))]
        )
    assert fake_github.write_log == []


def test_a_forge_refusing_the_object_form_gets_the_plain_form_once_then_directly(
    fake_github: FakeGitHubServer,
) -> None:
    fake_github.behave(refuse_object_form=True)
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as client:
        assert client.set_issue_labels(REPO, ISSUE_NUMBER, [LabelWrite("bug", NOTE)]) == ["bug"]
        assert _patches(fake_github) == [False, True]  # refused (422), then plain
    # Another client in the same process: the host is remembered, no refused request again.
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as client:
        client.set_issue_labels(REPO, ISSUE_NUMBER, [LabelWrite("bug"), LabelWrite("docs", NOTE)])
        client.close_issue_as_duplicate(REPO, ISSUE_NUMBER, None, note=NOTE)
    assert _patches(fake_github) == [False, True, True, True]
    assert fake_github.issues(REPO.full_name)[0]["state"] == "closed"
    assert fake_github.label_intent(REPO.full_name, ISSUE_NUMBER, "docs") is None


def test_a_close_goes_as_a_state_object_with_its_reason_and_the_original(
    fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    fake_github.add_issue(REPO.full_name, 2, "Original", "It crashes.", user="octocat")
    original = github_client.get_issue(REPO, 2).issue_id
    closed = github_client.close_issue_as_duplicate(REPO, ISSUE_NUMBER, original, note=NOTE)
    assert (closed.state, closed.state_reason) == ("closed", "duplicate")
    assert _patches(fake_github) == [True]
    fake_github.behave(refuse_object_form=True)  # the request above was not the plain form
    fake_github.add_issue(REPO.full_name, 3, "Another", "Same crash.", user="octocat")
    intent_form.forget_hosts()
    github_client.close_issue_as_duplicate(REPO, 3, original, note=NOTE)
    assert _patches(fake_github) == [True, False, True]


def test_suggested_labels_and_closes_wait_as_pending_suggestions(
    fake_github: FakeGitHubServer, github_client: GitHubKitClient
) -> None:
    after = github_client.set_issue_labels(
        REPO, ISSUE_NUMBER, [LabelWrite("bug", NOTE, suggest=True)]
    )
    closed = github_client.close_issue_as_duplicate(
        REPO, ISSUE_NUMBER, None, note=NOTE, suggest=True
    )
    assert after == [] and closed.state == "open"
    pending = fake_github.issue_suggestions(REPO.full_name, ISSUE_NUMBER)
    assert [(s.action, s.target_value, s.confidence, s.state) for s in pending] == [
        ("add_label", "bug", "HIGH", "pending"),
        ("close_issue", "duplicate", "HIGH", "pending"),
    ]


def test_a_suggestion_is_never_applied_directly_by_a_forge_that_refuses_the_object_form(
    fake_github: FakeGitHubServer,
) -> None:
    """The plain form would apply what was approved only as a suggestion: refused instead, in
    one line, with nothing written, before and after the host is known to refuse it."""
    fake_github.behave(refuse_object_form=True)
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=1.0) as client:
        for _ in range(2):  # refused by the forge, then known to refuse (nothing sent)
            with pytest.raises(ProviderRejected, match="does not take suggestions"):
                client.set_issue_labels(REPO, ISSUE_NUMBER, [LabelWrite("bug", NOTE, suggest=True)])
        with pytest.raises(ProviderRejected, match="does not take suggestions"):
            client.close_issue_as_duplicate(REPO, ISSUE_NUMBER, None, note=NOTE, suggest=True)
    assert _patches(fake_github) == [False]  # the one refused request, nothing applied
    assert fake_github.issue_labels(REPO.full_name, ISSUE_NUMBER) == []
    assert fake_github.issues(REPO.full_name)[0]["state"] == "open"
