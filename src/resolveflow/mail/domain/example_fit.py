"""Whether a reused past reply fits the new request: the facts of the past case a draft still
carries ("No need to send the mug back" to someone whose bowl arrived cracked).

A draft built on a past reply (reused word for word, or written by a model or a person who saw
it) may keep what belonged to that case. The signal is the same in any mailbox and needs no list
of products: a specific the past request and its reply both name was a fact of that case; if the
draft still says it and neither the new request nor the staff's facts (nor the mailbox's own
greeting and signature) do, it does not fit. Specifics are:

- words: product and item nouns (a word the past case used in a noun phrase, "the mug",
  "2 plates"), names (capitalised inside a sentence) and identifiers ("ggplot2"), less the
  function words (``words.FUNCTION_WORDS``) and less the mailbox's everyday vocabulary: a word
  that many of the mailbox's *other* exchanges use ("order", "refund", "package") says nothing
  about one case (``Vocabulary``, counted by the service in the mailbox's index);
- numbers, and the amounts, dates, percentages, order (ticket, ...) numbers, links and
  addresses of ``entities`` (which the invented-commitment check also refuses: here they are
  named with what the new request has instead).

Each misfit says what the new request has in its place when one word there stands where the old
one stood in the past request ("my mug arrived" / "my bowl arrived"): "the reply mentions 'mug';
the request is about 'bowl'". Pure: the caller supplies the examples and the counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from resolveflow.mail.domain.entities import (
    PLACEHOLDER,
    Entity,
    EntityKind,
    allowed_keys,
    extract,
    is_allowed,
)
from resolveflow.mail.domain.message import MailExample
from resolveflow.mail.domain.words import is_function_word, normal, words

# A word that at least this share of the mailbox's other exchanges use is its everyday
# vocabulary, not a fact of one case. A judgment: one exchange in ten is "often" for a word in a
# mailbox of any size, and it is only asked of words both the past request and its reply use.
EVERYDAY_SHARE = 0.10
MAX_NAMED = 8  # misfits named one by one; the rest are listed in one more finding
MAX_WEIGHED = 64  # words whose counts the service looks up for one draft
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?(?![\w]|[.,]\d)")


class FitKind(StrEnum):
    WORD = "word"
    NAME = "name"
    NUMBER = "number"
    SPECIFIC = "specific"  # an amount, date, percentage, reference, link or address


@dataclass(frozen=True)
class Vocabulary:
    """How many of the mailbox's exchanges use each word (by ``words.normal`` form); ``common``
    are words the index does not count at all (its own stop words)."""

    exchanges: int = 0
    documents: Mapping[str, int] = field(default_factory=dict)
    common: frozenset[str] = frozenset()

    @classmethod
    def of_texts(cls, exchanges: Sequence[str]) -> Vocabulary:
        """Counted here from each exchange's whole text (tests, and callers without an index)."""
        counts: dict[str, int] = {}
        for text in exchanges:
            for word in _normals([text]):
                counts[word] = counts.get(word, 0) + 1
        return cls(len(exchanges), counts)

    def everyday(self, word: str) -> bool:
        """Used by ``EVERYDAY_SHARE`` of the exchanges besides the one the draft reuses (which
        uses it by construction)."""
        if word in self.common:
            return True
        others = self.exchanges - 1
        if others <= 0:
            return False
        return (self.documents.get(word, 0) - 1) / others >= EVERYDAY_SHARE


@dataclass(frozen=True)
class Misfit:
    """A specific of a past case that the draft still says; ``instead`` is what the new request
    has in its place, when that can be told."""

    kind: FitKind
    text: str  # as the draft writes it
    key: str  # its normal form (an entity's key for a specific)
    instead: str | None = None
    label: str = ""  # "order", "ticket", ... for a reference; "the date", ... for a specific

    def message(self) -> str:
        what = {
            FitKind.WORD: repr(self.text),
            FitKind.NAME: f"the name {self.text!r}",
            FitKind.NUMBER: f"the number {self.text!r}",
            FitKind.SPECIFIC: f"{self.label} {self.text!r}".strip(),
        }[self.kind]
        said = f"the reply mentions {what}, a fact of the past case it was reused from"
        if self.instead is None:
            return f"{said}; the request does not mention it: correct it or remove it"
        where = "from" if self.kind is FitKind.NAME else "about"
        return f"{said}; the request is {where} {self.instead!r}: correct it or remove it"


