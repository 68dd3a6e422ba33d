"""What ``eval drafts`` measures, on texts written for these tests: the token F1 of content words,
the reply the similar cases agree with and the confirmation a reply nobody agrees with needs, the
report's figures from outcomes computed by hand, and the incoming file's one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resolveflow.errors import InvalidInput
from resolveflow.mail.domain.agreement import CONSENSUS_K, by_agreement
from resolveflow.mail.domain.draft import (
    AGREEMENT_FLOOR,
    CONFIRM,
    Facts,
    deterministic_draft,
    reusable_text,
)
from resolveflow.mail.domain.mailbox import MailboxPolicy
from resolveflow.mail.domain.message import MailExample, MailMessage
from resolveflow.mail.domain.overlap import reply_words, token_f1
from resolveflow.mail.domain.words import content_words, normal
from resolveflow.mail.evaluation import DraftOutcome, read_incoming, report

MAILBOX = "support@acme.example"
POLICY = MailboxPolicy(smtp_host="smtp.acme.example", greeting="", signature="")


def test_content_words_fold_case_and_plurals_and_leave_function_words_out() -> None:
    assert content_words("The Mugs and THE mug's handle, the boxes and a box") == {
        "mug",
        "handle",
        "box",
    }
    assert normal("batteries") == "battery" and normal("classes") == "class"
    assert reply_words("Send [[order number]] today") == {"send", "today"}


def test_token_f1_by_hand() -> None:
    real = reply_words("Your parcel left our warehouse today.")  # parcel left warehouse today
    candidate = reply_words("The parcel left the warehouse yesterday.")
    assert token_f1(candidate, real) == pytest.approx(2 * (3 / 4) * (3 / 4) / (3 / 4 + 3 / 4))
    assert token_f1(reply_words("Sorry!"), real) == 0.0
    assert token_f1(frozenset(), real) == 0.0


def test_the_reply_the_others_agree_with_is_reused_first() -> None:
    def example(n: int, reply: str, score: float) -> MailExample:
        return MailExample(f"<r{n}@acme.example>", MAILBOX, "s", "request", reply, score)

    usual = "Reset links last one hour: ask for a new link on the sign-in page."
    found = by_agreement(
        [
            example(1, "Your invoice was corrected yesterday.", 0.9),  # the closest request
            example(2, usual, 0.8),
            # each says part of the usual answer; none says what the others say as well
            example(3, "Ask for a new link on the sign-in page.", 0.7),
            example(4, "Reset links last one hour.", 0.6),
            example(5, "A new link: see the sign-in page.", 0.5),
            example(6, usual, 0.1),  # beyond the first CONSENSUS_K: not counted, kept last
        ]
    )
    assert [e.reply_message_id for e in found][:2] == ["<r2@acme.example>", "<r1@acme.example>"]
    assert found[-1].reply_message_id == "<r6@acme.example>" and found[-1].agreement is None
    assert found[0].agreement is not None and found[1].agreement is not None
    # by hand: (0.7 x 10/13 + 0.6 x 8/12 + 0.5 x 8/13) / 2.7, the invoice reply shares nothing
    assert found[0].agreement == pytest.approx((0.7 * 10 / 13 + 0.6 * 8 / 12 + 0.5 * 8 / 13) / 2.7)
    assert found[1].agreement == 0.0 < AGREEMENT_FLOOR < found[0].agreement
    # Too few similar cases to agree: the order of relevance, agreement unknown.
    few = [example(n, "x", 0.5) for n in range(CONSENSUS_K - 1)]
    assert by_agreement(few) == few


def test_a_reply_nobody_agrees_with_asks_the_reviewer_to_confirm_it() -> None:
    req = MailMessage("<q@customer.example>", "kim@customer.example", "Kim", (MAILBOX,), (),
                      "Reset", None, "How do I reset my password?")  # fmt: skip
    lone = MailExample("<r@acme.example>", MAILBOX, "s", "q", "Use the link.", 0.9, agreement=0.05)
    draft = deterministic_draft(req, MAILBOX, POLICY, Facts(), [lone])
    assert draft.body.startswith(f"[[{CONFIRM}]]\n\nUse the link.")
    assert draft.missing_information == (CONFIRM,)
    agreed = MailExample("<r@acme.example>", MAILBOX, "s", "q", "Use the link.", 0.9, agreement=0.5)
    assert deterministic_draft(req, MAILBOX, POLICY, Facts(), [agreed]).body == "Use the link."
    unknown = MailExample("<r@acme.example>", MAILBOX, "s", "q", "Use the link.", 0.9)
    assert deterministic_draft(req, MAILBOX, POLICY, Facts(), [unknown]).missing_information == ()


def test_the_reusable_text_leaves_the_frame_and_a_standing_signature_out() -> None:
    reply = (
        "Hi Ann,\n\nTry ?merge first.\n\nCheers,\nBert\n\n\nBert Gunter\n\n"
        '"A quotation under every reply."\n'
    )
    assert reusable_text(reply) == "Try ?merge first."
    assert reusable_text("See ?merge.\n\n-- Bert\n\nBert Gunter\nA quotation") == "See ?merge."
    assert reusable_text("Ann Lee") == "Ann Lee"  # the only line is the reply, not a signature


def outcome(n: int, example: float, random: float, best: float, draft: float, **kw: object):  # type: ignore[no-untyped-def]
    return DraftOutcome(
        id=f"c{n}",
        example=f"<r{n}@acme.example>",
        example_score=0.5,
        reused=True,
        example_reply_f1=example,
        random_reply_f1=random,
        best_reply_f1=best,
        draft_f1=draft,
        placeholders=kw.get("placeholders", ()),  # type: ignore[arg-type]
        failed_checks=kw.get("failed", ()),  # type: ignore[arg-type]
    )


def test_the_report_by_hand() -> None:
    outcomes = [
        outcome(1, 0.6, 0.1, 0.8, 0.5),  # complete, right
        outcome(2, 0.3, 0.2, 0.6, 0.05),  # complete, below the random mean (0.15): wrong
        outcome(3, 0.0, 0.15, 0.4, 0.0, placeholders=("answer",), failed=("missing_information",)),
        outcome(4, 0.3, 0.15, 0.5, 0.1, failed=("example_fit",)),
    ]
    result = report(outcomes, lines=6, past=10)
    assert (result.lines, result.evaluated, result.past_replies) == (6, 4, 10)
    assert result.example_reply_f1 == pytest.approx(1.2 / 4)
    assert result.random_reply_f1 == pytest.approx(0.6 / 4)
    assert result.best_reply_f1 == pytest.approx(2.3 / 4)
    assert result.draft_f1 == pytest.approx(0.65 / 4)
    assert result.complete_share == pytest.approx(2 / 4)
    assert result.confidently_wrong == pytest.approx(1 / 4)
    assert result.confidently_wrong_of_complete == pytest.approx(1 / 2)
    assert result.failed_checks == {"example_fit": 1, "missing_information": 1}
    checks = result.checks()
    assert checks["example_reply_f1"]["met"] is True  # 0.30 >= 2 x 0.15
    assert checks["confidently_wrong"]["met"] is False  # 0.25 > 0.05
    assert checks["example_reply_f1"]["target"] == ">= 2 x random (0.3000)"


def eml(n: int) -> str:
    return (
        f"From: Kim <kim{n}@customer.example>\nTo: {MAILBOX}\nSubject: Question {n}\n"
        f"Message-ID: <q{n}@customer.example>\n\nHow do I reset my password?\n"
    )


def test_the_incoming_file_and_its_population(tmp_path: Path) -> None:
    for n in range(3):
        (tmp_path / f"{n}.eml").write_text(eml(n))
    lines = [
        {"id": "a", "request_eml": "0.eml", "request_role": "question", "reply_own_words": "x"},
        {"id": "b", "request_eml": "1.eml", "request_role": "discussion", "reply_own_words": "y"},
        {"id": "c", "request_eml": "2.eml", "request_role": "follow-up",
         "reply_text": "Use the link.\n\nOn Monday Kim wrote:\n> How do I reset it?"},
    ]  # fmt: skip
    path = tmp_path / "incoming.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    read = read_incoming(path)
    assert read.lines == 3 and [c.id for c in read.cases] == ["a", "c"]
    assert read.cases[1].real_reply == "Use the link."  # the reply's own words
    assert read.cases[0].request.message_id == "<q0@customer.example>"
    # Without request_role every line is a request to evaluate.
    path.write_text(json.dumps({"id": "d", "request_eml": "1.eml", "reply_own_words": "z"}))
    assert [c.id for c in read_incoming(path).cases] == ["d"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json", "incoming.jsonl line 1: not JSON"),
        ('["a list"]', "line 1: not a JSON object"),
        ('{"request_eml": "0.eml", "reply_own_words": "x"}', "line 1: no id"),
        ('{"id": "a", "reply_own_words": "x"}', "no request_eml"),
        ('{"id": "a", "request_eml": "0.eml"}', "no reply_own_words or reply_text"),
        ('{"id": "a", "request_eml": "9.eml", "reply_own_words": "x"}', "no such file 9.eml"),
        ('{"id": "a", "request_eml": "bad.eml", "reply_own_words": "x"}', "no Message-ID"),
        ('{"id": "a", "request_role": "discussion", "request_eml": "0.eml", "reply_own_words": ""}',
         "no request to evaluate"),
    ],
)  # fmt: skip
def test_a_bad_incoming_file_is_one_line(tmp_path: Path, content: str, says: str) -> None:
    (tmp_path / "0.eml").write_text(eml(0))
    (tmp_path / "bad.eml").write_text("From: kim@customer.example\n\nno id\n")
    path = tmp_path / "incoming.jsonl"
    path.write_text(content + "\n")
    with pytest.raises(InvalidInput) as caught:
        read_incoming(path)
    assert says in caught.value.message and "\n" not in caught.value.message
    with pytest.raises(InvalidInput, match="no such file"):
        read_incoming(tmp_path / "missing.jsonl")
