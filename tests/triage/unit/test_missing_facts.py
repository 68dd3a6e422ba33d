"""What a bug report lacks, read by rules (pure): only failures are asked anything; a fact given
in any of its usual shapes is not asked for; what it printed is asked only when the report says
it printed something; the request names the missing facts and repeats nothing of the report."""

from __future__ import annotations

import time

import pytest

from resolveflow.triage.domain.missing_facts import (
    MissingFact,
    read_facts,
    request_text,
)

V, R, E, N = (
    MissingFact.VERSION,
    MissingFact.REPRODUCTION,
    MissingFact.ERROR_OUTPUT,
    MissingFact.ENVIRONMENT,
)

COMPLETE = """### Describe the bug
Saving a table crashes.

### Steps to reproduce
```python
table.save("out.parquet")
```

Traceback (most recent call last):
  File "x.py", line 1, in <module>
ValueError: bad schema

### Environment
- widgets version: 2.14.5
- Platform: Linux-6.1-x86_64, Python 3.11
"""


def test_a_complete_report_is_asked_nothing() -> None:
    read = read_facts("save() crashes on a nested schema", COMPLETE)
    assert read.says_it_fails and read.missing == () and not read.ask


def test_a_crash_told_in_one_line_is_asked_for_everything() -> None:
    read = read_facts("App crashes when I open settings", "It crashes every time.")
    assert read.says_it_fails
    assert read.missing == (V, R, E, N) and read.ask


@pytest.mark.parametrize(
    ("title", "body"),
    [
        ("[Feature request] export to CSV", "It would be nice. Exporting fails today."),
        ("Add support for zstd", "### Feature request\nzstd is faster; gzip fails on big files."),
        ("How do I load a local folder?", "I cannot find it in the docs."),
        ("Docs: explain caching", "### Motivation\nPeople get errors because of the cache."),
        ("Release 3.0 plan", "A list of what goes into the next release."),
        ("Typo and a broken link in the install docs", "The link fails to open."),
    ],
)
def test_feature_requests_questions_and_plans_are_asked_nothing(title: str, body: str) -> None:
    assert not read_facts(title, body).ask


def test_a_wrong_result_is_not_asked_for_a_traceback() -> None:
    body = "### Describe the bug\nThe test split has every label set to -1.\n\n1. load it\n2. print"
    read = read_facts("Labels of the test split are wrong", body)
    assert read.says_it_fails and E not in read.missing
    assert read.missing == (V, N) and not read.ask  # steps given, nothing printed: enough


def test_an_error_said_but_not_shown_is_asked_for() -> None:
    body = "### Describe the bug\nI keep getting an error about permissions.\n```\nload('x')\n```"
    read = read_facts("cache_dir is ignored", body)
    assert E in read.missing and read.ask


@pytest.mark.parametrize(
    "shown",
    [
        "Traceback (most recent call last):\n  File 'a.py'",
        "KeyError: 'train'",
        "the call fails with `ArrowTypeError: expected int64`",
        "E   AssertionError: assert 1 == 2",
        "error: could not compile",
        "panic: runtime error: index out of range",
        "    at com.example.Widget.open(Widget.java:42)",
    ],
)
def test_each_shape_of_error_output_counts(shown: str) -> None:
    body = f"### Describe the bug\nIt raises.\n{shown}\n\n```\nrun()\n```"
    assert E not in read_facts("open() raises", body).missing


@pytest.mark.parametrize(
    ("fact", "shown"),
    [
        (V, "on version 2.3"),
        (V, "widgets==1.4.0"),
        (V, "installed from main branch"),
        (R, "Steps to reproduce:\n1. open it\n2. click save"),
        (R, "```\nwidget.open()\n```"),
        (N, "on Ubuntu 22.04"),
        (N, "macOS with an M1"),
        (N, "Python 3.10"),
        (N, "Windows 11"),
    ],
)
def test_each_shape_of_a_fact_counts(fact: MissingFact, shown: str) -> None:
    assert fact not in read_facts("It crashes", f"It crashes.\n{shown}").missing


def test_the_request_names_what_is_missing_in_plain_words_and_nothing_of_the_report() -> None:
    secret = "my-internal-hostname.corp"
    read = read_facts("crash", f"It crashes on {secret}.")
    text = request_text(read.missing)
    assert text.startswith("To look into this, it would help to know:")
    assert "the version you are using" in text and "operating system" in text
    assert "full error message or traceback" in text and "code sample" in text
    assert secret not in text
    assert request_text((V,)).count("\n- ") == 1


def test_a_huge_body_of_newlines_and_list_marks_is_read_in_bounded_time() -> None:
    hostile = "\n" * 200_000 + "- \n" * 50_000 + " " * 100_000
    started = time.monotonic()
    read_facts("fails", hostile)
    assert time.monotonic() - started < 5
