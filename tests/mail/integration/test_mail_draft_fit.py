"""The fit check through the drafting service on a real Postgres: a past reply about a cracked
mug, reused for a cracked bowl, fails naming both words and becomes no proposal; the reviewer's
correction passes and is proposed. The mail is synthetic, written for this test."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mail_drafts import BILLING, MAIL, POLICY, drafts, load, request

from conftest import World
from fixtures_mail import MAILBOX, MailWorld, make_mail, received
from resolveflow.mail.drafts import Edit
from resolveflow.store.database import Database

MUG = "My mug arrived cracked, order 5521."


@pytest.fixture
def mail(db: Database, world: World) -> MailWorld:
    """The drafting tests' world: alex holds the support grant; both mailboxes imported."""
    made = make_mail(db, world, POLICY)
    load(db, world, MAILBOX, MAIL / "support-eml")
    load(db, world, BILLING, MAIL / "billing.mbox")
    return made


def test_a_mug_reply_reused_for_a_bowl_waits_for_the_reviewers_correction(
    db: Database,
    world: World,
    mail: MailWorld,
    tmp_path: Path,
) -> None:
    (tmp_path / "req.eml").write_bytes(request(MUG, subject="Cracked mug"))
    (tmp_path / "rep.eml").write_bytes(
        (
            f"From: {MAILBOX}\r\nTo: kim@customer.example\r\nSubject: Re: Cracked mug\r\n"
            "Message-ID: <rep-mug@acme.example>\r\n"
            f"In-Reply-To: <{abs(hash(MUG))}@customer.example>\r\n"
            "Date: Tue, 01 Dec 2026 10:00:00 +0000\r\n\r\n"
            "Hello Kim,\r\n\r\nSorry about the mug: a new mug for order 5521 leaves today.\r\n"
            "\r\nBest regards,\r\nAcme Support\r\n"
        ).encode()
    )
    load(db, world, MAILBOX, tmp_path)
    alex = world.approver(db)
    bowl = request("My bowl arrived cracked, order 7788.", subject="Cracked bowl")
    incoming = received(db, world.tenant.id, bowl)
    record, version = drafts(db, mail).draft(alex, MAILBOX, incoming)
    assert version.examples[0]["reply_message_id"] == "<rep-mug@acme.example>"
    assert "a new mug for order 7788" in version.body  # the request's own order number
    assert version.proposal_id is None
    [fit] = [f["message"] for f in version.findings if f["check"] == "example_fit"]
    assert "'mug'" in fit and "'bowl'" in fit
    assert {f["check"] for f in version.findings} == {"example_fit"}
    # The reviewer's correction passes; words they type themselves are theirs, not the past
    # case's ("sign-in" and "link" are in the password exchange the draft was shown too).
    body = version.body.replace("mug", "bowl") + "\nThe link to your order is on the sign-in page."
    fixed = drafts(db, mail).edit(alex, record.id, 1, Edit(body=body))
    assert fixed.findings == () and fixed.proposal_id is not None
