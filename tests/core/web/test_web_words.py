"""Plain words (issue 12, item 4): every member of every enum a page shows has its words, no word
is the machine value itself, and dates have one format inside a <time> element."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from resolveflow.domain import vocabulary
from resolveflow.web import filters
from resolveflow.web import words as words_module
from resolveflow.web.words import TABLES, fact_is_good, words


@pytest.mark.parametrize("enum", list(TABLES), ids=lambda enum: enum.__name__)
def test_every_member_of_every_shown_enum_has_plain_words(enum: type) -> None:
    table = TABLES[enum]
    for member in enum:
        assert member in table, f"{enum.__name__}.{member.name} has no words in web/words.py"
        shown = words(member)
        assert shown == table[member] and "_" not in shown
        assert words(member.value, enum.__name__) == shown  # the stored string too


def test_every_enum_of_the_vocabulary_is_covered() -> None:
    from enum import StrEnum

    enums = {
        value
        for value in vars(vocabulary).values()
        if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum
    }
    assert enums <= set(TABLES), enums - set(TABLES)


def test_the_machine_words_of_issue_12_read_as_words() -> None:
    assert words("awaiting_approval", "RunStatus") == "waiting for a decision"
    assert words("not_sent", "ExecutionState") == "not sent (a person confirmed it)"
    assert words("has_failing_ci", "rule") == "CI is failing"
    assert words("policy:docs", "rule") == "policy rule 'docs'"
    assert fact_is_good("is_information_sparse", False) and not fact_is_good("has_failing_ci", True)


def test_one_date_format_in_a_time_element() -> None:
    shown = filters.when("2026-05-01T14:03:09.123+00:00")
    assert shown == (
        '<time datetime="2026-05-01T14:03:09.123000Z" title="2026-05-01 14:03 UTC">'
        "2026-05-01 14:03 UTC</time>"
    )
    assert filters.when(datetime(2026, 5, 1, 14, 3, tzinfo=UTC)).endswith("14:03 UTC</time>")
    assert filters.when(None) == "–"


def test_audit_details_are_label_value_pairs_never_json() -> None:
    items = filters.detail_items({"digest": "ab", "labels": ["bug", "x"], "ok": True, "n": None})
    assert items == [("digest", "ab"), ("labels", "bug, x"), ("ok", "yes"), ("n", "–")]


def test_moments_inside_text_take_the_one_format() -> None:
    reason = "open until 2026-12-07T15:26:37.648828+00:00"
    assert filters.dates_in(reason) == "open until 2026-12-07 15:26 UTC"


def test_a_scored_suggestion_says_its_score_its_band_and_its_floor() -> None:
    like = {
        "kind": "duplicate",
        "detail": "",
        "approved": 14,
        "edited": 2,
        "rejected": 3,
        "decisions": 19,
        "days": 90,
        "score": {
            "value": 0.7234,
            "band": [0.7, 0.8],
            "approved": 4,
            "edited": 1,
            "rejected": 1,
            "floor": 0.42,
        },
    }
    said = words_module.like_this(like)
    assert said.endswith(
        "3 rejected; this one scored 0.72 (0.70-0.80 here: 5 approved, 1 rejected;"
        " made at the floor 0.42)"
    )
    quiet = {**like, "score": {**like["score"], "approved": 0, "edited": 0, "rejected": 0}}
    assert "(0.70-0.80 here: none decided yet;" in words_module.like_this(quiet)
    assert "scored" not in words_module.like_this({**like, "score": None})


def test_an_inbox_row_for_a_short_report_reads_as_one_sentence() -> None:
    """The classification and its rule side by side: "needs more information" because "the
    report is too short to act on", never "investigated" (which says the opposite)."""
    from pathlib import Path

    from jinja2 import Environment, FileSystemLoader

    import resolveflow.web
    from resolveflow.web.markdown import render, reveal

    folder = Path(resolveflow.web.__file__).parent / "templates"
    env = Environment(loader=FileSystemLoader(folder), autoescape=True)
    filters.install(env)
    env.filters.update(markdown=render, reveal=reveal)
    row = {
        "type": "run",
        "run_id": "r1",
        "href": "/runs/r1",
        "target": "acme/widgets#6",
        "kind": "github.issue",
        "classification": "ai_investigation",
        "rule": "is_information_sparse",
        "status": "awaiting_approval",
        "created_at": None,
    }
    shown = env.get_template("_inbox_rows.html").render(heading="Inbox", items=[row])
    cell = shown.split('<span class="tag ai_investigation">', 1)[1].split("</td>", 1)[0]
    assert " ".join(cell.replace("<br>", " ").split()).startswith(
        'needs more information</span> <span class="muted">the report is too short to act on'
    ), cell
    assert "investigated" not in shown
