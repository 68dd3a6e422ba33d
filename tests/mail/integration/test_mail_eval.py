"""``eval drafts`` on a small synthetic mailbox written here, where every figure can be worked
out by hand: the past mail imported into a scratch tenant (removed afterwards), each request
drafted without a model and checked, and compared with the reply really sent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.errors import InvalidInput
from resolveflow.mail.evaluation import evaluate_drafts
from resolveflow.store.database import Database

MAILBOX = "support@acme.example"
# (name, subject, request, reply): the replies' content words are in the comments.
PAST = [
    ("ann", "Parcel not arrived", "Where is my parcel? It has not arrived.",
     "Your parcel left our warehouse yesterday."),  # parcel left warehouse yesterday
    ("bo", "Password reset", "How do I reset my password? The link expired.",
     "Please send me your password and I will reset it."),  # please send password reset
    ("cy", "Returning shoes", "Can I return the shoes I bought?",
     "Returns are free within thirty days."),  # return free thirty day
    ("di", "Shipping abroad", "Do you ship to Norway?",
     "We ship to every country in Europe."),  # ship country europe
]  # fmt: skip
# (id, role, subject, request, the reply really sent)
INCOMING = [
    ("q1", "question", "Parcel missing", "Where is my parcel? It did not arrive yet.",
     "Your parcel left our warehouse today."),  # parcel left warehouse today
    ("q2", "question", "Password reset", "How can I reset my password? The link has expired.",
     "Use the reset link on the sign-in page."),  # use reset link sign page
    ("q3", "follow-up", "Returning shoes", "Can I return the shoes? They do not fit.",
     "Sorry, we refunded you already."),  # sorry refunded already
    ("q4", "discussion", "Shipping abroad", "Do you ship to Norway?", "Yes."),  # not evaluated
]  # fmt: skip


def message(sender: str, to: str, subject: str, mid: str, text: str, reply_to: str = "") -> str:
    thread = f"In-Reply-To: {reply_to}\nReferences: {reply_to}\n" if reply_to else ""
    return (
        f"From: {sender}\nTo: {to}\nSubject: {subject}\nMessage-ID: {mid}\n{thread}"
        f"Date: Mon, 03 Jun 2024 10:00:00 +0000\n\n{text}\n"
    )


def write_mailbox(folder: Path) -> tuple[Path, Path]:
    parts = []
    for name, subject, request, reply in PAST:
        asked = f"<ask-{name}@customer.example>"
        parts.append(message(f"{name}@customer.example", MAILBOX, subject, asked, request))
        body = f"Hello {name.title()},\n\n{reply}\n\nBest regards,\nAcme Support"
        parts.append(message(MAILBOX, f"{name}@customer.example", f"Re: {subject}",
                             f"<re-{name}@acme.example>", body, asked))  # fmt: skip
    past = folder / "past.mbox"
    past.write_text("".join(f"From x@y Mon Jun  3 10:00:00 2024\n{p}\n" for p in parts))
    lines = []
    for case, role, subject, request, reply in INCOMING:
        (folder / f"{case}.eml").write_text(
            message(
                f"{case}@customer.example",
                MAILBOX,
                subject,
                f"<{case}@customer.example>",
                f"Hi,\n\n{request}\n\nKim",
            )
        )
        lines.append(
            {
                "id": case,
                "request_eml": f"{case}.eml",
                "request_role": role,
                "reply_own_words": reply,
            }
        )
    incoming = folder / "incoming.jsonl"
    incoming.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return past, incoming


def test_the_figures_on_a_mailbox_worked_out_by_hand(db: Database, tmp_path: Path) -> None:
    past, incoming = write_mailbox(tmp_path)
    result, outcomes = evaluate_drafts(db, HashingEmbedder(), MAILBOX, past, incoming)
    by_id = {o.id: o for o in outcomes}
    assert list(by_id) == ["q1", "q2", "q3"]  # the discussion line is not a request to answer
    assert (result.lines, result.evaluated, result.past_replies) == (4, 3, 4)
    # Each request finds the past exchange it mirrors, and reuses it.
    assert [by_id[c].example for c in ("q1", "q2", "q3")] == [
        "<re-ann@acme.example>",
        "<re-bo@acme.example>",
        "<re-cy@acme.example>",
    ]
    assert all(o.reused for o in outcomes)
    f1 = {"q1": 2 * 3 / (4 + 4), "q2": 2 * 1 / (4 + 5), "q3": 0.0}  # shared words, by hand
    for case, value in f1.items():
        assert by_id[case].example_reply_f1 == pytest.approx(value)
        assert by_id[case].best_reply_f1 == pytest.approx(value)  # no other reply shares more
        assert by_id[case].random_reply_f1 == pytest.approx(value / 4)  # the others share none
        assert by_id[case].draft_f1 == pytest.approx(value)  # the reply, reused as it was
    random_mean = (f1["q1"] + f1["q2"]) / 4 / 3
    assert result.random_reply_f1 == pytest.approx(random_mean)
    assert result.example_reply_f1 == pytest.approx(sum(f1.values()) / 3)
    assert result.best_reply_f1 == pytest.approx(sum(f1.values()) / 3)
    # q2 reuses a reply asking for the password: it fails a check. q1 and q3 are complete, and
    # q3's shares no word with the reply really sent: confidently wrong.
    assert by_id["q2"].failed_checks == ("credential_request",)
    assert [o.id for o in outcomes if o.complete] == ["q1", "q3"]
    assert result.complete_share == pytest.approx(2 / 3)
    assert result.confidently_wrong == pytest.approx(1 / 3)
    assert result.confidently_wrong_of_complete == pytest.approx(1 / 2)
    assert result.failed_checks == {"credential_request": 1}
    assert result.checks()["confidently_wrong"]["met"] is False
    # The scratch tenant is gone with everything imported into it.
    assert admin.list_tenants(db) == []


def test_bad_input_is_one_line(db: Database, tmp_path: Path) -> None:
    past, incoming = write_mailbox(tmp_path)
    with pytest.raises(InvalidInput, match="an address like"):
        evaluate_drafts(db, HashingEmbedder(), "support", past, incoming)
    with pytest.raises(InvalidInput, match="no such file or folder"):
        evaluate_drafts(db, HashingEmbedder(), MAILBOX, tmp_path / "none.mbox", incoming)
    # Past mail of another mailbox: no reply of this one to learn from.
    with pytest.raises(InvalidInput, match=re.escape("holds no reply of billing@acme.example")):
        evaluate_drafts(db, HashingEmbedder(), "billing@acme.example", past, incoming)
    assert admin.list_tenants(db) == []
