"""Reading mail into MailMessage: .eml, a folder, mbox, Maildir; bodies, addresses, skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolveflow.errors import InvalidInput
from resolveflow.mail.bounds import MailBounds
from resolveflow.mail.loader import MailSource, UnreadableMessage, own_words, parse_message

MAIL = Path(__file__).parents[2] / "data" / "mail"


def test_an_eml_file_is_parsed_with_bare_lower_case_addresses_and_lf_text() -> None:
    [message] = list(MailSource(MAIL / "support-eml" / "02-password-reply.eml"))
    assert message.message_id == "<rep-pw@acme.example>"
    assert message.from_address == "support@acme.example"
    assert message.from_name == "Acme Support"
    assert message.to == ("ann@customer.example",)
    assert message.in_reply_to == "<req-pw@customer.example>"
    assert message.references == ("<req-pw@customer.example>",)
    assert message.subject == "Re: Cannot reset my password"
    assert message.date is not None and message.date.utcoffset() is not None
    assert "\r" not in message.text and message.text.startswith("Hello Ann,")


def test_a_folder_of_eml_files_skips_a_message_without_message_id_with_its_reason() -> None:
    source = MailSource(MAIL / "support-eml")
    assert source.form == "eml-folder"
    ids = [m.message_id for m in source]
    assert len(ids) == 4
    [(name, reason)] = source.skipped
    assert name.endswith("05-no-message-id.eml") and "no Message-ID" in reason


def test_an_html_only_message_is_read_as_text_without_markup_or_styles() -> None:
    [message] = list(MailSource(MAIL / "support-eml" / "03-export-request.eml"))
    assert "export" in message.text and "last column is missing" in message.text
    assert "<" not in message.text and "color:red" not in message.text


def test_mbox_and_maildir_are_read() -> None:
    mbox = MailSource(MAIL / "billing.mbox")
    assert mbox.form == "mbox"
    assert [m.message_id for m in mbox] == [
        "<req-refund@customer.example>",
        "<rep-refund@acme.example>",
        "<req-address@customer.example>",
        "<rep-address@acme.example>",
    ]
    maildir = MailSource(MAIL / "support-maildir")
    assert maildir.form == "maildir"
    assert sorted(m.message_id for m in maildir) == [
        "<rep-pw@acme.example>",
        "<req-pw@customer.example>",
    ]


def test_nul_is_dropped_and_crlf_becomes_lf() -> None:
    data = (
        b"From: A <A@Example.ORG>\r\nTo: b@example.org, C <c@EXAMPLE.org>\r\n"
        b"Message-ID: <x@example.org>\r\nSubject: hi\r\n\r\nline one\x00\r\nline two\r\n"
    )
    message = parse_message(data, "x.eml")
    assert message.text == "line one\nline two"
    assert message.from_address == "a@example.org"
    assert message.to == ("b@example.org", "c@example.org")


def test_too_large_empty_and_garbage_are_skipped_with_a_reason_never_fatal(
    tmp_path: Path,
) -> None:
    with pytest.raises(UnreadableMessage, match="larger than 10"):
        parse_message(b"x" * 11, "big.eml", MailBounds(message_max_bytes=10))
    with pytest.raises(UnreadableMessage, match="empty"):
        parse_message(b"  \n", "empty.eml")
    with pytest.raises(UnreadableMessage, match="no Message-ID"):
        parse_message(b"\x89PNG\r\n\x1a\n\x00\x00binary", "img.eml")
    (tmp_path / "a.eml").write_bytes(b"")
    (tmp_path / "b.eml").write_bytes(b"From: a@example.org\nMessage-ID: <b@example.org>\n\nok\n")
    source = MailSource(tmp_path, MailBounds(message_max_bytes=1000))
    assert [m.message_id for m in source] == ["<b@example.org>"]
    assert [reason for _, reason in source.skipped] == [f"{tmp_path / 'a.eml'}: empty"]


def test_a_missing_path_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no such file or folder"):
        MailSource(tmp_path / "nope.mbox")


def test_a_sent_reply_keeps_only_the_teams_own_words() -> None:
    text = (
        "Hello Ann,\n\nuse the new link.\n\nBest regards,\nAcme Support\n-- \n"
        "Acme | https://acme.example\n\nOn Mon, 3 Jun 2024, Ann <ann@x.example> wrote:\n> old\n"
    )
    assert own_words(text) == "Hello Ann,\n\nuse the new link.\n\nBest regards,\nAcme Support"
    wrapped = "Thanks.\nOn Mon, 3 Jun 2024 at 09:00, Ann Lee <ann@x.example>\nwrote:\n> old"
    assert own_words(wrapped) == "Thanks."
    inline = "Yes.\n> did it work?\nIt did.\n-----Original Message-----\nFrom: x"
    assert own_words(inline) == "Yes.\nIt did."