@dataclass(frozen=True)
class _Case:
    """The words and specifics of the texts that decide: the past cases' and the new one's."""

    old_request: frozenset[str]
    old_reply: frozenset[str]
    supported: frozenset[str]
    old_keys: frozenset[str]
    new_keys: frozenset[str]
    nouns: frozenset[str]  # words the past case used as things ("the mug", "2 plates")


def _without_links(text: str) -> str:
    """``text`` with its links and e-mail addresses blanked: their pieces ("pottery" of
    https://pottery.example) are no words of the text (a link is weighed whole, as a specific)."""
    chars = list(text)
    for e in extract(text):
        if e.kind in (EntityKind.URL, EntityKind.EMAIL):
            chars[e.start : e.end] = " " * (e.end - e.start)
    return "".join(chars)


def _normals(texts: Iterable[str]) -> frozenset[str]:
    found: set[str] = set()
    for text in map(_without_links, texts):
        found |= {normal(w) for w, _, _ in words(text)}
        found |= {_number_key(m.group()) for m in _NUMBER.finditer(text)}
    return frozenset(found)


def _number_key(number: str) -> str:
    return number.replace(",", ".")


def _case(examples: Sequence[MailExample], supported: Sequence[str]) -> _Case:
    requests = [f"{e.subject}\n{e.request_text}" for e in examples]
    return _Case(
        old_request=_normals(requests),
        old_reply=_normals(e.reply_text for e in examples),
        supported=_normals(supported),
        old_keys=allowed_keys(requests),
        new_keys=allowed_keys(supported),
        nouns=_nouns([*requests, *(e.reply_text for e in examples)]),
    )


# Words that open a noun phrase: what follows them (within two more words) is a thing, not a
# verb or an adverb. A closed grammatical class, like the function words.
_DETERMINER_WORDS = """
    a an the my your our his her their its this that these those some any no each every another
    both either neither such which what whose
"""
_DETERMINERS = frozenset(_DETERMINER_WORDS.split())
_PHRASE_WORDS = 3  # a determiner, up to two modifiers, the noun


def _nouns(texts: Iterable[str]) -> frozenset[str]:
    """The words of ``texts`` that stand in a noun phrase: after a determiner or a number with at
    most two content words between ("my new mug", "the 2 plates"), or as an identifier with
    letters and digits ("ggplot2")."""
    found: set[str] = set()
    for text in map(_without_links, texts):
        tokens = [w for w, _, _ in words(text)]
        for i, token in enumerate(tokens):
            if any(c.isdigit() for c in token) and not token.isdigit():
                found.add(normal(token))
            for back in range(1, _PHRASE_WORDS + 1):
                if i - back < 0:
                    break
                before = tokens[i - back]
                if before.lower() in _DETERMINERS or before.isdigit():
                    found.add(normal(token))
                    break
                if is_function_word(before):
                    break
    return frozenset(found)


def _masked(text: str) -> tuple[str, list[Entity]]:
    """``text`` with placeholders and entities blanked (they are weighed apart), and those
    entities."""
    found = extract(text)
    spans = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)]
    spans += [(e.start, e.end) for e in found]
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars), found


@dataclass(frozen=True)
class _Candidate:
    kind: FitKind
    text: str
    key: str
    start: int


def _candidates(
    text: str, case: _Case, carried: str | None
) -> tuple[list[_Candidate], list[Entity]]:
    """Words and numbers of ``text`` that both the past request and its reply use and the new
    request does not, first occurrence each (of those ``carried`` has, when given); and the
    entities of ``text`` (idem)."""
    masked, entities = _masked(text)
    if carried is not None:
        kept = _normals([carried])
        held = allowed_keys([carried])
        case = replace(case, old_request=case.old_request & kept)
        entities = [e for e in entities if is_allowed(e, held)]
    found: dict[str, _Candidate] = {}
    numbers = list(_NUMBER.finditer(masked))
    for match in numbers:
        key = _number_key(match.group())
        if key in case.old_request and key in case.old_reply and key not in case.supported:
            found.setdefault(key, _Candidate(FitKind.NUMBER, match.group(), key, match.start()))
    for word, start, _ in words(masked):
        key = normal(word)
        if word.isdigit() or len(key) < 2 or is_function_word(word):
            continue
        if key not in case.old_request or key not in case.old_reply or key in case.supported:
            continue
        named = word[0].isupper() and not _starts_sentence(masked, start)
        if not named and key not in case.nouns:
            continue  # a verb or an adverb of the past reply ("defined", "sufficiently")
        seen = found.get(key)
        if seen is None:
            found[key] = _Candidate(FitKind.NAME if named else FitKind.WORD, word, key, start)
        elif named and seen.kind is FitKind.WORD:
            found[key] = _Candidate(FitKind.NAME, seen.text, key, seen.start)
    return sorted(found.values(), key=lambda c: c.start), entities


