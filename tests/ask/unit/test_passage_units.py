"""A reference page's definitions become passages of their own, under their heading path
(retrieval/html_text.py, ask/text.py), and a quoted passage must hold what is asked
(AnswerabilityRule.holds)."""

from __future__ import annotations

from pathlib import Path

from resolveflow.ask.choice import PassageScore, ScoredUnit, close_runner_up, heading_name
from resolveflow.ask.domain.answers import AnswerabilityRule, AnswerFeatures
from resolveflow.ask.text import Unit, units, within_page
from resolveflow.retrieval.document_bounds import TextLimits
from resolveflow.retrieval.html_text import html_text

CSV_PAGE = Path(__file__).parents[2] / "data" / "library-mini" / "corpus" / "library" / "csv.html"

OPTIONS = b"""<html><body><main><h1>tool-build(1)</h1><h2>OPTIONS</h2>
<dl>
<dt class="option-term" id="option-p"><a href="#option-p"><code>-p</code> <em>spec</em></a></dt>
<dt class="option-term" id="option-package"><a href="#option-package"><code>--package</code></a></dt>
<dd><p>Build only the named packages.</p></dd>
<dt class="option-term" id="option-release"><a href="#option-release"><code>--release</code></a></dt>
<dd><p>Build with optimizations.</p></dd>
</dl>
<h2>GLOSSARY</h2><dl><dt>term</dt><dd>a plain list without anchors stays a list</dd></dl>
</main></body></html>"""


def _units(data: bytes) -> list[Unit]:
    return units(html_text("page.html", data, TextLimits())[1])


def test_a_sphinx_definition_is_a_passage_under_its_heading_path() -> None:
    found = {u.heading: u.text for u in _units(CSV_PAGE.read_bytes())}
    path = "`csv` — CSV File Reading and Writing › Module Contents › csv.DictReader"
    assert path in found
    # The signature first (one code span, as the page shows it), then the description and its
    # example: one passage.
    text = found[path]
    assert text.startswith("`class csv.DictReader(f, fieldnames=None")
    assert "keyed by column name" in text and "csv.DictReader(handle)" in text
    # A method's definition nested in its class's sits one level below it.
    nested = "`csv` — CSV File Reading and Writing › Module Contents › csv.writer"
    assert f"{nested} › csv.csvwriter.writerow" in found
    assert "csv.Dialect" in [h.rsplit(" › ", 1)[-1] for h in found]


def test_a_commands_options_are_passages_named_by_the_option() -> None:
    found = {u.heading: u.text for u in _units(OPTIONS)}
    assert found["tool-build(1) › OPTIONS › -p spec, --package"] == (
        "Build only the named packages."
    )
    assert found["tool-build(1) › OPTIONS › --release"] == "Build with optimizations."
    assert found["tool-build(1) › GLOSSARY"].startswith("term\n:")  # no anchors: a list


def test_long_sections_are_cut_between_paragraphs_keeping_code_with_its_sentence() -> None:
    body = "# T\n\n" + "A sentence of words. " * 20 + "\n\nRun this:\n\n```\nx = 1\n```\n"
    pieces = units(body, limit=200)
    assert pieces[-1].text.startswith("Run this:") and pieces[-1].text.endswith("```")
    assert all(p.path == ("T",) for p in pieces)


def test_a_citation_names_the_passage_within_its_page_not_the_title_again() -> None:
    assert within_page(("TargetDown", "Diagnosis"), "TargetDown") == "Diagnosis"
    path = ("`csv` — CSV File Reading", "Module Contents", "csv.reader")
    assert within_page(path, "csv — CSV File Reading") == "Module Contents › csv.reader"
    assert within_page(("Setup", "Proxy"), "Install guide") == "Setup › Proxy"


def test_a_heading_gives_a_questions_name() -> None:
    assert heading_name({"dictreader": 1.0}, "csv.DictReader") == 1.0
    assert heading_name({"dictreader": 1.0}, "csv.DictWriter") == 0.0


def test_a_runner_up_passage_is_another_section_scoring_close() -> None:
    def scored(page: int, path: str, score: float) -> tuple[int, ScoredUnit]:
        return page, ScoredUnit(Unit((path,), "text"), PassageScore(score, score, 0.0, 0.0))

    same = [scored(0, "A", 1.0), scored(0, "A", 0.99), scored(0, "B", 0.85)]
    assert close_runner_up(same, 0.8) == same[2]
    # The same heading on another page is another section.
    other = [scored(0, "A", 1.0), scored(1, "A", 0.9)]
    assert close_runner_up(other, 0.8) == other[1]
    assert close_runner_up([scored(0, "A", 1.0), scored(0, "B", 0.7)], 0.8) is None


def test_an_answer_needs_a_quoted_passage_that_holds_what_is_asked() -> None:
    rule = AnswerabilityRule()
    base = AnswerFeatures(
        top_cosine=0.6, top_score=0.9, margin=0.1, term_coverage=1.0, title_coverage=0.0
    )
    assert not rule.holds(base)  # the page holds every word; no quoted passage holds them
    # Words alone hold nothing: the passage must also be closer than off-topic questions get.
    assert not rule.holds(base.model_copy(update={"passage_coverage": 0.6}))
    held = {"passage_coverage": 0.35, "passage_relation": 0.35}
    assert rule.holds(base.model_copy(update=held))
    assert not rule.holds(base.model_copy(update={**held, "passage_relation": 0.2}))
    assert rule.holds(base.model_copy(update={"passage_name": 1.0}))
    assert rule.holds(base.model_copy(update={"passage_relation": 1.0}))


def test_a_long_question_naming_what_its_page_is_about_keeps_its_answer() -> None:
    """An R-help question: sixty words of its own, pasted code, and a function the page is
    about. Any passage holds few of its words and sits far in meaning; the name is what holds."""
    long = AnswerFeatures(
        top_cosine=0.45, top_score=0.8, margin=0.05, term_coverage=0.3, title_coverage=0.0,
        relation=0.5, question_words=60, known_names=2, passage_coverage=0.12,
        passage_relation=0.15,
    )  # fmt: skip
    rule = AnswerabilityRule()
    assert not rule.holds(long)
    assert rule.holds(long.model_copy(update={"name_match": 1.0}))
    assert rule.holds(long.model_copy(update={"title_coverage": 1.0}))
    assert rule.holds(long.model_copy(update={"passage_name": 1.0}))
