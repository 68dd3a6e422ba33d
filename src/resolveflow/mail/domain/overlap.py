"""How much of one reply another says: the token F1 of ``eval drafts``.

Each text is the set of its content words (``words.content_words``: lower case, plurals folded,
function words left out, ``[[...]]`` placeholders left out: they say nothing to the recipient).
Precision is the share of the candidate's words that the real reply has, recall the share of the
real reply's words the candidate has, F1 their harmonic mean; 0 when either text has no word.
A set, not a bag: a reply is not better for repeating a word.
"""

from __future__ import annotations

from resolveflow.mail.domain.entities import PLACEHOLDER
from resolveflow.mail.domain.words import content_words


def reply_words(text: str) -> frozenset[str]:
    return content_words(PLACEHOLDER.sub(" ", text))


def token_f1(candidate: frozenset[str], real: frozenset[str]) -> float:
    shared = len(candidate & real)
    if not shared:
        return 0.0
    precision, recall = shared / len(candidate), shared / len(real)
    return 2 * precision * recall / (precision + recall)
