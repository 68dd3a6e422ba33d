"""What an ``issues`` delivery says a maintainer did with a GitHub suggestion: a label put on, a
close as a duplicate, a dismissal (our reading of a shape GitHub does not document), or nothing."""

from __future__ import annotations

import json
from typing import Any

from resolveflow.domain.vocabulary import GitHubVerdict, SuggestedPart
from resolveflow.gate.domain.suggestion_decisions import SuggestionSignal
from resolveflow.triage.webhook_events import parse_delivery

ACCEPTED, DISMISSED = GitHubVerdict.ACCEPTED, GitHubVerdict.DISMISSED


def _parse(action: str, **extra: Any) -> Any:
    body = {
        "action": action,
        "issue": {"number": 4, "updated_at": "2026-03-01T10:00:00Z", "state_reason": None},
        "repository": {"full_name": "Acme/Widgets"},
        "sender": {"login": "maintainer"},
        **extra,
    }
    return parse_delivery("d-1", "issues", json.dumps(body).encode())


def test_a_label_put_on_is_an_acceptance_of_that_label_if_we_suggested_it() -> None:
    delivery = _parse("labeled", label={"name": "bug"})
    assert delivery.signal == SuggestionSignal(SuggestedPart.LABEL, "bug", ACCEPTED, "maintainer")
    assert delivery.ignored is None and delivery.subject == "label:bug"


def test_a_close_as_duplicate_is_an_acceptance_and_another_close_is_nothing() -> None:
    issue = {"number": 4, "updated_at": "2026-03-01T10:00:00Z", "state_reason": "duplicate"}
    assert _parse("closed", issue=issue).signal == SuggestionSignal(
        SuggestedPart.DUPLICATE, "", ACCEPTED, "maintainer"
    )
    assert _parse("closed").signal is None  # completed, not planned: no suggestion of ours


def test_a_dismissal_names_the_suggestion_and_is_keyed_by_it() -> None:
    suggestion = {"id": 77, "action": "add_label", "target_value": "question", "state": "dismissed"}
    delivery = _parse("suggestion_dismissed", suggestion=suggestion)
    assert delivery.ignored is None and delivery.subject == "suggestion:77"
    assert delivery.signal == SuggestionSignal(
        SuggestedPart.LABEL, "question", DISMISSED, "maintainer"
    )
    close = {"id": 78, "action": "close_issue", "target_value": "duplicate"}
    assert _parse("suggestion_dismissed", suggestion=close).signal == SuggestionSignal(
        SuggestedPart.DUPLICATE, "", DISMISSED, "maintainer"
    )


def test_unusable_shapes_say_nothing() -> None:
    no_id = _parse("suggestion_dismissed", suggestion={"action": "add_label"})
    assert no_id.signal is None and no_id.ignored == "no usable suggestion.id"
    other = _parse("suggestion_dismissed", suggestion={"id": 9, "action": "set_type"})
    assert other.signal is None and other.ignored is None
    bad_login = _parse("labeled", label={"name": "bug"}, sender={"login": "a b"})
    assert bad_login.signal is None
    assert _parse("unlabeled", label={"name": "bug"}).signal is None
    assert (
        _parse("suggestion_accepted").ignored == "issues action suggestion_accepted is not handled"
    )
