"""The fit check: facts of the past case a reused reply still carries (a product, an order
number, a name, a link, a date) that the new request and the staff's facts do not support fail
the draft, named with what the request has instead; what they do support passes. And a past
reply asking for a password fails, reused word for word. The mailboxes, requests and replies are
synthetic, written for these tests."""

from __future__ import annotations

from resolveflow.mail.domain.checks import CheckFinding, DraftCheck, ExampleFit, check_draft
from resolveflow.mail.domain.draft import Draft, Facts, deterministic_draft, parse_facts
from resolveflow.mail.domain.example_fit import FitKind, Vocabulary, misfits, words_to_weigh
from resolveflow.mail.domain.mailbox import MailboxPolicy
from resolveflow.mail.domain.message import MailExample, MailMessage
from resolveflow.mail.domain.recipients import as_received

MAILBOX = "support@pottery.example"
POLICY = MailboxPolicy(
    smtp_host="smtp.pottery.example",
    greeting="Hello {name},",
    signature="Best regards,\nPottery Support",
)
MUG_REQUEST = (
    "Hi, my mug arrived cracked (order 5521). Do I need to send it back?\n"
    "I bought it on the page https://pottery.example/p/blue-mug on 3 March.\nMaria"
)
MUG_REPLY = (
    "Hello Maria,\n\nSorry about the mug! No need to send the mug back: a new mug for order "
    "5521 leaves our workshop today. The old link https://pottery.example/p/blue-mug still "
    "shows it. Since it arrived on 3 March, Maria, you are well within the guarantee.\n\n"
    "Kind regards,\nTom"
)
# Other exchanges of the same mailbox: they make "send", "back", "need", "order" everyday words.
OTHERS = [
    "Where is my order? Reply: your order left today, no need to send anything.",
    "I need to send a jumper back. Reply: send it back to us with the order number.",
    "Can I change my order? Reply: yes, we changed the order for you.",
    "The lid of my teapot is missing. Reply: we send a new lid, no need to send the teapot back.",
    "Please cancel my order. Reply: your order is cancelled, nothing to send back.",
]


def request(text: str, subject: str = "Cracked bowl", name: str = "Kim Park") -> MailMessage:
    return MailMessage(
        message_id="<req-9@customer.example>",
        from_address="kim@customer.example",
        from_name=name,
        to=(MAILBOX,),
        cc=(),
        subject=subject,
        date=None,
        text=text,
    )


BOWL = request("Hello, my bowl arrived cracked (order 7788). What do I do now?\nKim")
MUG = MailExample(
    reply_message_id="<rep-mug@pottery.example>",
    mailbox=MAILBOX,
    subject="Cracked mug",
    request_text=MUG_REQUEST,
    reply_text=MUG_REPLY,
    score=0.8,
)
VOCABULARY = Vocabulary.of_texts([f"{MUG_REQUEST}\n{MUG_REPLY}", *OTHERS])


def fit_findings(draft: Draft, req: MailMessage, facts: Facts = Facts()) -> list[CheckFinding]:
    found = check_draft(
        draft, req, MAILBOX, POLICY, facts, ExampleFit((MUG,), VOCABULARY), as_received(req)
    )
    return [f for f in found if f.check is DraftCheck.EXAMPLE_FIT]


def reused(req: MailMessage, facts: str = "") -> Draft:
    return deterministic_draft(req, MAILBOX, POLICY, parse_facts(facts), [MUG])


def test_the_mug_reply_reused_for_a_bowl_names_both_words() -> None:
    draft = reused(BOWL)
    assert "No need to send the mug back" in draft.body  # reused word for word
    found = fit_findings(draft, BOWL)
    mug = [f.message for f in found if "'mug'" in f.message]
    assert len(mug) == 1 and "the request is about 'bowl'" in mug[0]
    # Nothing else passes it: the draft cannot become a proposal as it is.
    assert check_draft(
        draft, BOWL, MAILBOX, POLICY, Facts(), ExampleFit((MUG,), VOCABULARY), as_received(BOWL)
    )
    # Without the examples nothing says what was reused: the old checks alone (and they pass
    # what the drafter replaced).
    assert DraftCheck.EXAMPLE_FIT not in {
        f.check
        for f in check_draft(draft, BOWL, MAILBOX, POLICY, Facts(), thread=as_received(BOWL))
    }


