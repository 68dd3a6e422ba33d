"""Property-based fuzzing of the mail parser (Hypothesis): random bytes; many, huge and folded
headers; RFC 2047 encoded words by the thousand; deep and wide MIME trees with broken, missing
and nested boundaries; bad charsets and transfer encodings; NUL, lone surrogates and invalid
UTF-8. Through ``parse_message`` and, for a share of the cases, ``MailSource`` on a file.

Each case may only parse or raise ``UnreadableMessage``, within a bounded time and a bounded
peak of memory (the process's high-water mark, reset before each case through
``/proc/self/clear_refs``), and the process may keep only a bounded amount over the whole run. The default suite
runs 200 cases; the ``fuzz`` tier (``-m fuzz``) runs 10,000 and prints what they did.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from process_memory import reset_peak, resident_mb, status_mb
from resolveflow.mail.loader import MailSource, UnreadableMessage, parse_message

SMALL, FULL = 200, 10_000
CASE_SECONDS = 20.0  # one case on a loaded machine; the bounded worst case is ~2 s
MAX_CASE_BYTES = 3_000_000  # bigger than the API's 2,000,000 characters, cheap to make
MAX_CASE_PEAK_MB = 300  # one case's peak over what was resident; one bomb took 1.4 GB before
MAX_GROWTH_MB = 400  # resident after the run (Hypothesis keeps what it learnt of 10,000 cases)


# The full tier takes about 4 minutes on a loaded 2-core machine: past the suite's 300 s default.
@pytest.fixture(
    params=[SMALL, pytest.param(FULL, marks=[pytest.mark.fuzz, pytest.mark.timeout(900)])], ids=str
)
def cases(request: pytest.FixtureRequest) -> int:
    return int(request.param)


# --- pieces -------------------------------------------------------------------------------------

NASTY = st.sampled_from(
    [
        b"\x00",
        b"\xed\xa0\x80",
        b"\xff\xfe",
        b"\xc3",
        b"\r",
        b"\n",
        b"\r\n",
        b"\t",
        b" ",
        b"=?",
        b"?=",
    ]
)
text = st.one_of(
    st.text(max_size=40).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.binary(max_size=40),
    NASTY,
)
charsets = st.sampled_from(
    [
        "utf-8",
        "us-ascii",
        "iso-8859-1",
        "x-unknown",
        "utf-7",
        "utf-16",
        "",
        "utf-8*en",
        "\x00",
        "??",
    ]
)
encoded_word = st.builds(
    lambda charset, enc, payload: f"=?{charset}?{enc}?".encode() + payload + b"?=",
    charsets,
    st.sampled_from(["q", "b", "Q", "B", "x", ""]),
    st.sampled_from([b"a", b"=E2=82=AC", b"7aCA", b"w6Q=", b"====", b"", b"a?b", b"_" * 50]),
)
encoded_run = st.builds(
    lambda word, n, sep: sep.join([word] * n),
    encoded_word,
    st.integers(0, 25_000),
    st.sampled_from([b" ", b"", b"\r\n ", b"\n\t", b","]),
)
header_names = st.one_of(
    st.sampled_from(
        [
            b"Subject",
            b"From",
            b"To",
            b"Cc",
            b"Message-ID",
            b"References",
            b"In-Reply-To",
            b"Date",
            b"Content-Type",
            b"Content-Disposition",
            b"Content-Transfer-Encoding",
            b"X-Junk",
        ]
    ),
    st.binary(min_size=1, max_size=12).filter(lambda b: b":" not in b and b"\n" not in b),
)
header_values = st.one_of(
    text,
    encoded_run,
    st.builds(lambda unit, n: unit * n, text, st.integers(0, 40_000)),  # huge, folded or not
    st.builds(lambda n: b", ".join(b"a%d@b.example" % i for i in range(n)), st.integers(0, 3000)),
    st.builds(lambda n: b"text/plain" + b"; a=b" * n, st.integers(0, 5000)),
)
header_line = st.builds(lambda n, v: n + b": " + v, header_names, header_values)
# In MIME parts: short ones (a huge header in every part would only make cases slow to build).
part_header = st.builds(lambda n, v: n + b": " + v, header_names, st.one_of(text, encoded_word))
# Thousands of short headers (the huge ones come one at a time above).
many_headers = st.builds(
    lambda name, value, n: b"\r\n".join([name + b": " + value] * n),
    header_names,
    text,
    st.integers(0, 3000),
)
IDENTITY = b"From: a@example.org\r\nMessage-ID: <x@example.org>\r\n"


def _part(headers: list[bytes], body: bytes) -> bytes:
    return b"\r\n".join(headers) + b"\r\n\r\n" + body


@st.composite
def mime(draw: st.DrawFn, depth: int = 0) -> bytes:
    """A MIME entity: a leaf, a message/rfc822, or a multipart of children, with defects."""
    kind = draw(st.sampled_from(["leaf", "leaf", "multi", "rfc822"] if depth < 3 else ["leaf"]))
    charset = draw(charsets).encode()
    extra = draw(st.lists(part_header, max_size=3))
    if kind == "leaf":
        ctype = draw(st.sampled_from([b"text/plain", b"text/html", b"application/pdf", b"text/x"]))
        cte = draw(
            st.sampled_from([b"7bit", b"base64", b"quoted-printable", b"x-uuencode", b"\x00"])
        )
        body = draw(st.one_of(text, st.sampled_from([b"<p><b>x</b></p>" * 5, b"=ZZ=\r\n" * 20])))
        headers = [b"Content-Type: " + ctype + b"; charset=" + charset]
        return _part([*headers, b"Content-Transfer-Encoding: " + cte, *extra], body)
    if kind == "rfc822":
        inner = draw(mime(depth + 1))
        return _part([b"Content-Type: message/rfc822", *extra], IDENTITY + inner)
    boundary = (
        draw(st.sampled_from([b"b", b"b" * 70, b"", b" b ", b"=?b?=", b"b\x00"])) + b"%d" % depth
    )
    children = draw(st.lists(mime(depth + 1), max_size=3))
    closed = draw(st.booleans())
    body = b"".join(b"--" + boundary + b"\r\n" + child + b"\r\n" for child in children)
    body += b"--" + boundary + b"--\r\n" if closed else b""
    return _part([b'Content-Type: multipart/mixed; boundary="' + boundary + b'"', *extra], body)


deep = st.builds(
    lambda n, closed: (
        b"".join(
            b"Content-Type: multipart/mixed; boundary=d%d\r\n\r\n--d%d\r\n" % (i, i)
            for i in range(n)
        )
        + b"Content-Type: text/plain\r\n\r\nleaf\r\n"
        + (b"".join(b"--d%d--\r\n" % i for i in reversed(range(n))) if closed else b"")
    ),
    st.integers(0, 2000),
    st.booleans(),
)
wide = st.builds(
    lambda n, body: (
        b"Content-Type: multipart/mixed; boundary=w\r\n\r\n"
        + (b"--w\r\nContent-Type: text/plain\r\n\r\n" + body + b"\r\n") * n
        + b"--w--\r\n"
    ),
    st.integers(0, 3000),
    text,
)
messages = st.one_of(
    st.binary(max_size=2000),
    st.builds(lambda h, m: IDENTITY + h + b"\r\n" + m, many_headers, mime()),
    st.builds(lambda m: IDENTITY + m, mime()),
    st.builds(lambda d: IDENTITY + d, deep),
    st.builds(lambda w: IDENTITY + w, wide),
    st.builds(lambda h: IDENTITY + h + b"\r\n\r\nbody", header_line),
).map(lambda data: data[:MAX_CASE_BYTES])


# Always run, whatever the draw: the header bomb of issue 26 (1.4 GB before) and MIME nested
# 2,000 deep (over 20 s before: every line was matched against every open boundary).
BOMBS = (
    IDENTITY + b"Subject: " + b" ".join([b"=?utf-8?q?a?="] * 20_000) + b"\r\n\r\nhi\r\n",
    IDENTITY
    + b"".join(
        b"Content-Type: multipart/mixed; boundary=d%d\r\n\r\n--d%d\r\n" % (i, i)
        for i in range(2000)
    )
    + b"Content-Type: text/plain\r\n\r\n"
    + b"leaf line\r\n" * 20_000,
)


# --- the property -------------------------------------------------------------------------------


def _run(cases: int, folder: Path) -> None:
    ran = Counter[str]()
    slowest, worst = 0.0, 0.0
    before = resident_mb()

    @settings(
        max_examples=cases, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(data=messages)
    @example(data=BOMBS[0])
    @example(data=BOMBS[1])
    def one_case(data: bytes) -> None:
        nonlocal slowest, worst
        resident, started = reset_peak(), time.monotonic()
        try:
            parse_message(data, "fuzz.eml")
            ran["parsed"] += 1
        except UnreadableMessage as exc:
            assert "\n" not in str(exc)
            ran["unreadable"] += 1
        if ran["cases"] % 10 == 0:  # a tenth also as a file: .eml, or mbox if it starts "From "
            path = folder / "case.eml"
            path.write_bytes(data)
            source = MailSource(path)
            got = list(source)
            assert len(got) + len(source.skipped) >= (0 if data.startswith(b"From ") else 1)
            ran["files"] += 1
        took, peak = time.monotonic() - started, status_mb("VmHWM:") - resident
        slowest, worst = max(slowest, took), max(worst, peak)
        assert took < CASE_SECONDS, (took, data[:200])
        assert peak < MAX_CASE_PEAK_MB, (peak, data[:200])
        ran["cases"] += 1

    one_case()
    growth = resident_mb() - before
    print(
        f"\nmail fuzz: {ran['cases']} cases ({ran['parsed']} parsed, {ran['unreadable']} "
        f"unreadable, {ran['files']} through MailSource); slowest {slowest:.2f} s; largest "
        f"peak {worst:.0f} MB over resident; resident grew {growth:.0f} MB"
    )
    assert ran["cases"] >= cases
    assert growth < MAX_GROWTH_MB


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # huge inputs' repr
def test_fuzzed_mail_is_parsed_or_unreadable_in_bounded_time_and_memory(
    cases: int, tmp_path: Path
) -> None:
    _run(cases, tmp_path)
