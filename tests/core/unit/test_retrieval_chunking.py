"""Chunking edge cases: empty body, a 1 MB body, code blocks, non-Latin text."""

from __future__ import annotations

import itertools

from resolveflow.retrieval.chunking import (
    CHUNK_CHARS,
    HEAD_BODY_CHARS,
    MAX_CHUNKS,
    CommentText,
    chunk_document,
    embedding_text,
    normalize_text,
    query_text,
)


def test_empty_body_gives_one_head_chunk_with_the_title() -> None:
    chunks = chunk_document("Crash on start", "")
    assert [(c.ordinal, c.section, c.text) for c in chunks] == [(0, "head", "Crash on start")]


def test_nothing_to_index_gives_no_chunks() -> None:
    assert chunk_document("", "") == []
    assert chunk_document("  ", "\r\n\x00") == []


def test_short_body_is_all_in_the_head() -> None:
    chunks = chunk_document("Title", "First paragraph.\n\nSecond paragraph.")
    assert len(chunks) == 1
    assert chunks[0].text == "Title\n\nFirst paragraph.\n\nSecond paragraph."


def test_one_megabyte_body_is_bounded_and_every_chunk_fits() -> None:
    line = "ERROR 2024-01-01 worker-7 connection reset by peer while reading frame\n"
    body = line * (1_000_000 // len(line) + 1)
    assert len(body) >= 1_000_000
    chunks = chunk_document("Log flood", body)
    assert len(chunks) == MAX_CHUNKS
    assert chunks[0].section == "head" and chunks[0].text.startswith("Log flood\n\n")
    assert all(c.section == "body" for c in chunks[1:])
    assert all(len(c.text) <= CHUNK_CHARS for c in chunks)
    assert [c.ordinal for c in chunks] == list(range(MAX_CHUNKS))


def test_one_megabyte_without_any_whitespace_is_cut_hard() -> None:
    chunks = chunk_document("x", "a" * 1_000_000)
    assert len(chunks) == MAX_CHUNKS
    assert all(0 < len(c.text) <= CHUNK_CHARS for c in chunks)


def test_code_block_that_fits_is_never_split() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(40)) + "\n```"
    assert len(code) < CHUNK_CHARS
    body = ("Intro sentence about the failure. " * 20) + "\n\n" + code + "\n\nAfter the code."
    chunks = chunk_document("Traceback", body)
    holding = [c for c in chunks if "value_0 = compute(0)" in c.text]
    assert holding, chunks
    assert any("value_39 = compute(39)" in c.text and "```python" in c.text for c in holding)


def test_blank_lines_inside_a_code_block_do_not_split_it() -> None:
    code = "```\nline one\n\n\nline two\n```"
    chunks = chunk_document("t", code)
    assert chunks[0].text == "t\n\n" + code


def test_long_body_sections_overlap() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(20)]
    chunks = chunk_document("Long", "\n\n".join(paragraphs))
    assert len(chunks) > 2
    for before, after in itertools.pairwise(chunks[1:]):
        tail = before.text[-100:]
        assert tail.split()[-1] in after.text  # the next chunk starts with the previous tail


def test_head_takes_about_the_head_budget_of_the_body() -> None:
    body = "\n\n".join(f"Sentence number {i} of the body." for i in range(200))
    head = chunk_document("T", body)[0]
    assert HEAD_BODY_CHARS // 2 < len(head.text) <= HEAD_BODY_CHARS + len("T\n\n")


def test_non_latin_text_keeps_every_character() -> None:
    japanese = "アプリを起動するとクラッシュします。" * 120  # no spaces at all
    russian = "Приложение падает при запуске. " * 80
    chinese_title = "启动时崩溃"
    chunks = chunk_document(chinese_title, japanese + "\n\n" + russian)
    assert chunks[0].text.startswith(chinese_title)
    joined = "".join(c.text for c in chunks)
    assert "クラッシュ" in joined and "падает" in joined
    assert all(len(c.text) <= CHUNK_CHARS for c in chunks)
    for chunk in chunks:
        chunk.text.encode("utf-8")  # no broken surrogates


def test_text_is_normalised() -> None:
    assert normalize_text("e\u0301\r\nline\x00two\t \r\n") == "\u00e9\nlinetwo"


def test_comments_become_their_own_chunks_with_the_author() -> None:
    chunks = chunk_document(
        "T", "Body.", [CommentText("alice", "Same here on 2.0"), CommentText("bob", "")]
    )
    assert [(c.section, c.text) for c in chunks] == [
        ("head", "T\n\nBody."),
        ("comment", "alice commented:\nSame here on 2.0"),
    ]


def test_embedding_text_drops_user_agent_lines_and_adds_the_title_to_later_chunks() -> None:
    body = "User Agent: Mozilla/5.0 (X11; Linux x86_64)\n\nSteps to reproduce: open it"
    assert embedding_text("T", "head", "T\n\n" + body) == "T\n\nSteps to reproduce: open it"
    assert embedding_text("T", "body", "more") == "T\nmore"
    assert query_text("  User-Agent: x\nreal words ") == "real words"