def _starts_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t*>-•")
    return not before or before[-1] in ".!?:;\n\"'(["


def words_to_weigh(
    text: str,
    examples: Sequence[MailExample],
    request: str,
    supported: Sequence[str] = (),
    carried: str | None = None,
) -> tuple[str, ...]:
    """The words of ``text`` whose counts in the mailbox decide whether they are misfits (at most
    ``MAX_WEIGHED``, in the draft's order): the service looks them up, then calls ``misfits``."""
    if not examples:
        return ()
    candidates, _ = _candidates(text, _case(examples, [request, *supported]), carried)
    return tuple(c.key for c in candidates)[:MAX_WEIGHED]


def misfits(
    text: str,
    examples: Sequence[MailExample],
    request: str,
    supported: Sequence[str],
    vocabulary: Vocabulary,
    carried: str | None = None,
) -> list[Misfit]:
    """The past cases' specifics in ``text`` (a draft's body) that neither ``request`` (the new
    request's subject and text) nor ``supported`` (the facts, the mailbox's greeting and
    signature, the participants) supports, in the draft's order. ``carried``: the text ``text``
    was edited from (a reviewer's edit); only what it still carries of that text is named."""
    if not examples:
        return []
    case = _case(examples, [request, *supported])
    candidates, entities = _candidates(text, case, carried)
    new_text = request
    found: list[tuple[int, Misfit]] = []
    for c in candidates[:MAX_WEIGHED]:
        if vocabulary.everyday(c.key):
            continue
        instead = _aligned(c.key, examples, new_text, case)
        if instead is not None and c.kind is FitKind.NAME and not instead[0].isupper():
            instead = None  # a name stands for a name
        found.append((c.start, Misfit(c.kind, c.text, c.key, instead)))
    found += [(e.start, m) for e in entities if (m := _entity_misfit(e, case, new_text))]
    return [m for _, m in sorted(found, key=lambda pair: pair[0])]


_SPECIFIC_WORDS = {
    "amount": "the amount",
    "date": "the date",
    "percentage": "the percentage",
    "url": "the link",
    "email": "the e-mail address",
}


def _entity_misfit(entity: Entity, case: _Case, new_text: str) -> Misfit | None:
    """An amount, date, number, link or address of the past request that the new one lacks."""
    if is_allowed(entity, case.new_keys) or not is_allowed(entity, case.old_keys):
        return None
    label = entity.label or _SPECIFIC_WORDS.get(str(entity.kind), "the number")
    same = [
        e
        for e in extract(new_text)
        if e.kind is entity.kind and (not entity.label or e.label == entity.label)
    ]
    instead = same[0].text if same else None
    return Misfit(FitKind.SPECIFIC, entity.text, entity.key, instead, label)


def _neighbours(text: str) -> dict[str, set[tuple[int, str]]]:
    """Each word's neighbours in ``text``: (-1, the word before) and (1, the word after)."""
    tokens = [normal(w) for w, _, _ in words(text)]
    found: dict[str, set[tuple[int, str]]] = {}
    for i, token in enumerate(tokens):
        around = found.setdefault(token, set())
        if i > 0:
            around.add((-1, tokens[i - 1]))
        if i + 1 < len(tokens):
            around.add((1, tokens[i + 1]))
    return found


def _aligned(key: str, examples: Sequence[MailExample], new_text: str, case: _Case) -> str | None:
    """The new request's word that stands where ``key`` stood in the past request (the most
    neighbours in common, a content word counting twice, a function word once; at least two;
    the first on a tie), written as the request writes it."""
    old: set[tuple[int, str]] = set()
    for example in examples:
        old |= _neighbours(f"{example.subject}\n{example.request_text}").get(key, set())
    if not old:
        return None
    new = _neighbours(new_text)
    best, best_score = None, 0
    for word, _, _ in words(new_text):
        other = normal(word)
        if other in case.old_request or is_function_word(word) or len(other) < 2:
            continue
        if word.isdigit() != key.replace(".", "").isdigit():
            continue
        shared = old & new.get(other, set())
        score = sum(1 if is_function_word(n) else 2 for _, n in shared)
        if score >= 2 and score > best_score:
            best, best_score = word, score
    return best
