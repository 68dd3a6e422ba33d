"""How Ask reads a question (the asker's words apart from pasted code, the names it mentions),
the names a page is about, the lexical weight of a long question, and quotes that end on a
sentence. Texts written for these tests."""

from __future__ import annotations

from resolveflow.ask.domain.page_names import name_match, page_names
from resolveflow.ask.domain.question import (
    CODE_NAME_WEIGHT,
    LEXICAL_TERMS,
    lexical_weight,
    read_question,
)
from resolveflow.ask.text import quote

LONG_QUESTION = """Merging two result files

I ran two long jobs and saved each result with save() to its own file.
How can I combine the two files into one, keeping every object of both?

x <- c(1, 2, 3)
y <- aggregate(value ~ group, data = df, FUN = mean)
[1] 1 2 3
> summary(y)
Thanks for any help.
"""


def test_the_askers_sentences_are_apart_from_the_pasted_code_and_output() -> None:
    asked = read_question(LONG_QUESTION)
    assert asked.subject == "Merging two result files"
    assert "How can I combine the two files into one" in asked.own_words
    assert "aggregate" not in asked.own_words and "[1]" not in asked.own_words
    assert "x <- c(1, 2, 3)" in asked.code and "> summary(y)" in asked.code
    # The search runs on the subject and the sentences, not on the code.
    assert asked.search_text.startswith("Merging two result files\nI ran two long jobs")
    assert "aggregate" not in asked.search_text


def test_names_the_asker_writes_weigh_more_than_names_the_code_calls() -> None:
    names = read_question(LONG_QUESTION).names
    assert names["save"] == 1.0  # "saved each result with save()": in a sentence
    assert names["aggregate"] == CODE_NAME_WEIGHT  # only the pasted code calls it
    assert names["summary"] == CODE_NAME_WEIGHT
    quoted = read_question('Why does ?strptime ignore my "tz" and what does base::format do here')
    assert quoted.names["strptime"] == 1.0 and quoted.names["format"] == 1.0


def test_a_question_mark_that_ends_a_word_or_a_line_is_no_help_lookup() -> None:
    # An archive that lost a character writes "ggplot2.?" and the next line starts a sentence.
    lost = read_question("Installing ggplot2.?\nCurrently I am on R 3.4. Is this a bug? Here it is")
    assert not {"currently", "here"} & set(lost.names)
    assert read_question("See (?sum) and ?'Extract'").names.keys() >= {"sum", "extract"}


def test_an_aside_in_parentheses_and_an_abbreviation_are_not_names() -> None:
    asked = read_question(
        "Joining two tables (maybe)?\n\nI wonder (really) how to join them with merge() on two"
        " keys, e.g. the id and the date columns of both data.frame objects."
    )
    assert set(asked.names) == {"merge", "data.frame"}


def test_a_short_question_is_searched_whole() -> None:
    alert = "Clock skew detected. Clock at node-12:9100 is out of sync by more than 0.05s."
    asked = read_question(alert)
    assert asked.subject == "" and asked.search_text == alert
    code_only = read_question("Error in merge(a, b)\n\nmerge(a, b, by = 'id')\nError: x")
    assert code_only.search_text == code_only.text  # too few words of the asker's own


def test_a_long_question_weighs_its_words_less() -> None:
    assert lexical_weight(5, 0.5) == 0.5
    assert lexical_weight(LEXICAL_TERMS, 0.5) == 0.5
    assert lexical_weight(4 * LEXICAL_TERMS, 0.5) == 0.125
    assert lexical_weight(0, 0.5) == 0.5


def test_a_page_is_about_its_file_name_its_title_names_and_its_usage_signatures() -> None:
    head = (
        "| strptime {base} | R Documentation |\n\n## Date-time Conversion\n\n### Usage\n\n"
        '```\nformat(x, format = "", tz = "")\nstrptime(x, format, tz = "")\n```\n\n'
        "### Details\n\n```\nexample_call(1)\n```\n"
    )
    names = page_names("base/strptime.html", "R: Date-time Conversion via as.POSIXlt", head)
    assert {"strptime", "format", "as.posixlt"} <= names
    assert "example_call" not in names  # only the first code block is the page's signature
    assert page_names("commands/npm-publish.md", "npm-publish", "") == {"npm-publish"}
    settings = page_names("using-npm/config.md", "config", "", ["`save-prefix`", "Shorthands"])
    assert settings == {"config", "save-prefix"}  # a settings page names each in a heading
    assert name_match({"strptime": 1.0, "format": 0.3}, names) == ("strptime", 1.0)
    assert name_match({"format": 0.3}, names) == ("format", 0.3)
    assert name_match({"merge": 1.0}, names) == ("", 0.0)


def test_a_long_quote_ends_on_a_whole_sentence_and_closes_its_code_fence() -> None:
    text = "First sentence here. " * 20 + "A last one that runs past the limit and is cut."
    quoted = quote(text, limit=200)
    assert quoted.endswith("here. …") and len(quoted) <= 200
    fenced = "Run this:\n\n```\n" + "line of code\n" * 40 + "```\n"
    cut = quote(fenced, limit=120)
    # "``` …" on one line would not close the fence: the ellipsis is a paragraph after it.
    assert cut.count("```") == 2 and cut.endswith("```\n\n…")
    assert quote("Short.") == "Short."
