"""A question as Ask reads it: the asker's own words apart from pasted code and output, and the
names it mentions. Pure.

Questions sent to a help desk or a mailing list are long: a subject, a few sentences, then the
code that failed and what the console printed. The embedder reads 128 tokens, and the full-text
branch keeps the question's rarest terms, which in pasted code are variable names: both then
match on noise. So the search runs on the subject and the asker's sentences, and the code only
contributes the names it calls (``sum(``, ``pkg::fun``, ``?topic``), weighed below the names the
asker writes in prose, since a help page is about a function the asker names, not about every
function the script happens to call. A short question (a sentence, an alert's summary) has no
code and is searched whole. Nothing here depends on the corpus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

# An identifier: a letter, then letters, digits, dots or underscores (R's ``read.csv``, Python's
# ``os.path.join``, a setting ``save_prefix``).
_IDENT = r"[A-Za-z][A-Za-z0-9_.]*[A-Za-z0-9_]"
_CALL = re.compile(r"(?<![\w.$@])(" + _IDENT + r")\s*\(")
# In a sentence a call has no space before its parenthesis: "a word (an aside)" is prose.
_PROSE_CALL = re.compile(r"(?<![\w.$@])(" + _IDENT + r")\(")
# "e.g", "i.e": dotted single letters are abbreviations, not names.
_ABBREVIATION = re.compile(r"^(?:[a-z]\.)+[a-z]?$")
# R's ``?topic``: the mark starts a token and the name follows it at once. A "?" that ends a
# word or a sentence ("ggplot2.?" where an archive lost a character, "a bug? Here") is not one.
_HELP = re.compile(r"(?:^|(?<=[\s(\[,;]))\?\"?(" + _IDENT + r")", re.M)
_NAMESPACED = re.compile(r"\b" + _IDENT + r"::+(" + _IDENT + r")")
_QUOTED = re.compile(r"[\"'`‘“](" + _IDENT + r")(?:\(\))?[\"'`’”]")
# A word the asker wrote that reads as a name: dotted, snake_case or camelCase (kebab-case too
# cost a dev question on R's pages: prose hyphenates ordinary words).
_NAMELIKE = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+|[a-z]+[A-Z]\w*)")
_PROSE_WORD = re.compile(r"^[A-Za-z][A-Za-z'’-]*[,.;:!?)]?$")
_CODE_MARK = re.compile(r"<-|->|==|!=|%>%|\[\d+\]|^\s*[>+$#]\s|[{};]\s*$|\w\(|\$\w|::|=\s*\S")
_WORD = re.compile(r"[A-Za-z0-9]{2,}")
SUBJECT_CHARS = 150
CODE_NAME_WEIGHT = 0.3  # a name only the pasted code calls, against 1.0 for one the asker writes
# Below this many words of their own, the asker's sentences are too few to search on alone.
MIN_OWN_WORDS = 6
# The full-text branch's weight falls as 1/n past this many distinct terms (answering.py).
LEXICAL_TERMS = 15


@dataclass(frozen=True)
class AskedQuestion:
    text: str  # the question as asked
    subject: str  # the first line, when it stands alone above a blank line ("" otherwise)
    own_words: str  # the asker's sentences (code, console output and short lines left out)
    code: str  # the rest

    # Derived once: ranking reads them for every retrieved document.
    @cached_property
    def names(self) -> dict[str, float]:
        """Lowercase name -> weight (``mentioned_names``)."""
        return mentioned_names(self)

    @cached_property
    def search_text(self) -> str:
        """What the search runs on: the subject and the asker's words, or the whole question
        when the asker wrote too few words of their own."""
        own = "\n".join(part for part in (self.subject, self.own_words) if part)
        if len(_WORD.findall(self.own_words)) < MIN_OWN_WORDS:
            return self.text
        return own

    @cached_property
    def term_count(self) -> int:
        """Distinct words of the search text (two characters or more)."""
        return len({w.lower() for w in _WORD.findall(self.search_text)})


def prose_line(line: str) -> bool:
    """Whether a line reads as a sentence of the asker's: mostly plain words, at least three;
    a line with code in it must be mostly words and at least five."""
    tokens = line.split()
    words = sum(1 for token in tokens if _PROSE_WORD.match(token))
    if words < 3:
        return False
    share = words / len(tokens)
    if _CODE_MARK.search(line):
        return share >= 0.75 and words >= 5
    return share >= 0.6


def read_question(text: str) -> AskedQuestion:
    lines = text.strip().splitlines()
    subject = ""
    body = lines
    if len(lines) > 2 and not lines[1].strip() and len(lines[0]) <= SUBJECT_CHARS:
        subject, body = lines[0].strip(), lines[2:]
    own = [line.strip() for line in body if prose_line(line)]
    code = [line for line in body if line.strip() and not prose_line(line)]
    return AskedQuestion(text.strip(), subject, "\n".join(own), "\n".join(code))


def mentioned_names(asked: AskedQuestion) -> dict[str, float]:
    """The names the question mentions, each with its weight: 1.0 when the asker writes it (a
    call, ``?topic``, ``pkg::fun``, a quoted or dotted name in a sentence or the subject),
    ``CODE_NAME_WEIGHT`` when only the pasted code calls it."""
    weights: dict[str, float] = {}

    def add(text: str, weight: float, patterns: tuple[re.Pattern[str], ...]) -> None:
        for pattern in patterns:
            for match in pattern.finditer(text):
                name = match.group(1).lower().rstrip(".")
                if not _ABBREVIATION.match(name):
                    weights[name] = max(weights.get(name, 0.0), weight)

    own = f"{asked.subject}\n{asked.own_words}"
    add(own, 1.0, (_PROSE_CALL, _HELP, _NAMESPACED, _QUOTED, _NAMELIKE))
    if not asked.subject and not asked.own_words:
        add(asked.text, 1.0, (_CALL, _HELP, _NAMESPACED, _QUOTED))
    add(asked.code, CODE_NAME_WEIGHT, (_CALL, _HELP, _NAMESPACED))
    return weights


def lexical_weight(term_count: int, full: float) -> float:
    """The full-text branch's share of a document's rank score for a question of
    ``term_count`` distinct words: ``full`` up to ``LEXICAL_TERMS`` words, then falling as
    1/n. A document that holds the rarest words of a long question is weak evidence (any page
    holds a few of forty words); one that holds those of a one-line question is strong."""
    return full * min(1.0, LEXICAL_TERMS / max(term_count, 1))
