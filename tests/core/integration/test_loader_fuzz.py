"""Property-based fuzzing of the document loaders (Hypothesis, issue 26) through the entry point
``index docs`` and ``POST /api/v1/documents`` use: ``Extractor.extract``, real worker processes.

Generated Markdown (front matter, headings padded with spaces, fences, NUL, surrogates as bytes),
HTML (deep and random nesting, huge attributes, character references to surrogates), PDF-ish
bytes (valid tiny PDFs, truncated, corrupted, bombs, nested arrays, junk after a header) and
random bytes, each declared as every format. Every case ends as a document Postgres can store,
or as one of the documented one-line refusals (``InvalidInput``: unreadable, too large,
unsupported); never anything else, each within its deadline, and the workers' peak memory
stays under the ceiling while the test process itself does not grow.

The default suite runs 150 cases; the ``fuzz`` tier (``-m fuzz``) runs 10,000, all of them
through the worker processes, and prints the outcomes.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from document_bombs import dense_html, nested_html, pdf_bomb, surrogate_pdf
from documents_data import MANUAL_PAGES, tiny_pdf
from resolveflow.errors import InvalidInput
from resolveflow.retrieval.extraction import ExtractionLimits, Extractor
from resolveflow.retrieval.loaders import MEDIA_TYPES, LoadedDocument, media_type_for

SMALL, FULL = 150, 10_000
LIMITS = ExtractionLimits(
    max_bytes=256 * 1024, timeout_seconds=10.0, memory_bytes=512 * 1024 * 1024, workers=2
)
SLACK = 20.0  # a fresh worker's start after a kill, on a loaded machine
GROWTH = 300 * 1024 * 1024  # the test process over the whole run (Hypothesis keeps ~150 MB)


@pytest.fixture(
    params=[SMALL, pytest.param(FULL, marks=[pytest.mark.fuzz, pytest.mark.timeout(900)])], ids=str
)
def cases(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def extractor() -> Iterator[Extractor]:
    pool = Extractor(1)
    yield pool
    pool.close()


# --- inputs ------------------------------------------------------------------------------------

words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40
) | st.sampled_from(["#", "---", "```", "~~~", "  ", "\t", "\r\n", "\x00", "=?utf-8?q?a?="])
odd_bytes = st.sampled_from(
    [b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3", b"\r"]
)


@st.composite
def markdown(draw: st.DrawFn) -> bytes:
    parts: list[bytes] = []
    if draw(st.booleans()):
        lines = draw(st.lists(words.map(lambda w: f"{w}: {w}"), max_size=5))
        parts.append(("---\n" + "\n" * draw(st.integers(0, 3000)) + "\n".join(lines)).encode())
        parts.append(draw(st.sampled_from([b"\n---\n", b"\n--- \r\n", b"", b"\n---"])))
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["heading", "fence", "text", "odd", "pad"]))
        if kind == "heading":
            hashes = "#" * draw(st.integers(1, 7))
            pad = " " * draw(st.integers(0, 2500))
            parts.append(f"{hashes} {draw(words)}{pad}{draw(words)}{pad}#\n".encode())
        elif kind == "fence":
            parts.append(f"```\n{draw(words)}\n".encode())
        elif kind == "odd":
            parts.append(draw(odd_bytes))
        elif kind == "pad":
            parts.append(
                draw(st.sampled_from([b" ", b"\n", b"#", b"-"])) * draw(st.integers(0, 5_000))
            )
        else:
            parts.append(draw(words).encode("utf-8", "surrogatepass") + b"\n")
    return b"".join(parts)


TAGS = ["div", "p", "b", "i", "table", "tr", "td", "ul", "li", "pre", "code", "h1", "h2", "a",
        "main", "article", "script", "style", "nav", "br", "img", "svg", "title", "html", "body"]  # fmt: skip


@st.composite
def html(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["random", "deep", "attributes", "dense", "entities"]))
    if kind == "deep":
        opening = "".join(
            f"<{t}>" for t in draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=3))
        )
        return nested_html(draw(st.integers(1, 2_000)), opening)
    if kind == "attributes":
        size = draw(st.integers(0, 50_000))
        return f"<div class=\"{'x' * size}\" data-a='{draw(words)}'>{draw(words)}</div>".encode()
    if kind == "dense":
        return dense_html(draw(st.integers(0, 20_000)))
    if kind == "entities":
        refs = draw(st.lists(st.sampled_from(["&#xD800;", "&#0;", "&#x110000;", "&amp;", "&bogus;",
                                              "&#99999999999;", "&lt;", "<![CDATA[", "<!--"]), max_size=20))  # fmt: skip
        return ("<p>" + "".join(refs) + "</p>").encode()
    pieces: list[bytes] = []
    for _ in range(draw(st.integers(0, 30))):
        tag = draw(st.sampled_from(TAGS))
        pieces.append(
            draw(st.sampled_from([f"<{tag}>", f"</{tag}>", f"<{tag}/>", f"<{tag} x=y>"])).encode()
        )
        pieces.append(draw(words).encode("utf-8", "surrogatepass"))
        if draw(st.integers(0, 9)) == 0:
            pieces.append(draw(odd_bytes))
    return b"".join(pieces)


def _corrupt(data: bytes, seed: int, flips: int) -> bytes:
    rng = random.Random(seed)
    buffer = bytearray(data)
    for _ in range(flips):
        buffer[rng.randrange(len(buffer))] = rng.randrange(256)
    return bytes(buffer)


@st.composite
def pdfish(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.lists(st.text(alphabet="abc ()\\%<>[]/", max_size=30), min_size=1, max_size=4),
                          min_size=1, max_size=3))  # fmt: skip
    valid = tiny_pdf(lines, title=draw(st.none() | st.text(alphabet="xyz()\\", max_size=10)))
    kind = draw(
        st.sampled_from(["valid", "truncated", "corrupted", "bomb", "nested", "junk", "odd"])
    )
    if kind == "valid":
        return valid
    if kind == "truncated":
        return valid[: draw(st.integers(0, len(valid)))]
    if kind == "corrupted":
        return _corrupt(valid, draw(st.integers(0, 2**32)), draw(st.integers(1, 30)))
    if kind == "bomb":
        return pdf_bomb(draw(st.integers(1_000, 150_000)), pages=draw(st.integers(1, 2)))
    if kind == "nested":
        depth = draw(st.integers(1, 50_000))
        return b"%PDF-1.4\n1 0 obj\n" + b"[" * depth + b"\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF"
    if kind == "odd":
        return draw(st.sampled_from([surrogate_pdf(), tiny_pdf(MANUAL_PAGES)]))
    return b"%PDF-1." + draw(st.binary(max_size=2_000))


documents = st.one_of(
    st.tuples(st.just("doc.md"), markdown()),
    st.tuples(st.just("page.html"), html()),
    st.tuples(st.just("file.pdf"), pdfish()),
    st.tuples(
        st.sampled_from(["doc.md", "a.txt", "page.html", "file.pdf"]), st.binary(max_size=4_000)
    ),
)


# --- the property ------------------------------------------------------------------------------


def _check_document(doc: LoadedDocument) -> None:
    for text in (
        doc.title,
        doc.body,
        *(s.text for s in doc.sections),
        *(s.heading for s in doc.sections),
    ):
        text.encode("utf-8")  # no lone surrogate: Postgres could not store it
        assert "\x00" not in text
    assert doc.body and len(doc.body) <= LIMITS.text.max_chars


def test_fuzzed_documents_end_as_a_document_or_one_documented_line(
    extractor: Extractor, cases: int
) -> None:
    outcomes = Counter[str]()
    before = psutil.Process().memory_info().rss
    slowest = 0.0

    @settings(
        max_examples=cases, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(document=documents, declared=st.none() | st.sampled_from(MEDIA_TYPES))
    def one_case(document: tuple[str, bytes], declared: str | None) -> None:
        nonlocal slowest
        name, data = document
        media_type = declared or media_type_for(name)
        started = time.monotonic()
        try:
            doc = extractor.extract(name, data, media_type, LIMITS)
        except InvalidInput as exc:  # UnreadableDocument, DocumentTooLarge, UnsupportedMediaType
            assert exc.message.startswith(f"{name}: ") and "\n" not in exc.message, exc.message
            outcomes[type(exc).__name__] += 1
        else:
            _check_document(doc)
            outcomes["document"] += 1
        took = time.monotonic() - started
        slowest = max(slowest, took)
        assert took < LIMITS.timeout_seconds + SLACK, f"{took:.1f} s"

    one_case()
    grown = psutil.Process().memory_info().rss - before
    print(
        f"\nloader fuzz: {sum(outcomes.values())} cases; outcomes {dict(sorted(outcomes.items()))};"
        f" slowest {slowest:.2f} s; worker peak {extractor.peak_rss_bytes // 2**20} MB;"
        f" test process grew {grown // 2**20} MB"
    )
    assert sum(outcomes.values()) >= cases
    assert extractor.peak_rss_bytes <= LIMITS.memory_bytes
    assert grown < GROWTH
