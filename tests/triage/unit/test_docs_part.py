"""The docs part (pure): which issues ask a question, from their own words, and the part made of
what the documents answer: kept with a cited passage at or above the answerer's floor, left out
below it, on a report that is no question, and when nothing in the documents relates. What it
posts is inert Markdown, linked only by a safe URL."""

from __future__ import annotations

import pytest

from resolveflow.triage.domain.docs import (
    NO_ANSWER,
    NOT_A_QUESTION,
    DocsAnswer,
    DocsPassage,
    docs_part,
    question_like,
)
from resolveflow.triage.domain.parts import PartName

EXPORT = DocsPassage(
    "Exporting widgets",
    "guides/export.md",
    None,
    "To Parquet",
    "Call widgets.export(path, format='parquet') to write every widget to one file.",
    0.81,
)


@pytest.mark.parametrize(
    ("title", "body"),
    [
        ("How do I export widgets to parquet?", "I read the guide but could not find it."),
        ("How to limit the number of rows loaded", "For testing I only need a few rows."),
        ("Is it possible to change the cache folder", "I would like it on another disk."),
        ("Can I load widgets from a zip archive", "The archive has three folders."),
        ("Lookahead streaming support?", "Would streaming with lookahead work?"),
        ("[Question] export options", "Which options does export take?"),
        ("Export options", "### Your question\nWhich options does export take?"),
    ],
)
def test_a_question_in_the_issue_s_own_words_is_question_like(title: str, body: str) -> None:
    assert question_like(title, body)


@pytest.mark.parametrize(
    ("title", "body"),
    [
        # failures, however they are worded
        ("How do I fix this error when saving?", "It happens every time."),
        ("Why does saving crash?", "Every save crashes the app."),
        ("ConnectionError: Couldn't reach https://example.org/data.tar?dl=1", "Any idea?"),
        (
            "How to use load() with two folders?",
            "I tried:\nTraceback (most recent call last):\n  File \"x.py\", line 3\nKeyError: 'a'",
        ),
        ("Saving widgets", "## Describe the bug\nSaving gives the wrong result. How come?"),
        # no question asked
        ("Add support for parquet export", "It would be great to export to parquet."),
        ("Release 2.0", "Notes for the release."),
        # a question mark inside a URL asks nothing
        ("Load https://example.org/data?format=csv", "The loader reads this link."),
    ],
)
def test_a_failure_or_a_statement_is_not_question_like(title: str, body: str) -> None:
    assert not question_like(title, body)


def test_the_part_is_kept_with_its_citation_at_or_above_the_floor() -> None:
    part = docs_part(True, DocsAnswer(0.62, 0.2, (EXPORT,)))
    assert part.kept and part.name is PartName.DOCS
    assert (part.score, part.floor) == (0.62, 0.2)
    [item] = part.items
    assert (item.ref, item.score, item.why) == ("guides/export.md", 0.81, "quoted: To Parquet")
    assert part.paragraph is not None
    assert part.paragraph.startswith("The project's documentation may answer this:")
    assert "Exporting widgets (`guides/export.md`), “To Parquet”: Call widgets.export" in (
        part.paragraph
    )


def test_two_passages_of_one_page_make_one_item() -> None:
    setup = DocsPassage("Exporting widgets", "guides/export.md", None, "Setup", "pip install", None)
    part = docs_part(True, DocsAnswer(0.5, 0.2, (EXPORT, setup)))
    [item] = part.items
    assert item.why == "quoted: To Parquet, Setup"
    assert part.paragraph is not None and part.paragraph.count("\n- ") == 2


@pytest.mark.parametrize(
    ("question", "answer", "why", "score"),
    [
        (True, DocsAnswer(0.12, 0.2, (EXPORT,)), NO_ANSWER, 0.12),  # below the floor
        (True, DocsAnswer(0.4, 0.2, ()), NO_ANSWER, 0.4),  # not answered: nothing cited
        (True, None, NO_ANSWER, None),  # nothing in the documents relates
        (False, DocsAnswer(0.9, 0.2, (EXPORT,)), NOT_A_QUESTION, None),
    ],
)
def test_the_part_is_left_out_and_says_why(
    question: bool, answer: DocsAnswer | None, why: str, score: float | None
) -> None:
    part = docs_part(question, answer)
    assert not part.kept and part.left_out == why
    assert part.score == score and part.paragraph is None and part.items == ()


def test_what_is_posted_is_inert_and_linked_only_by_a_safe_url() -> None:
    hostile = DocsPassage(
        "[click](https://evil.example) <b>@team</b>",
        "guides/x.md",
        "javascript:alert(1)",
        "## **Setup**",
        "Run `rm -rf` then see https://evil.example and ping @maintainers ![img](x.png)",
        0.5,
    )
    safe = DocsPassage("Setup", "guides/setup.md", "https://docs.example.org/setup", "", "ok", 0.4)
    paragraph = docs_part(True, DocsAnswer(0.5, 0.2, (hostile, safe))).paragraph
    assert paragraph is not None
    assert "javascript" not in paragraph and "](https://evil" not in paragraph
    assert "<b>" not in paragraph and "![" not in paragraph
    assert "Run `rm -rf` then" in paragraph  # a code span of its own (``code``), closed by it
    assert "https://evil" not in paragraph  # defanged: nothing autolinks
    assert "@maintainers" not in paragraph  # nobody is mentioned
    assert "- [Setup](https://docs.example.org/setup): ok" in paragraph


def test_a_quote_reads_as_its_page_links_as_text_code_as_code_a_table_as_rows() -> None:
    quote = (
        "`class csv.DictReader(f, *, restkey=None, *args, **kwds)`\n"
        "Rows as dicts, see [csv](csv.html#module-csv).⁴\n\n"
        "| Directive | Meaning |\n| --- | --- |\n| `%a` | Weekday \\| name |"
    )
    page = DocsPassage("csv", "library/csv.html", None, "DictReader", quote, 0.7)
    paragraph = docs_part(True, DocsAnswer(0.7, 0.2, (page,))).paragraph
    assert paragraph is not None
    line = paragraph.splitlines()[-1]
    assert line.startswith("- csv (`library/csv.html`), “DictReader”: ")
    assert "`class csv.DictReader(f, *, restkey=None, *args, **kwds)`" in line
    assert "Rows as dicts, see csv.⁴" in line and "module-csv" not in line
    assert "Directive &#124; Meaning; `%a` &#124; Weekday &#124; name" in line
