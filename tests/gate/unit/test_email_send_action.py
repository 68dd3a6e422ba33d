"""``email.send``: what the canonical form refuses, normalises and keeps, what the digest covers,
and the Message-ID marker."""

from __future__ import annotations

from typing import Any

import pytest

from resolveflow.domain.vocabulary import ActionKind
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions import (
    ActionChanges,
    action_digest,
    build_action,
    canonical_json,
    parse_action,
    revise,
)
from resolveflow.gate.domain.actions.email_send import EmailSendAction, message_id, parse_email_send

SHA_A = "a" * 64
SHA_B = "b" * 64


def base(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "mailbox": "support@acme.example",
        "to": ["alice@customer.example"],
        "cc": ["ops@acme.example"],
        "subject": "Re: Refund for order",
        "text": "Hello Alice,\n\nWe have looked at it.\n\nAcme Support",
        "in_reply_to": "<req-1@customer.example>",
        "references": ["<req-0@customer.example>", "<req-1@customer.example>"],
        "attachments": [
            {"name": "policy.pdf", "media_type": "application/pdf", "size": 10, "sha256": SHA_A},
        ],
    }
    data.update(changes)
    return data


def digest(**changes: Any) -> str:
    return parse_email_send(base(**changes)).digest()


REFUSED = {
    "display name in From": {"mailbox": "Support <support@acme.example>"},
    "display name in To": {"to": ["Alice <alice@customer.example>"]},
    "CR/LF header injection in To": {"to": ["alice@customer.example\r\nBcc: x@evil.example"]},
    "LF in Cc": {"cc": ["ops@acme.example\nBcc: x@evil.example"]},
    "two addresses in one": {"to": ["a@customer.example, b@evil.example"]},
    "missing domain": {"to": ["alice@"]},
    "no @ at all": {"to": ["alice"]},
    "domain without a dot": {"to": ["alice@localhost"]},
    "quoted local part": {"to": ['"alice@evil.example"@customer.example']},
    "domain literal": {"to": ["alice@[10.0.0.1]"]},
    "non-ASCII address": {"to": ["zoë@customer.example"]},
    "no To": {"to": [], "cc": ["ops@acme.example"]},
    "same address in To and Bcc": {"bcc": ["Alice@Customer.example"]},
    "same address in Cc and Bcc": {"bcc": ["ops@acme.example"]},
    "subject over two lines": {"subject": "Re: x\nBcc: x@evil.example"},
    "empty subject": {"subject": "  "},
    "subject too long": {"subject": "x" * 256},
    "blank text": {"text": " \n "},
    "empty html part": {"html": " "},
    "Message-ID without brackets": {"in_reply_to": "req-1@customer.example"},
    "Message-ID with a newline": {"references": ["<a@b.example>\r\nBcc: x@evil.example"]},
    "repeated Reference": {"references": ["<a@b.example>", "<a@b.example>"]},
    "attachment name with a path": {
        "attachments": [{"name": "../x", "media_type": "text/plain", "size": 1, "sha256": SHA_A}]
    },
    "attachment sha256 not hex": {
        "attachments": [{"name": "x", "media_type": "text/plain", "size": 1, "sha256": "z" * 64}]
    },
    "attachment media type": {
        "attachments": [{"name": "x", "media_type": "text", "size": 1, "sha256": SHA_A}]
    },
    "attachment negative size": {
        "attachments": [{"name": "x", "media_type": "text/plain", "size": -1, "sha256": SHA_A}]
    },
    "two attachments, one name": {
        "attachments": [
            {"name": "x.txt", "media_type": "text/plain", "size": 1, "sha256": SHA_A},
            {"name": "X.txt", "media_type": "text/plain", "size": 1, "sha256": SHA_B},
        ]
    },
    "an extra field (a Message-ID the approver would set)": {"message_id": "<x@y.example>"},
}


@pytest.mark.parametrize("changes", REFUSED.values(), ids=list(REFUSED))
def test_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput, match=r"invalid email\.send action"):
        parse_email_send(base(**changes))


def test_canonical_form_normalises_addresses_and_order() -> None:
    action = parse_email_send(
        base(
            to=["Bob@Customer.EXAMPLE", "alice@customer.example", "Bob@customer.example"],
            text="Hi\r\nthere",
        )
    )
    # domain lower-cased, local part kept, repeats collapsed, sorted
    assert action.to == ("Bob@customer.example", "alice@customer.example")
    assert action.text == "Hi\nthere"
    assert action.canonical()["kind"] == "email.send"


