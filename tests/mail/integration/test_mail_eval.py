"""``eval drafts`` on a small synthetic mailbox written here, where every figure can be worked
out by hand: the past mail imported into a scratch tenant (removed afterwards), each request
drafted without a model and checked, and compared with the reply really sent."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.llm.metered import MeteredModel
from resolveflow.adapters.llm.scripted import ScriptedModel
from resolveflow.errors import InvalidInput
from resolveflow.llm.messages import ChatMessage
from resolveflow.mail.drafts import MODEL_ATTEMPTS
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


def model_reply(messages: Sequence[ChatMessage], kind: str) -> dict[str, object]:
    return {
        "subject": "Re: your request",
        "body": "Your parcel left our warehouse today.",
        "used_examples": [],
        "missing_information": [],
    }


def test_drafts_by_the_configured_model_and_what_it_cost(db: Database, tmp_path: Path) -> None:
    """With a model (issue 30): every draft is the model's when its output is valid, and the
    cost is recorded per call; invalid output falls back to the deterministic draft, as in
    ``mail draft``, and the failures are counted."""
    past, incoming = write_mailbox(tmp_path)
    model = MeteredModel(ScriptedModel(responder=model_reply))
    result, outcomes = evaluate_drafts(
        db, HashingEmbedder(), MAILBOX, past, incoming, model=model, limit=2
    )
    assert [o.id for o in outcomes] == ["q1", "q2"] and result.evaluated == 2
    assert [o.author for o in outcomes] == ["model", "model"]
    assert result.model_share == 1.0
    # q1's real reply is the model's body, word for word; the same body for q2's password reset
    # names a parcel the request never mentions: the fit check fails it, model or not.
    assert outcomes[0].draft_f1 == pytest.approx(1.0) and outcomes[0].complete
    assert outcomes[1].failed_checks == ("example_fit",)
    assert result.failing_share == 0.5
    [drafts] = model.cost().purposes
    assert (drafts.purpose.value, drafts.calls, drafts.failed) == ("mail_draft", 2, {})

    broken = MeteredModel(ScriptedModel(responder=lambda messages, kind: "{not json"))
    result, outcomes = evaluate_drafts(db, HashingEmbedder(), MAILBOX, past, incoming, model=broken)
    assert [o.author for o in outcomes] == ["deterministic"] * 3 and result.model_share == 0.0
    # The deterministic drafts are those of the first test: q2's reused reply fails a check.
    assert result.failing_share == pytest.approx(1 / 3)
    [drafts] = broken.cost().purposes
    assert drafts.calls == 3 * MODEL_ATTEMPTS and set(drafts.failed) == {"invalid_output"}