def test_everyday_words_of_the_mailbox_are_not_facts_of_the_case() -> None:
    named = " ".join(f.message for f in fit_findings(reused(BOWL), BOWL))
    for word in ("'send'", "'back'", "'need'", "'order'"):
        assert word not in named
    # The same words, rare in a mailbox where no other exchange uses them, are named.
    alone = Vocabulary.of_texts([f"{MUG_REQUEST}\n{MUG_REPLY}", "Where is my parcel?"])
    text = "No need to send the mug back."
    keys = {m.key for m in misfits(text, [MUG], BOWL.text, [], alone)}
    assert {"mug", "need"} <= keys


def test_an_order_number_of_the_past_case_is_named_with_the_requests_own() -> None:
    # A model or a reviewer kept the old order number: one finding, not also "invented".
    draft = reused(BOWL)
    kept = Draft(**{**draft.__dict__, "body": draft.body.replace("7788", "5521")})
    found = check_draft(
        kept, BOWL, MAILBOX, POLICY, Facts(), ExampleFit((MUG,), VOCABULARY), as_received(BOWL)
    )
    about = [f for f in found if "5521" in f.message]
    assert [f.check for f in about] == [DraftCheck.EXAMPLE_FIT]
    assert "order '5521'" in about[0].message and "'7788'" in about[0].message
    # The drafter itself already wrote the request's own number in its place.
    assert "order 7788" in draft.body
    assert not [f for f in fit_findings(draft, BOWL) if "7788" in f.message]


def test_a_name_a_link_and_a_date_of_the_past_case_are_named() -> None:
    found = {m.kind: m for m in misfits(reused(BOWL).body, [MUG], BOWL.text, [], VOCABULARY)}
    # The old greeting's name was replaced, but the one inside a sentence is the old case's too
    # (the drafter replaces it: a model's or a reviewer's text can still carry it).
    text = "Since it arrived on 3 March, Maria, see https://pottery.example/p/blue-mug."
    kinds = {(m.kind, m.text) for m in misfits(text, [MUG], BOWL.text, [], VOCABULARY)}
    assert (FitKind.NAME, "Maria") in kinds
    assert (FitKind.SPECIFIC, "3 March") in kinds
    assert (FitKind.SPECIFIC, "https://pottery.example/p/blue-mug") in kinds
    messages = [m.message() for m in misfits(text, [MUG], BOWL.text, [], VOCABULARY)]
    assert any("the name 'Maria'" in m for m in messages)
    assert any(m.startswith("the reply mentions the date '3 March'") for m in messages)
    assert any("the link 'https://pottery.example/p/blue-mug'" in m for m in messages)
    assert FitKind.WORD in found  # the mug itself, in the drafter's own output


def test_a_date_is_named_with_the_requests_date() -> None:
    req = request("My bowl arrived cracked on 12 April, order 7788.")
    [date] = [m for m in misfits("It arrived on 3 March.", [MUG], req.text, [], VOCABULARY)]
    assert (date.text, date.instead) == ("3 March", "12 April")


def test_what_the_request_or_the_facts_support_is_not_flagged() -> None:
    same = request(
        "Hi, my mug arrived cracked too (order 5521), bought at https://pottery.example/p/blue-mug "
        "on 3 March. Maria",
        subject="Cracked mug",
        name="Maria Lopez",
    )
    assert fit_findings(reused(same), same) == []
    # The staff say what it is about: a fact supports the word.
    facts = "item: mug"
    found = fit_findings(reused(BOWL, facts), BOWL, parse_facts(facts))
    assert not [f for f in found if "'mug'" in f.message]
    assert [f for f in fit_findings(reused(BOWL), BOWL) if "'mug'" in f.message]
    # A word of the reply the past request never used is the mailbox's own, not the case's.
    text = "A new one leaves our workshop today; you are well within the guarantee."
    assert misfits(text, [MUG], BOWL.text, [], VOCABULARY) == []


