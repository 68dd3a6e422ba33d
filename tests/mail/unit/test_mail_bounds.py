"""Bounds on one mail message, checked before the standard library interprets a header: the
RFC 2047 header bomb (memory grows with the square of the encoded words in one header), a CPU
bomb of costly MIME headers in many parts, repeated address headers, deep and wide MIME trees.

The bombs run in a fresh interpreter with an address-space ceiling (so that today's code fails
by running out of it, not by taking the machine down) and report their own peak RSS."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from resolveflow.config import MailSettings
from resolveflow.mail.bounds import MailBounds
from resolveflow.mail.loader import MailSource, UnreadableMessage, parse_message

CEILING_BYTES = 1536 * 1024 * 1024  # the child's address space; the bomb needs ~2.8 GB RSS
# What the child may grow by while parsing one bomb; parsing takes a few MB.
MAX_GROWTH_MB = 150
CHILD_TIMEOUT_SECONDS = 60  # generous on a loaded machine; the bounded parse takes well under 1 s

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from resolveflow.mail.loader import UnreadableMessage, parse_message
    data = sys.stdin.buffer.read()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    try:
        parse_message(data, "bomb.eml")
        outcome, reason = "parsed", ""
    except UnreadableMessage as exc:
        outcome, reason = "unreadable", str(exc)
    except MemoryError:
        outcome, reason = "MemoryError", ""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"outcome": outcome, "reason": reason,
                      "growth_mb": (peak - before) / 1024,
                      "seconds": time.monotonic() - start}))
    """
)


def _parse_in_child(data: bytes) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(CEILING_BYTES)],
        input=data,
        capture_output=True,
        timeout=CHILD_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    result: dict[str, object] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


HEAD = b"From: a@example.org\r\nTo: b@example.org\r\nMessage-ID: <x@example.org>\r\n"
ENCODED_WORD_BOMB = HEAD + b"Subject: " + b" ".join([b"=?utf-8?q?a?="] * 20_000) + b"\r\n\r\nhi\r\n"


def _costly_parts(parts: int) -> bytes:
    """Many parts, each with its own 16 KB Content-Type of plain parameters: within the size of
    one header, but the policy parser spends ~10 microseconds a byte on each of its ~5 reads."""
    params = b"".join(b"; a%d=b" % i for i in range(2000))[:15_800]
    body = b"".join(
        b"--XX\r\nContent-Type: text/plain; n=%d" % n + params + b"\r\n\r\npart\r\n"
        for n in range(parts)
    )
    return HEAD + b"Content-Type: multipart/mixed; boundary=XX\r\n\r\n" + body + b"--XX--\r\n"


def _repeated_to(times: int) -> bytes:
    """To headers of ~1,000 addresses each, each different: ~8 MB of parse tree kept apiece."""
    to = b", ".join(b"a%d@b.example" % i for i in range(1200))[:15_800]
    headers = b"\r\n".join(b"To: n%d@b.example, " % n + to for n in range(times))
    return HEAD + headers + b"\r\n\r\nhi\r\n"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(ENCODED_WORD_BOMB, "Subject' header is over", id="20k-encoded-words"),
        pytest.param(_costly_parts(100), "header text", id="100-parts-16k-content-type"),
        pytest.param(_repeated_to(120), "header text", id="120-to-headers-of-16k"),
    ],
)
def test_a_header_bomb_is_refused_quickly_in_bounded_memory(data: bytes, reason: str) -> None:
    assert len(data) < 2_000_000  # within what POST /api/v1/mail/drafts accepts
    result = _parse_in_child(data)
    assert result["outcome"] == "unreadable", result
    assert reason in str(result["reason"]), result
    assert "\n" not in str(result["reason"])
    assert float(str(result["growth_mb"])) < MAX_GROWTH_MB, result


# --- each bound, in process --------------------------------------------------------------------


def _message(headers: bytes = b"", body: bytes = b"hi\r\n") -> bytes:
    return HEAD + b"Subject: s\r\n" + headers + b"\r\n" + body


def _nested(depth: int) -> bytes:
    """``depth`` multiparts, each the only part of the one around it."""
    inner = b"Content-Type: text/plain\r\n\r\ndeep text\r\n"
    for level in reversed(range(depth)):
        inner = (
            b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (level, level)
            + inner
            + b"\r\n--b%d--\r\n" % level
        )
    return HEAD + inner


def _wide(parts: int) -> bytes:
    body = b"".join(b"--w\r\nContent-Type: text/plain\r\n\r\npart %d\r\n" % n for n in range(parts))
    return HEAD + b"Content-Type: multipart/mixed; boundary=w\r\n\r\n" + body + b"--w--\r\n"


