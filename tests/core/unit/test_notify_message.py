"""The notification's message (notify/domain/message.py) and its settings: one line of what is
proposed, never a body or an email's details; Slack's control characters escaped; the retry
schedule; the json format refused without its key."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from resolveflow.config import load_settings
from resolveflow.domain.vocabulary import NotificationKind
from resolveflow.errors import ConfigError
from resolveflow.notify.domain.message import (
    Notice,
    NotifyFormat,
    describe,
    encoded,
    retry_after,
    slack_body,
)

EMAIL: dict[str, Any] = {
    "kind": "email.send",
    "mailbox": "support@acme.example",
    "to": ["alice@customer.example"],
    "subject": "Re: Refund for order 4471",
    "text": "Hello Alice, your refund is on its way.",
}


def _notice(what: str, kind: NotificationKind = NotificationKind.WAITING) -> Notice:
    return Notice(
        kind=kind,
        tenant="acme",
        proposal_id=uuid4(),
        action_kind="github.issue_create",
        what=what,
        inbox_url="https://rf.example/proposals/x",
        window_closes_at=datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
    )


def test_each_kind_in_one_line_without_its_body() -> None:
    comment = {"target": {"repository": "acme/w", "issue": 3}, "comment": "secret body"}
    assert describe({**comment, "labels": []}) == "a comment on acme/w#3"
    assert describe({**comment, "comment": None, "labels": ["bug"]}) == "labels bug on acme/w#3"
    created = {
        "kind": "github.issue_create",
        "target": {"repository": "acme/w"},
        "title": "Crash on start",
        "body": "private details",
    }
    assert describe(created) == "a new issue in acme/w: Crash on start"
    close = {
        "kind": "github.issue_close_duplicate",
        "target": {"repository": "acme/w", "issue": 9},
        "original": 4,
        "comment": "Duplicate of #4.",
        "grace_hours": 24,
    }
    assert describe(close) == "close acme/w#9 as a duplicate of #4"


def test_an_email_is_only_said_to_exist() -> None:
    line = describe(EMAIL)
    assert line.startswith("an email reply")
    for private in ("support@", "alice@", "Refund", "refund"):
        assert private not in line


def test_an_unreadable_action_is_named_by_its_kind() -> None:
    assert describe({"kind": "teleport", "x": 1}) == "a proposal of kind teleport"


def test_slack_text_escapes_what_outsiders_wrote() -> None:
    text = slack_body(_notice("a new issue in acme/w: <!channel> & <https://evil.example|click>"))[
        "text"
    ]
    assert "<!channel>" not in text and "<https://evil" not in text
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" in text
    assert text.endswith("<https://rf.example/proposals/x|Open in the inbox>")


def test_a_long_title_is_cut_to_one_line() -> None:
    line = describe(
        {
            "kind": "github.issue_create",
            "target": {"repository": "acme/w"},
            "title": "word " * 48,
            "body": "b",
        }
    )
    assert len(line) <= 200 and line.endswith("…") and "\n" not in line


def test_the_json_body_is_the_typed_payload() -> None:
    notice = _notice("a new issue in acme/w: x", NotificationKind.CLOSING)
    body = json.loads(encoded(notice, NotifyFormat.JSON))
    assert body["type"] == "resolveflow.proposal.closing"
    assert body["inbox_url"] == notice.inbox_url and body["summary"] == notice.what


def test_retries_wait_longer_each_time_up_to_the_cap() -> None:
    assert [retry_after(n, 60, 300) for n in (1, 2, 3, 4, 5)] == [60, 120, 240, 300, 300]


def test_the_json_format_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESOLVEFLOW_NOTIFY_URL", "https://hooks.example/x")
    monkeypatch.setenv("RESOLVEFLOW_NOTIFY_FORMAT", "json")
    with pytest.raises(
        ConfigError, match=r"RESOLVEFLOW_NOTIFY_SECRET: .*required by the json format"
    ):
        load_settings()
    monkeypatch.setenv("RESOLVEFLOW_NOTIFY_URL", "ftp://hooks.example/x")
    monkeypatch.setenv("RESOLVEFLOW_NOTIFY_SECRET", "k")
    with pytest.raises(ConfigError, match="RESOLVEFLOW_NOTIFY_URL"):
        load_settings()