def test_digest_changes_with_every_field_a_recipient_would_notice() -> None:
    original = digest()
    other_attachment = [
        {"name": "policy.pdf", "media_type": "application/pdf", "size": 10, "sha256": SHA_B}
    ]
    changed = {
        "added Bcc": digest(bcc=["audit@acme.example"]),
        "attachment sha256": digest(attachments=other_attachment),
        "HTML part": digest(html="<p>Hello Alice</p>"),
        "References": digest(references=["<req-1@customer.example>"]),
        "References order": digest(
            references=["<req-1@customer.example>", "<req-0@customer.example>"]
        ),
        "In-Reply-To": digest(in_reply_to="<other@customer.example>"),
        "From": digest(mailbox="billing@acme.example"),
        "To": digest(to=["alice@customer.example", "bob@customer.example"]),
        "Cc moved to Bcc": digest(cc=[], bcc=["ops@acme.example"]),
        "subject": digest(subject="Re: Refund for order 2"),
        "text": digest(text="Hello Alice,\n\nWe have looked at it.\n\nAcme"),
        "local part case": digest(to=["Alice@customer.example"]),
    }
    assert all(value != original for value in changed.values()), changed
    assert len(set(changed.values())) == len(changed)


def test_digest_ignores_what_the_canonical_form_normalises() -> None:
    two = [
        {"name": "b.txt", "media_type": "text/plain", "size": 1, "sha256": SHA_B},
        {"name": "a.txt", "media_type": "Text/Plain", "size": 2, "sha256": SHA_A.upper()},
    ]
    assert digest(to=["b@x.example", "a@x.example"], attachments=two) == digest(
        to=["a@X.Example", "b@x.example", "a@x.example"], attachments=list(reversed(two))
    )
    assert digest(text="Hello\r\nAlice") == digest(text="Hello\nAlice")
    assert digest(subject="Re: Caf\u0065\u0301") == digest(subject="Re: Caf\u00e9")


def test_digest_is_the_shared_serialisation() -> None:
    import hashlib

    action = parse_email_send(base())
    # The same bytes every other kind hashes (actions.canonical_json), so a stored digest of this
    # kind is checked the same way once it is registered.
    assert action.digest() == hashlib.sha256(canonical_json(action).encode()).hexdigest()  # type: ignore[arg-type]


def test_message_id_is_the_marker() -> None:
    action = parse_email_send(base(mailbox="Support@Acme.EXAMPLE"))
    execution = "0b3c7a52-4f7e-4d8a-9a57-1c2d3e4f5a6b"
    expected = f"<resolveflow.{execution}@acme.example>"
    assert action.message_id(execution) == expected
    assert message_id(execution, "support@acme.example") == expected
    with pytest.raises(ValueError, match="execution id"):
        message_id("x>\r\nBcc: e@evil.example", "support@acme.example")


def test_registered_as_a_kind_and_parsed_through_the_union() -> None:
    assert ActionKind("email.send") is ActionKind.EMAIL_SEND
    parsed = parse_action({"kind": "email.send", **base()})
    assert isinstance(parsed, EmailSendAction)
    assert action_digest(parsed) == parse_email_send(base()).digest()
    with pytest.raises(InvalidInput, match=r"invalid action: .*bcc"):
        parse_action({"kind": "email.send", **base(bcc=["Evil <e@evil.example>"])})


def test_revise_makes_a_new_version_of_each_email_field_and_refuses_others() -> None:
    action = parse_email_send(base())
    changed = revise(
        action,
        ActionChanges(
            to=("bob@customer.example",),
            cc=(),
            bcc=("audit@acme.example",),
            subject="Re: Refund",
            text="Hello Bob",
            html="<p>Hello Bob</p>",
        ),
    )
    assert isinstance(changed, EmailSendAction)
    assert (changed.to, changed.cc, changed.bcc) == (
        ("bob@customer.example",),
        (),
        ("audit@acme.example",),
    )
    assert (changed.subject, changed.text, changed.html) == (
        "Re: Refund",
        "Hello Bob",
        "<p>Hello Bob</p>",
    )
    assert changed.in_reply_to == action.in_reply_to and changed.attachments == action.attachments
    assert revise(action, ActionChanges(bcc=("x@acme.example",))).digest() != action.digest()
    assert revise(changed, ActionChanges(html="")).html is None  # "" drops the HTML part
    for other in (
        ActionChanges(comment="c"),
        ActionChanges(labels=("bug",)),
        ActionChanges(title="t"),
    ):
        with pytest.raises(InvalidInput, match="an email"):
            revise(action, other)
    with pytest.raises(InvalidInput, match="no recipients"):
        revise(build_action("a/b", 1, "hello", []), ActionChanges(bcc=("x@evil.example",)))
