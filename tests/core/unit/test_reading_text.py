"""A document's Markdown read outside a renderer (``domain/reading_text.py``): links as their
text, escapes undone, code kept, tables found and laid out for a terminal of 80 columns or
flattened for a one-line quote."""

from __future__ import annotations

from resolveflow.domain.reading_text import Table, blocks, code_spans, flat, for_terminal, plain

TABLE = (
    "Format codes:\n\n"
    "| Directive | Meaning |\n| --- | --- |\n"
    "| `%a` | Weekday as a name. |\n| `%d` | Day \\| zero-padded. |\n\n"
    "See [the guide](guide.html) [1]"
)


def test_a_link_is_its_text_an_escape_its_character_and_code_stays_as_written() -> None:
    assert plain('[RFC 4180](https://x.org/rfc "t") and \\*args') == "RFC 4180 and *args"
    assert plain("see `a\\*b` [1]") == "see `a\\*b` [1]"  # code as written; citations kept


def test_a_pipe_table_is_found_with_its_header_and_rows() -> None:
    found = blocks(TABLE)
    assert found[0] == "Format codes:\n"
    assert found[1] == Table(
        ("Directive", "Meaning"), (("`%a`", "Weekday as a name."), ("`%d`", "Day | zero-padded."))
    )
    assert found[2] == "\nSee [the guide](guide.html) [1]"


def test_rows_cut_from_their_header_are_still_a_table_and_a_lone_pipe_line_is_prose() -> None:
    assert blocks("| a | b |\n| c | d |") == [Table(None, (("a", "b"), ("c", "d")))]
    assert blocks("| not a table") == ["| not a table"]
    assert blocks("```\n| in | code |\n| --- | --- |\n```") == [
        "```\n| in | code |\n| --- | --- |\n```"
    ]


def test_a_terminal_shows_a_narrow_table_aligned_under_a_rule() -> None:
    text = for_terminal(TABLE, 80)
    assert text.splitlines() == [
        "Format codes:",
        "",
        "Directive  Meaning",
        "---------  ------------------",
        "`%a`       Weekday as a name.",
        "`%d`       Day | zero-padded.",
        "",
        "See the guide [1]",
    ]


def test_a_terminal_shows_a_wide_table_as_clean_pipe_rows_within_80_columns() -> None:
    wide = "| name | what |\n| --- | --- |\n| `x` | " + "long words " * 10 + "|"
    lines = for_terminal(wide, 80).splitlines()
    assert lines[0] == "name | what"
    assert lines[1].startswith("`x` | long words") and "---" not in "".join(lines)


def test_a_one_line_quote_has_the_table_s_rows_as_text() -> None:
    assert " ".join(flat(TABLE).split()) == (
        "Format codes: Directive | Meaning; `%a` | Weekday as a name.; "
        "`%d` | Day | zero-padded. See the guide [1]"
    )


def test_code_spans_are_pieces_of_their_own() -> None:
    assert code_spans("call `f(*, x)` or `` a`b `` now") == [
        ("call ", False),
        ("f(*, x)", True),
        (" or ", False),
        ("a`b", True),
        (" now", False),
    ]