SMALL = MailBounds(
    message_max_bytes=20_000,
    max_headers=20,
    max_header_bytes=2000,
    max_encoded_words=10,
    max_header_parse_bytes=10_000,
    mime_max_depth=4,
    mime_max_parts=6,
)
FOLDED_WORDS = b"Subject: " + b"\r\n ".join([b"=?utf-8?q?a?="] * 11) + b"\r\n"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_message(body=b"x" * 20_000), "bytes is larger than 20000"),
        (_message(b"".join(b"X-H%d: v\r\n" % n for n in range(20))), "more than 20 header fields"),
        (_message(b"X-Long: " + b"a" * 2000 + b"\r\n"), "the 'X-Long' header is over 2000 bytes"),
        # folded over many lines: the continuation lines count with their field
        (_message(b"X-Folded: a\r\n" + b"  bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n" * 70), "'X-Folded'"),
        (_message(FOLDED_WORDS), "the 'Subject' header has over 10 encoded words"),
        (_nested(4), "nested more than 4 deep"),
        (_wide(6), "more than 6 MIME parts"),
        # a part's own header block is checked before any header in it is read
        (
            _wide(1).replace(b"Content-Type: text/plain", b"Content-Type: " + b"=?a?q?b?=" * 11),
            "encoded words",
        ),
        (
            _message(
                b"".join(
                    b"To: n%d@b.example, " % n + b"c" * 1500 + b"@d.example\r\n" for n in range(8)
                )
            ),
            "more header text than",
        ),
    ],
    ids=[
        "size",
        "fields",
        "one-field",
        "folded",
        "encoded-words",
        "depth",
        "parts",
        "part-header",
        "budget",
    ],
)
def test_each_bound_makes_the_message_unreadable_with_a_one_line_reason(
    data: bytes, reason: str
) -> None:
    with pytest.raises(UnreadableMessage) as caught:
        parse_message(data, "m.eml", SMALL)
    assert reason in str(caught.value) and str(caught.value).startswith("m.eml: ")
    assert "\n" not in str(caught.value)


def test_a_message_just_within_every_bound_is_read() -> None:
    assert parse_message(_nested(3), "ok.eml", SMALL).text == "deep text"
    assert parse_message(_wide(5), "ok.eml", SMALL).text == "part 0"
    folded_ten = b"Subject: " + b"\r\n ".join([b"=?utf-8?q?a?="] * 10) + b"\r\n"
    assert parse_message(HEAD + folded_ten + b"\r\nhi\r\n", "ok.eml", SMALL).subject == "a" * 10


def test_the_defaults_read_a_large_legitimate_message() -> None:
    """A long thread's References, 150 recipients with encoded names, an encoded Subject,
    12 attachments with RFC 2231 file names and a forwarded message inside."""
    refs = b"References: " + b"\r\n ".join(b"<m%d.x@lists.example>" % n for n in range(200))
    to = b"To: " + b",\r\n ".join(
        b"=?utf-8?q?J=C3=BCrgen_N%d?= <j%d@x.example>" % (n, n) for n in range(150)
    )
    subject = b"Subject: " + b" ".join([b"=?utf-8?b?w6TDtsO8w6TDtsO8?="] * 12)
    attachments = b"".join(
        b"--m\r\nContent-Type: application/pdf; name*=utf-8''Rechnung%%20%d.pdf\r\n"
        b"Content-Disposition: attachment; filename*=utf-8''Rechnung%%20%d.pdf\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n" % (n, n)
        for n in range(12)
    )
    forwarded = (
        b"--m\r\nContent-Type: message/rfc822\r\n\r\n" + HEAD + b"Subject: old\r\n\r\nold text\r\n"
    )
    data = (
        HEAD.replace(b"To: b@example.org\r\n", b"")
        + b"\r\n".join((refs, to, subject))
        + b"\r\nContent-Type: multipart/mixed; boundary=m\r\n\r\n"
        + b"--m\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nthe request\r\n"
        + attachments
        + forwarded
        + b"--m--\r\n"
    )
    message = parse_message(data, "big.eml")
    assert message.text == "the request" and len(message.to) == 150
    assert message.subject == "äöüäöü" * 12 and len(message.references) == 200


def test_the_bounds_are_settings_threaded_to_the_mail_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESOLVEFLOW_MAIL_MAX_ENCODED_WORDS", "3")
    monkeypatch.setenv("RESOLVEFLOW_MAIL_MIME_MAX_PARTS", "2")
    bounds = MailSettings().bounds()
    assert (bounds.max_encoded_words, bounds.mime_max_parts) == (3, 2)
    assert MailSettings.model_fields["max_header_bytes"].default == MailBounds.max_header_bytes
    (tmp_path / "a.eml").write_bytes(
        HEAD + b"Subject: =?a?q?b?= =?a?q?b?= =?a?q?b?= =?a?q?b?=\r\n\r\nx"
    )
    (tmp_path / "b.eml").write_bytes(_wide(2))
    (tmp_path / "c.eml").write_bytes(_message())
    source = MailSource(tmp_path, bounds)
    assert [m.subject for m in source] == ["s"]
    assert [reason.split(": ", 1)[1] for _, reason in source.skipped] == [
        "the 'Subject' header has over 3 encoded words",
        "more than 2 MIME parts",
    ]


def test_a_large_html_body_is_converted_with_a_deadline() -> None:
    """2 MB of dense tags (what the API accepts) took ~45 s in process; a small one still reads."""
    tags = b"<p><b>a</b><i>b</i></p>" * (2_000_000 // 23)
    html = HEAD + b"Subject: s\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + tags
    started = time.monotonic()
    with pytest.raises(UnreadableMessage, match=r"the HTML body: .*took longer than 2 s"):
        parse_message(html, "bomb.eml", MailBounds(html_timeout_seconds=2.0))
    assert time.monotonic() - started < 30  # the deadline and a worker's start-up, loaded
    small = (
        HEAD + b"Content-Type: text/html\r\n\r\n<html><body><p>Hello <b>there</b></p></body></html>"
    )
    assert parse_message(small, "ok.eml").text == "Hello **there**"
