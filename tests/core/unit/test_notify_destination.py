"""A tenant's notification destination, checked and shown without its credential (pure)."""

from __future__ import annotations

import json

import pytest

from resolveflow.domain.network_addresses import AddressPolicy
from resolveflow.errors import InvalidInput
from resolveflow.notify.domain.destination import Destination, destination
from resolveflow.notify.domain.message import NotifyFormat, trial_body

SLACK = NotifyFormat.SLACK
KEY = "k" * 16
PUBLIC_ONLY = AddressPolicy()
LOCAL = AddressPolicy.parse("127.0.0.1,::1")  # the cases below name two local receivers


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.slack.com/services/T0/B0/XYZ", "https://hooks.slack.com/[redacted]"),
        ("http://127.0.0.1:8080/hook?key=s3cret", "http://127.0.0.1:8080/[redacted]"),
        ("http://[::1]:9/x", "http://[::1]:9/[redacted]"),
        ("https://user:pass@chat.example/hook", "https://chat.example/[redacted]"),
        ("  https://chat.example  ", "https://chat.example/[redacted]"),
    ],
)
def test_a_destination_shows_its_scheme_and_host_only(url: str, shown: str) -> None:
    found = destination(url, SLACK, None, LOCAL)
    assert found.shown == shown
    assert url.strip() not in repr(found) and "s3cret" not in repr(found)


@pytest.mark.parametrize(
    ("url", "fmt", "secret", "words"),
    [
        ("", SLACK, None, "is empty"),
        ("hooks.slack.com/services/x", SLACK, None, "start with http:// or https://"),
        ("ftp://files.example/x", SLACK, None, "start with http:// or https://"),
        ("https:///path-only", SLACK, None, "name a host"),
        ("https://chat.example/a b", SLACK, None, "no spaces"),
        ("https://chat.example/" + "x" * 2048, SLACK, None, "at most 2048"),
        ("https://chat.example/x", NotifyFormat.JSON, None, "json format is signed"),
        ("https://chat.example/x", NotifyFormat.JSON, "short", "16 to 1024"),
        ("https://chat.example/x", NotifyFormat.JSON, KEY + "\nmore", "one line"),
    ],
)
def test_a_bad_destination_is_refused_in_one_line_without_the_url(
    url: str, fmt: NotifyFormat, secret: str | None, words: str
) -> None:
    with pytest.raises(InvalidInput, match=words) as refused:
        destination(url, fmt, secret, PUBLIC_ONLY)
    assert "\n" not in refused.value.message and "chat.example/x" not in refused.value.message


def test_a_json_destination_keeps_its_key_and_slack_drops_an_empty_one() -> None:
    signed = destination("https://chat.example/x", NotifyFormat.JSON, KEY + "\n", PUBLIC_ONLY)
    assert signed.secret == KEY and KEY not in repr(signed)
    assert destination("https://chat.example/x", SLACK, "", PUBLIC_ONLY).secret is None
    assert Destination("not a url", SLACK).shown == "[redacted]"


def test_the_test_message_names_the_tenant_escaped_for_slack() -> None:
    slack = json.loads(trial_body("<!channel> & co", SLACK))
    assert slack["text"].startswith("ResolveFlow: proposals of &lt;!channel&gt; &amp; co")
    assert "nothing waits" in slack["text"]
    assert json.loads(trial_body("acme", NotifyFormat.JSON)) == {
        "type": "resolveflow.test",
        "tenant": "acme",
    }
