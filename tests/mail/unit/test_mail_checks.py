"""The checks on every draft: invented commitments, missing information, recipients, sender and
thread. The requests and replies are synthetic, written for these tests."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from resolveflow.mail.domain.checks import DraftCheck, check_draft
from resolveflow.mail.domain.draft import Draft, Facts, parse_facts
from resolveflow.mail.domain.mailbox import MailboxPolicy
from resolveflow.mail.domain.message import MailMessage
from resolveflow.mail.domain.recipients import (
    NEVER_RECEIVED,
    ReceivedMessage,
    as_received,
    new_recipients,
    received_thread,
)

MAILBOX = "support@acme.example"
POLICY = MailboxPolicy(
    smtp_host="smtp.acme.example",
    signature="Best regards,\nAcme Support\nhttps://acme.example/help\n+44 20 7946 0958",
    allowed_domains=("acme.example",),
)
REQUEST = MailMessage(
    message_id="<req-7@customer.example>",
    from_address="jane.doe@customer.example",
    from_name="Jane Doe",
    to=(MAILBOX,),
    cc=("partner@household.example",),
    subject="Broken blender, order 88812",
    date=None,
    text="Hello,\nmy blender (order 88812) arrived broken. I paid 25.00 EUR on 2026-03-02.\nJane",
    in_reply_to="<req-6@customer.example>",
    references=("<req-5@customer.example>", "<req-6@customer.example>"),
)


def draft(body: str, **changes: object) -> Draft:
    base = Draft(
        subject="Re: Broken blender, order 88812",
        to=("jane.doe@customer.example",),
        cc=(),
        bcc=(),
        body=f"Hello Jane,\n\n{body}\n\nBest regards,\nAcme Support",
        in_reply_to=REQUEST.message_id,
        references=REQUEST.thread_references(),
        used_examples=(),
        missing_information=(),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


RECEIVED = as_received(REQUEST)  # the request as the mailbox received it


def findings(d: Draft, facts: Facts = Facts()) -> list[tuple[DraftCheck, str]]:
    return [
        (f.check, f.message)
        for f in check_draft(d, REQUEST, MAILBOX, POLICY, facts, thread=RECEIVED)
    ]


def test_a_plain_reply_passes() -> None:
    assert findings(draft("We are sorry about the blender. We will be in touch shortly.")) == []


def test_invented_price_date_and_ticket_number_are_caught() -> None:
    body = (
        "We will refund €30 by 21 March 2026. Your ticket 5512 is open; "
        "we can also offer 10% off your next order."
    )
    found = findings(draft(body))
    assert [check for check, _ in found] == [DraftCheck.INVENTED_COMMITMENT] * 4
    text = "\n".join(message for _, message in found)
    for value in ("€30", "21 March 2026", "5512", "10%"):
        assert value in text
    assert all("\n" not in message for _, message in found)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        # the amount and date the customer wrote, in other spellings
        ("We refunded €25 (paid on 2 March 2026) for order #88812.", ""),
        ("We refunded EUR 25.00, paid March 2nd, 2026.", ""),
        # values the staff supplied as facts
        (
            "We will refund €30 by 21 March 2026; ticket 5512.",
            "refund: 30 EUR\ndate: 2026-03-21\nticket: 5512",
        ),
        (
            "Take 10 percent off with code SAVE10 at https://acme.example/offers/spring.",
            "discount: 10%\nlink: https://acme.example/offers/spring",
        ),
        # what the mailbox's signature says, and the mailbox itself
        (
            "See https://acme.example/help or call +44 20 7946 0958, or write to support@acme.example.",
            "",
        ),
    ],
)
def test_the_same_values_pass_when_the_request_or_the_facts_have_them(
    body: str, facts: str
) -> None:
    assert findings(draft(body), parse_facts(facts)) == []


def test_another_currency_or_year_is_not_the_same_value() -> None:
    found = findings(draft("We refunded $25, paid on 2 March 2025."))
    assert len(found) == 2
    assert "$25" in found[0][1] and "2 March 2025" in found[1][1]


def test_an_invented_value_in_the_subject_is_caught() -> None:
    found = findings(draft("We are on it.", subject="Re: your refund of €99"))
    assert found and "subject" in found[0][1] and "€99" in found[0][1]


def test_an_address_or_link_in_the_body_is_flagged() -> None:
    found = findings(draft("Please also write to boss@evil.example or see https://evil.example/x."))
    assert [c for c, _ in found] == [DraftCheck.INVENTED_COMMITMENT] * 2
    assert "boss@evil.example" in found[0][1] and "https://evil.example/x" in found[1][1]


def test_a_placeholder_left_fails_and_is_named_until_filled() -> None:
    open_draft = draft(
        "The refund of [[refund amount]] is on its way.", missing_information=("refund amount",)
    )
    found = findings(open_draft)
    assert found == [
        (
            DraftCheck.MISSING_INFORMATION,
            "the placeholder [[refund amount]] is still in the draft: fill it in",
        )
    ]
    filled = replace(
        open_draft, body=open_draft.body.replace("[[refund amount]]", "€30"), missing_information=()
    )
    assert findings(filled, parse_facts("refund amount: €30")) == []


def test_missing_information_listed_without_its_placeholder_fails() -> None:
    # a writer that lists "refund amount" as missing and still writes a number papered over it
    d = draft("The refund of €30 is on its way.", missing_information=("refund amount",))
    found = findings(d, parse_facts("refund amount: €30"))
    assert [c for c, _ in found] == [DraftCheck.MISSING_INFORMATION]
    assert "refund amount" in found[0][1]


@pytest.mark.parametrize("field", ["to", "cc", "bcc"])
def test_a_recipient_outside_the_thread_and_the_allowed_domains_fails(field: str) -> None:
    current = getattr(draft("ok"), field)
    d = draft("We are on it.", **{field: (*current, "x@evil.example")})
    found = findings(d)
    assert [c for c, _ in found] == [DraftCheck.RECIPIENTS]
    assert "x@evil.example" in found[0][1] and field.capitalize() in found[0][1]


def test_thread_participants_and_allowed_domains_pass() -> None:
    d = draft("We are on it.", cc=("partner@household.example",), bcc=("billing@acme.example",))
    assert findings(d) == []


def test_the_mailbox_is_not_a_participant_without_an_allowed_domain() -> None:
    policy = POLICY.model_copy(update={"allowed_domains": ()})
    d = draft("We are on it.", cc=(MAILBOX,))
    found = check_draft(d, REQUEST, MAILBOX, policy, Facts(), thread=RECEIVED)
    assert [f.check for f in found] == [DraftCheck.RECIPIENTS]


def test_a_request_the_mailbox_never_received_makes_every_address_new() -> None:
    """Its From, To and Cc are only the word of whoever gave it: the requester and the Cc are
    refused unless an allowed domain lets them through."""
    d = draft("We are on it.", cc=("partner@household.example",))
    found = [f.message for f in check_draft(d, REQUEST, MAILBOX, POLICY, Facts())]
    assert len(found) == 2
    assert found[0].startswith("To jane.doe@customer.example is new: the mailbox never received")
    assert "<req-7@customer.example> from jane.doe@customer.example" in found[0]
    assert "mail import" in found[0] and found[1].startswith("Cc partner@household.example")
    allowed = POLICY.model_copy(update={"allowed_domains": ("customer.example",)})
    only_cc = check_draft(d, REQUEST, MAILBOX, allowed, Facts())
    assert [f.message.split(" is new")[0] for f in only_cc] == ["Cc partner@household.example"]


def _stored(from_address: str, cc: tuple[str, ...] = ()) -> ReceivedMessage:
    return ReceivedMessage(from_address, (MAILBOX,), cc)


def test_the_thread_is_the_message_as_received_not_as_given() -> None:
    # the stored copy has no Cc: the one the request claims is new, the requester is not
    thread = received_thread(REQUEST, _stored("Jane.Doe@customer.example"))
    assert thread.received and "jane.doe@customer.example" in thread.participants
    d = draft("We are on it.", cc=("partner@household.example",))
    found = check_draft(d, REQUEST, MAILBOX, POLICY, Facts(), thread=thread)
    assert [f.message.split(" is ")[0] for f in found] == ["Cc partner@household.example"]
    assert new_recipients(["JANE.doe@customer.example", MAILBOX, "x@y.example"], MAILBOX, thread)
    assert new_recipients(["JANE.doe@customer.example"], MAILBOX, thread) == []
    assert new_recipients([MAILBOX], MAILBOX, thread) == [MAILBOX]  # never its own thread


def test_a_real_message_id_under_a_forged_from_is_not_received() -> None:
    forged = replace(REQUEST, from_address="eve@evil.example")
    assert received_thread(forged, _stored(REQUEST.from_address)) == NEVER_RECEIVED
    assert received_thread(REQUEST, None) == NEVER_RECEIVED
    d = draft("We are on it.", to=("eve@evil.example",))
    found = check_draft(d, forged, MAILBOX, POLICY, Facts(), thread=NEVER_RECEIVED)
    assert [f.check for f in found] == [DraftCheck.RECIPIENTS]
    assert found[0].message.startswith("To eve@evil.example is new")


def test_no_to_and_a_bad_address_fail() -> None:
    found = findings(draft("We are on it.", to=(), cc=("Boss <boss@acme.example>",)))
    assert [c for c, _ in found] == [DraftCheck.RECIPIENTS, DraftCheck.RECIPIENTS]
    assert "no To" in found[0][1]


def test_the_from_must_be_a_mailbox_and_the_thread_the_request() -> None:
    found = check_draft(draft("ok"), REQUEST, "not a mailbox", POLICY, Facts(), thread=RECEIVED)
    assert [f.check for f in found] == [DraftCheck.SENDER]
    assert [c for c, _ in findings(draft("ok", in_reply_to="<other@x.example>"))] == [
        DraftCheck.THREAD
    ]
    assert [c for c, _ in findings(draft("ok", references=()))] == [DraftCheck.THREAD]


def test_an_empty_body_or_a_two_line_subject_fails() -> None:
    found = findings(replace(draft("ok"), body="  ", subject="Re: a\nBcc: x@evil.example"))
    assert [c for c, _ in found][:2] == [DraftCheck.FORM, DraftCheck.FORM]


@pytest.mark.parametrize(
    ("supplied", "written", "same"),
    [
        ("€25", "25.00 EUR", True),
        ("25 euros", "EUR 25", True),
        ("1,299.99 EUR", "€1299.99", True),
        ("25,50 EUR", "€25.50", True),
        ("I paid 25.00", "$25", True),
        ("€25", "$25", False),
        ("2026-03-14", "March 14th, 2026", True),
        ("14.03.26", "14/03/2026", True),
        ("by 14 March", "2026-03-14", True),
        ("14 March 2025", "14 March 2026", False),
        ("15%", "15 per cent", True),
        ("order number: 77123", "order #77123", True),
        ("INV-2024-0042", "INV20240042", True),
        ("INV-2024-0042", "INV20240043", False),
        ("https://www.acme.example/x/", "see http://acme.example/x.", True),
        ("https://acme.example/x", "https://acme.example/y", False),
        ("Jane.Doe@Customer.example", "jane.doe@customer.example", True),
    ],
)
def test_what_counts_as_the_same_value(supplied: str, written: str, same: bool) -> None:
    found = findings(draft(f"We note: {written}"), parse_facts(f"value: {supplied}"))
    assert (found == []) is same, found


@pytest.mark.parametrize(
    "text",
    ["a." * 30_000 + "@", "111 " * 15_000, "1-" * 30_000, "a@b." * 15_000, "order " * 10_000],
)
def test_a_large_hostile_request_is_checked_in_bounded_time(text: str) -> None:
    # the request is untrusted: patterns that rescan the text from every position would take
    # minutes here (a quadratic e-mail pattern took 250 s on 400,000 characters)
    request = replace(REQUEST, text=text)
    started = time.perf_counter()
    check_draft(draft("We are on it."), request, MAILBOX, POLICY, Facts(), thread=RECEIVED)
    assert time.perf_counter() - started < 2.0


# --- credential requests ------------------------------------------------------------------------

ASKING = [
    "Please send us your password so that we can look into it.",
    "Reply with the code we texted you and we will unlock the account.",
    "What is your PIN?",
    "Could you tell me your one-time code?",
    "We need your 2FA code to proceed.",
    "I will need your MFA code before I can continue.",
    "We'll need your passcode to verify the account.",
    "Please provide the answer to your security question.",
    "Send me your login and I will check it.",
    "To verify your identity, reply with your card number and CVV.",
    "Please e-mail us your API key.",
    "Kindly share your access token with us.",
    "Don't forget to send us your password.",
    "Please send us:\n- your username\n- your password",
    "Please confirm your PIN in your reply.",
    "Your passcode, please.",
    "Give us the 6-digit code from the SMS.",
    "Can we have your login details?",
    "Please include your username and\npassword in your reply.",
    "Forward us the verification code you received.",
    "Let us know your mother's maiden name.",
]
INNOCENT = [
    # self-service: the customer types it where it belongs and tells us nothing (a judgement:
    # docs/email.md "The checks")
    "Reset your password via the link on the site.",
    "Enter the code we texted you on the sign-in page.",
    "Please provide your credentials on the login page.",
    "Enter and confirm your new password on the account page.",
    'Open the sign-in page, choose "Forgot password" and use the new link within the hour.',
    # warnings against it
    "We will never ask for your password.",
    "Do not share your PIN with anyone.",
    "Nobody at Acme will ask you to send your password.",
    # the credential names something about it
    "Send us a screenshot of the password field.",
    "The password reset link expired; ask for a new one.",
    "What is the password policy? At least 12 characters.",
    # another clause, or not a credential at all
    "Give us a call if you forgot your password.",
    "Tell us when you have changed your password.",
    "Please send us your logs after you reset your password.",
    "You need your password to sign in.",
    "Send us the error code and the discount code you used.",
    "Please send a copy of your card statement.",
]


@pytest.mark.parametrize("sentence", ASKING)
def test_a_draft_that_asks_for_a_credential_fails(sentence: str) -> None:
    found = findings(draft(f"Thank you for your message.\n\n{sentence}\n\nWe will reply soon."))
    checks = [check for check, _ in found]
    assert DraftCheck.CREDENTIAL_REQUEST in checks, found
    message = next(m for c, m in found if c is DraftCheck.CREDENTIAL_REQUEST)
    assert "\n" not in message and "credential" in message


def test_a_credential_request_in_the_subject_fails_too() -> None:
    found = findings(draft("We are on it.", subject="Re: Broken blender - send us your PIN"))
    assert [c for c, _ in found] == [DraftCheck.CREDENTIAL_REQUEST]


@pytest.mark.parametrize("sentence", INNOCENT)
def test_a_draft_that_mentions_a_credential_without_asking_passes(sentence: str) -> None:
    assert findings(draft(f"Thank you for your message. {sentence}")) == []


def test_the_customers_own_words_about_a_password_are_not_checked() -> None:
    request = replace(REQUEST, text="I forgot my password. Can you send me my password?")
    found = check_draft(
        draft("Use the reset link on the sign-in page."),
        request,
        MAILBOX,
        POLICY,
        Facts(),
        thread=as_received(request),
    )
    assert found == ()


@pytest.mark.parametrize(
    "body",
    ["send us your " * 80_000, "never " * 150_000, "your password, " * 60_000, "a. " * 300_000],
)
def test_a_large_body_is_checked_for_credential_requests_in_bounded_time(body: str) -> None:
    started = time.perf_counter()
    check_draft(draft(body), REQUEST, MAILBOX, POLICY, Facts(), thread=RECEIVED)
    assert time.perf_counter() - started < 10.0  # about 1 s; generous for a loaded machine
