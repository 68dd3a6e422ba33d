"""The documentation that answers a question-like issue (pure): which issues ask a question, and
the part made of what the tenant's documents answer, cited, or nothing.

An issue is question-like when its own words ask something: its title asks (a question mark, or
an opening such as "how do I", "is it possible", "can I"), or it says it is a question ("Question:",
"[Question]"). A report that something fails is no question, however it is worded ("How do I fix
this error?" wants a fix, not a page): one that ``missing_facts.read_facts`` reads as a failure,
one whose title names a failure, or one that pastes a traceback. Only a question-like issue is
asked of the documents, so a failure report never gets a page quoted at it as if it answered.

The answer comes from Ask (wired in ``bootstrap/``), over the tenant's documentation, with Ask's
own answerability rule and calibration: a part is kept only when Ask answers, citing at least one
passage, at or above its calibrated floor. Everything shown is escaped (``inert_markdown``); a
page is linked only by a safe URL, and otherwise named by its title and path; a quote reads as
its page does (``reading_text``: a link is its text, a table's rows are text, code is code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from resolveflow.domain.inert_markdown import code, inert, inert_spans, safe_url
from resolveflow.domain.reading_text import code_spans, flat
from resolveflow.triage.domain.missing_facts import READ_CHARS, names_a_failure, read_facts
from resolveflow.triage.domain.parts import Part, PartItem, PartName, left_out

NOT_A_QUESTION = "not a question"
NO_ANSWER = "no document answers it"
SHOWN_PASSAGES = 3  # quoted in the comment; every cited document is an item
QUOTE_CHARS = 300
TITLE_CHARS = 120

_ASKS = re.compile(
    r"^\s*(\[?question\]?\s*[:\]-]|how (do|can|should|would) (i|we|you|one)\b|how to\b|"
    r"is (it|there) (possible|a way|any way|an? (option|way))\b|(can|could|should|may) (i|we)\b|"
    r"what('s| is| are) the (best|right|recommended|correct) way\b|"
    r"(is|are|does|do) \S+( \S+)? (support(ed)?|available)\b)",
    re.IGNORECASE,
)
_QUESTION_TEMPLATE = re.compile(
    r"^[ \t]*(#+[ \t]*|\*\*)?(question|your question|my question)\b", re.IGNORECASE | re.MULTILINE
)
_ASKED = re.compile(r"\?(\s|$)")  # a question mark that ends a sentence, not a URL's query
_ERROR_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception)\b")  # ConnectionError, OSError
_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\)|^[ \t]*File \"[^\"\n]+\", line \d+|"
    r"^[ \t]*\w+(Error|Exception)\b: ",
    re.MULTILINE,
)


def question_like(title: str, body: str) -> bool:
    """Whether the issue asks a question (module docstring), from its own words only."""
    body = body[:READ_CHARS]
    if names_a_failure(title) or _ERROR_NAME.search(title) or _TRACEBACK.search(body):
        return False
    if read_facts(title, body).says_it_fails:
        return False
    asks = _ASKED.search(title) or _ASKS.search(title) or _QUESTION_TEMPLATE.search(body)
    return bool(asks)


@dataclass(frozen=True)
class DocsPassage:
    """One cited passage, as the documents hold it (titles, paths and quotes come from the
    index, never from a model)."""

    title: str
    path: str  # the document's id in its source (a docs folder: its path in the folder)
    url: str | None
    section: str  # the heading of the quoted section, "" when none
    quote: str
    score: float | None  # the document's rank for the question; None: quoted, not ranked


@dataclass(frozen=True)
class DocsAnswer:
    """What the documents say to one question: the cited passages (none unless the answerer
    answers), the top page's closeness on the tenant's calibrated scale, and the least of it
    at which the answerer answers at all."""

    score: float
    floor: float
    passages: tuple[DocsPassage, ...] = ()


def docs_part(question: bool, answer: DocsAnswer | None) -> Part:
    """The cited pages that answer a question-like issue, or why there are none."""
    if not question:
        return left_out(PartName.DOCS, NOT_A_QUESTION)
    if answer is None:
        return left_out(PartName.DOCS, NO_ANSWER)
    # Ask's relation places the top page between the index's own "unrelated" (0) and "related"
    # (1) points and may fall outside them; a part's score is on [0, 1] like every other (its
    # band, its stored column), and beyond the points nothing more is said.
    score = round(min(1.0, max(0.0, answer.score)), 3)
    if not answer.passages or answer.score < answer.floor:
        return left_out(PartName.DOCS, NO_ANSWER, score, answer.floor)
    cited: dict[str, list[DocsPassage]] = {}
    for passage in answer.passages:
        cited.setdefault(passage.path, []).append(passage)
    items = tuple(
        PartItem(path, _rounded(found[0].score), _sections(found)) for path, found in cited.items()
    )
    return Part(PartName.DOCS, score, answer.floor, items, docs_paragraph(answer.passages))


def docs_paragraph(passages: tuple[DocsPassage, ...]) -> str:
    """The pages that answer it, each linked (a safe URL only) or named, with its quote."""
    lines = ["The project's documentation may answer this:", ""]
    for passage in passages[:SHOWN_PASSAGES]:
        title = inert(passage.title or passage.path, TITLE_CHARS)
        url = safe_url(passage.url)
        page = f"[{title}]({url})" if url else f"{title} ({code(passage.path)})"
        section = f", “{inert(passage.section, TITLE_CHARS)}”" if passage.section else ""
        lines.append(f"- {page}{section}: {_quoted(passage.quote)}")
    return "\n".join(lines)


def _quoted(quote: str) -> str:
    """A quote on its line, as the page reads: links as their text, code spans as code, a
    table's rows as ``cell | cell`` text (a Markdown table cannot sit in a list item's line,
    and its pipes would have to be live markup), everything else inert."""
    return inert_spans(code_spans(flat(quote)), QUOTE_CHARS)


def _sections(passages: list[DocsPassage]) -> str:
    named = [p.section for p in passages if p.section]
    return "quoted: " + ", ".join(dict.fromkeys(named)) if named else "quoted"


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(score, 4)
