"""Words of a message as the drafting measures and checks see them: lower case, a plural's "s"
taken off, and English function words set apart.

The function words are a closed grammatical class (articles, pronouns, prepositions,
conjunctions, auxiliaries and a few adverbs of degree and time), the same in any English mailbox:
they carry no fact of a case, so the fit check never names one and the token F1 of ``eval drafts``
leaves them out (with them, any two replies share a third of their words). The list is not fitted
to any corpus; what is generic *in one mailbox* ("order", "refund", "package") is told by how
often the mailbox's own exchanges use a word (``example_fit.Vocabulary``), not by a list.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")

_FUNCTION_WORDS = """
    a about above after again against all almost along already also although always am among an
    and another any anybody anyone anything anyway anywhere are around as at be became because
    become been before being below beside besides between beyond both but by can cannot could
    did do does doing done down during each either else enough etc even ever every everybody
    everyone everything everywhere few for from further had has have having he her here hers
    herself him himself his how however i if in into is it its itself just least less many may
    me might mine more most much must my myself neither never nevertheless no nobody none nor not
    nothing now nowhere of off often on once one only onto or other others otherwise our ours
    ourselves out over own perhaps quite rather really same shall she should since so some
    somebody someone something sometimes somewhat somewhere still such than that the their
    theirs them themselves then there therefore these they this those though through thus to
    together too toward towards under unless until up upon us very via was we well were what
    whatever when whenever where whereas wherever whether which while who whoever whole whom
    whose why will with within without would yet you your yours yourself yourselves
    s t d ll m re ve don doesn didn isn aren wasn weren won wouldn shouldn couldn can't don't
    i'm i've i'd i'll you're you've you'd you'll he's she's it's we're we've we'd we'll they're
    they've they'd they'll that's there's here's what's who's let's isn't aren't wasn't weren't
    doesn't didn't won't wouldn't shouldn't couldn't hasn't haven't hadn't mustn't
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())


def words(text: str) -> Iterator[tuple[str, int, int]]:
    """Each word of ``text`` as written, with its span (letters and digits; "don't" is one)."""
    for match in _WORD.finditer(text):
        yield match.group(), match.start(), match.end()


def normal(word: str) -> str:
    """The form two spellings of one word share: lower case, no possessive, no plural "s"
    ("Mugs", "mug's" and "mug" are one word; "boxes" and "box"; "batteries" and "battery")."""
    w = word.lower().replace("’", "'")
    w = w.removesuffix("'s")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and (w.endswith(("xes", "zes", "sses", "shes", "ches"))):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def is_function_word(word: str) -> bool:
    return word.lower().replace("’", "'") in FUNCTION_WORDS


def content_words(text: str) -> frozenset[str]:
    """The distinct content words of ``text``, normalised: what the token F1 compares."""
    return frozenset(normal(w) for w, _, _ in words(text) if not is_function_word(w))