def test_verbs_and_adverbs_of_the_past_case_are_not_named() -> None:
    example = MailExample(
        reply_message_id="<rep-2@pottery.example>",
        mailbox=MAILBOX,
        subject="Glaze question",
        request_text="I carefully washed it and the glaze peeled. I followed the care card.",
        reply_text="You washed it carefully and followed the card: the glaze should not peel.",
        score=0.7,
    )
    rare = Vocabulary.of_texts([example.request_text, "Where is my parcel?"])
    text = "You washed it carefully and followed the card: the glaze should not peel."
    named = {m.key for m in misfits(text, [example], BOWL.text, [], rare)}
    assert named == {"glaze", "card"}  # the things; not "washed", "carefully", "followed"


def test_the_words_to_count_are_the_candidates_only() -> None:
    asked = words_to_weigh(reused(BOWL).body, [MUG], BOWL.text)
    assert "mug" in asked and "bowl" not in asked and "sorry" not in asked
    assert words_to_weigh("anything", [], BOWL.text) == ()


def test_many_misfits_are_named_up_to_a_bound_then_listed() -> None:
    nouns = [f"gadget{i}x" for i in range(12)]
    example = MailExample(
        reply_message_id="<rep-3@pottery.example>",
        mailbox=MAILBOX,
        subject="Parts",
        request_text="Missing: " + ", ".join(f"the {n}" for n in nouns),
        reply_text="We send " + ", ".join(f"the {n}" for n in nouns),
        score=0.6,
    )
    draft = reused(BOWL)
    many = Draft(**{**draft.__dict__, "body": "We send " + ", ".join(f"the {n}" for n in nouns)})
    found = check_draft(
        many,
        BOWL,
        MAILBOX,
        POLICY,
        Facts(),
        ExampleFit((example,), Vocabulary.of_texts([])),
        as_received(BOWL),
    )
    fit = [f.message for f in found if f.check is DraftCheck.EXAMPLE_FIT]
    assert len(fit) == 9 and fit[-1].startswith("the reply also mentions 'gadget8x'")


def test_a_past_reply_asking_for_a_password_fails_when_reused() -> None:
    example = MailExample(
        reply_message_id="<rep-pw@pottery.example>",
        mailbox=MAILBOX,
        subject="Account locked",
        request_text="My account is locked, I cannot sign in.",
        reply_text="Hello Ann,\n\nTo unlock it, please send me your password.\n\nThanks,\nTom",
        score=0.9,
    )
    req = request("I am locked out of my account.", subject="Locked out")
    draft = deterministic_draft(req, MAILBOX, POLICY, Facts(), [example])
    assert "please send me your password" in draft.body
    found = check_draft(
        draft, req, MAILBOX, POLICY, Facts(), ExampleFit((example,), VOCABULARY), as_received(req)
    )
    assert [f.check for f in found] == [DraftCheck.CREDENTIAL_REQUEST]
    assert "send me your password" in found[0].message


def test_a_reviewers_edit_is_checked_for_what_it_still_carries() -> None:
    before = reused(BOWL).body  # says "mug"
    typed = before.replace("mug", "bowl") + "\nThe old link https://pottery.example/p/blue-mug."
    # Carried over from the version edited: still named; typed anew by the reviewer: theirs.
    assert [m.key for m in misfits(before, [MUG], BOWL.text, [], VOCABULARY, before)] == ["mug"]
    assert misfits(typed, [MUG], BOWL.text, [], VOCABULARY, before) == []
    assert [m.kind for m in misfits(typed, [MUG], BOWL.text, [], VOCABULARY)] == [
        FitKind.SPECIFIC
    ]  # the same text as a first version: the link is the past case's
