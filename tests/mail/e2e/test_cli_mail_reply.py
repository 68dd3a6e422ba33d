"""A reply from the CLI end to end, in real processes, against the sandbox SMTP server: import the
mailbox's sent mail, draft a reply to a new request (refused until the request is received),
edit it, approve its digest, execute; the server receives exactly the approved message, once."""

from __future__ import annotations

from collections.abc import Iterator
from email import message_from_bytes
from email.policy import SMTP as SMTP_POLICY
from pathlib import Path

import pytest

from fixtures_cli import Cli
from resolveflow.sandbox.smtp.server import FakeSmtpServer

MAIL = Path(__file__).parents[2] / "data" / "mail"
MAILBOX = "support@acme.example"
REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired\nMessage-ID: <req-kim@customer.example>\n"
    "Date: Tue, 01 Dec 2026 09:00:00 +0000\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)


@pytest.fixture
def smtp() -> Iterator[FakeSmtpServer]:
    with FakeSmtpServer() as server:
        yield server


def test_import_draft_edit_approve_and_send_once(
    cli: Cli, smtp: FakeSmtpServer, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        f'[tenants.acme.mailboxes."{MAILBOX}"]\nsmtp_host = "127.0.0.1"\n'
        f'smtp_port = {smtp.port}\nsecurity = "plain"\n'
        'signature = "Best regards,\\nAcme Support"\n'
    )
    cli.env.update(RESOLVEFLOW_POLICY_FILE=str(policy), RESOLVEFLOW_EMBEDDER="fake")
    assert cli.json("tenants", "add", "acme")["name"] == "acme"
    rita = cli.json("principals", "add", "--subject", "rita", "--role", "requester")["token"]
    alex = cli.json("principals", "add", "--subject", "alex", "--role", "approver")["token"]
    imported = cli.json("mail", "import", "--mailbox", MAILBOX, str(MAIL / "support-eml"))
    assert imported["examples_indexed"] == 2
    request = tmp_path / "request.eml"
    request.write_text(REQUEST)
    cli.fails("mail", "draft", "--mailbox", MAILBOX, "--reply-to", str(request), token=rita,
              match="rita has no grant for the mailbox support@acme.example")  # fmt: skip
    for subject in ("rita", "alex"):
        cli.run("principals", "grant", "--subject", subject, "--mailbox", MAILBOX)

    # Kim's request has not reached the mailbox yet: its From is only the file's word, and no
    # allowed domain covers it. A draft, and no proposal.
    printed = cli.run("mail", "draft", "--mailbox", MAILBOX, "--reply-to", str(request),
                      token=rita).stdout  # fmt: skip
    assert "(never received by the mailbox)" in printed
    assert "check failed: To kim@customer.example is new" in printed and "not proposed" in printed
    # Received (imported, as a fetch would bring it in): the same request is answered.
    assert cli.json("mail", "import", "--mailbox", MAILBOX, str(request))["new"] == 1
    printed = cli.run("mail", "draft", "--mailbox", MAILBOX, "--reply-to", str(request),
                      token=rita).stdout  # fmt: skip
    assert "example <rep-pw@acme.example>" in printed and "never received" not in printed
    draft = cli.json("mail", "drafts", token=rita)[0]
    shown = cli.json("mail", "show", draft["id"], token=rita)
    first = shown["latest"]
    assert first["to"] == ["kim@customer.example"] and first["bcc"] == []
    assert first["in_reply_to"] == "<req-kim@customer.example>"
    assert first["examples"][0]["reply_message_id"] == "<rep-pw@acme.example>"

    # A reviewer's edit is a new version, checked again: an invented date is refused...
    body = tmp_path / "body.txt"
    body.write_text("Hello Kim,\n\nUse the new link before 12 December 2026.\n\nAcme Support\n")
    failed = cli.json("mail", "edit", draft["id"], "--version", str(first["version"]),
                      "--body-file", str(body), token=rita)["latest"]  # fmt: skip
    assert failed["proposal"] is None
    assert [f["check"] for f in failed["findings"]] == ["invented_commitment"]
    # ...unless it is a fact the reviewer gives: the same text, checked again with the fact
    # (issue 29: adding a fact no longer means drafting again). Bad facts lose nothing.
    facts = tmp_path / "facts.txt"
    facts.write_text("no colon on this line\n")
    cli.fails("mail", "edit", draft["id"], "--version", str(failed["version"]),
              "--facts", str(facts), token=rita, match="facts line 1 is not 'name: value'")  # fmt: skip
    facts.write_text("new link valid until: 12 December 2026\n")
    with_fact = cli.json("mail", "edit", draft["id"], "--version", str(failed["version"]),
                         "--facts", str(facts), token=rita)  # fmt: skip
    dated = with_fact["latest"]
    assert dated["findings"] == [] and dated["body"] == failed["body"]
    assert dated["facts"] == with_fact["facts"] == facts.read_text()
    assert with_fact["versions"][0]["facts"] == ""  # the version before keeps its own
    shown_text = cli.run("mail", "show", draft["id"], token=rita).stdout
    assert "new link valid until: 12 December 2026" in shown_text
    cli.fails("mail", "edit", draft["id"], "--version", str(dated["version"]),
              "--facts", str(facts), token=rita, match="the edit changes nothing")  # fmt: skip
    # An honest text without the fact becomes the proposal to approve.
    facts.write_text("")
    text = "Hello Kim,\n\nReset links are valid for one hour: ask for a new one and use it soon.\n"
    body.write_text(text + "\nBest regards,\nAcme Support\n")
    passed = cli.json("mail", "edit", draft["id"], "--version", str(dated["version"]),
                      "--body-file", str(body), "--facts", str(facts), token=rita)["latest"]  # fmt: skip
    assert passed["facts"] == ""
    assert passed["findings"] == [] and passed["author"] == "reviewer"
    proposal = passed["proposal"]
    cli.fails("mail", "edit", draft["id"], "--version", str(first["version"]), "--subject", "Re: x",
              token=rita, match=f"version {passed['version']} was written after")  # fmt: skip

    cli.run("execute", "--once", token=alex)
    assert smtp.messages == []  # nothing leaves before the approval
    cli.fails("approve", proposal["id"], "--digest", proposal["digest"], token=rita,
              match="approver")  # fmt: skip
    cli.run("approve", proposal["id"], "--digest", proposal["digest"], token=alex)
    cli.run("execute", "--once", token=alex)
    cli.run("execute", "--once", token=alex)
    [sent] = smtp.messages
    assert sent.rcpt_tos == ("kim@customer.example",)
    message = message_from_bytes(sent.raw, policy=SMTP_POLICY)
    assert message["From"] == MAILBOX and message["In-Reply-To"] == "<req-kim@customer.example>"
    assert message.get_content().replace("\r\n", "\n").startswith(text)
    assert sent.message_id.startswith("<resolveflow.") and sent.message_id.endswith(
        "@acme.example>"
    )
