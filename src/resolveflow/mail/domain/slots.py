"""Which of the staff's facts fills a specific of an old reply (a slot), and what a slot's
placeholder is called when none does.

A slot is an amount, date, number, link or address of an old reply that nobody supplied for this
one. A fact fits by kind (its value is of the slot's kind, or its name says the kind) and by name
(a word of the fact's name, such as "refund", stands near the slot). When two facts fit equally,
neither is chosen: a placeholder the reviewer fills beats a guess that reads as a promise.
"""

from __future__ import annotations

import re

from resolveflow.mail.domain.entities import Entity, EntityKind, extract

_KIND_WORDS: dict[EntityKind, frozenset[str]] = {
    EntityKind.AMOUNT: frozenset({"amount", "price", "cost", "sum"}),
    EntityKind.DATE: frozenset({"date", "day", "deadline", "when"}),
    EntityKind.PERCENTAGE: frozenset({"percentage", "percent", "discount", "rate"}),
    EntityKind.REFERENCE: frozenset({"number", "id", "reference", "no"}),
    EntityKind.URL: frozenset({"link", "url", "page", "website"}),
    EntityKind.EMAIL: frozenset({"email", "e-mail", "address", "contact"}),
}
# words that say only what kind a value is, not where it goes: they never decide between facts
_GENERIC = frozenset({"amount", "sum", "number", "no", "id", "date", "day", "percentage", "link"})
_REFERENCE_LABELS = frozenset(
    {"order", "ticket", "invoice", "case", "booking", "rma", "tracking", "account", "contract"}
)
_NOUNS = frozenset(
    {
        "refund",
        "price",
        "fee",
        "credit",
        "discount",
        "total",
        "balance",
        "payment",
        "charge",
        "deposit",
        "delivery",
        "shipping",
        "dispatch",
        "return",
        "due",
        "renewal",
        "expiry",
        "appointment",
        "cancellation",
        "subscription",
        "start",
        "end",
        "deadline",
        "replacement",
    }
)
_PLACEHOLDER_NAMES = {
    EntityKind.AMOUNT: "amount",
    EntityKind.DATE: "date",
    EntityKind.PERCENTAGE: "percentage",
    EntityKind.REFERENCE: "number",
    EntityKind.URL: "link",
    EntityKind.EMAIL: "e-mail address",
}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z-]*", text.lower())


def _context(entity: Entity, text: str) -> set[str]:
    before = _words(text[max(0, entity.start - 60) : entity.start])[-4:]
    after = _words(text[entity.end : entity.end + 30])[:2]
    return {*before, *after, *([entity.label] if entity.label else [])}


def _value_kind(value: str) -> EntityKind | None:
    found = extract(value)
    if found:
        return found[0].kind
    if re.fullmatch(r"#?[A-Za-z0-9][A-Za-z0-9-]*", value) and re.search(r"\d", value):
        return EntityKind.REFERENCE  # "4411": too short to be found alone, fine as a fact
    return None


def fitting_fact(
    entity: Entity, text: str, facts: tuple[tuple[str, str], ...], foreign: list[Entity]
) -> str | None:
    """The value of the one fact that fits ``entity`` (a slot of an old reply): a fact whose name
    shares a word with the slot's surroundings, else the one fact of the kind for the one slot of
    the kind. None when nothing fits, or when two facts fit equally well."""
    context = _context(entity, text)
    fits: list[tuple[int, str]] = []
    for name, value in facts:
        words = set(_words(name))
        labelled = (
            entity.kind is EntityKind.REFERENCE and entity.label and words & _REFERENCE_LABELS
        )
        if labelled and entity.label not in words:
            continue  # a ticket number never fills an order number
        if _value_kind(value) is not entity.kind and not (words & _KIND_WORDS[entity.kind]):
            continue
        fits.append((len(words & (context - _GENERIC)), value))
    if not fits:
        return None
    best = max(score for score, _ in fits)
    top = [value for score, value in fits if score == best]
    if best > 0:
        return top[0] if len(top) == 1 else None
    # no name says where it goes: only the one fact of this kind for the one slot of this kind
    slots = {e.key for e in foreign if e.kind is entity.kind}
    return top[0] if len(top) == 1 and len(slots) == 1 else None


def request_reference(entity: Entity, known: list[Entity], foreign: list[Entity]) -> str | None:
    """The request's own order (ticket, ...) number for the old reply's: the customer gave it."""
    if entity.kind is not EntityKind.REFERENCE or not known:
        return None
    same = {k.key: k for k in known if entity.label and k.label == entity.label}
    if len(same) == 1:
        return next(iter(same.values())).text.lstrip("#")
    slots = {e.key for e in foreign if e.kind is EntityKind.REFERENCE}
    if len({k.key for k in known}) == 1 and len(slots) == 1:
        return known[0].text.lstrip("#")
    return None


def placeholder_name(entity: Entity, text: str) -> str:
    base = _PLACEHOLDER_NAMES[entity.kind]
    if entity.kind is EntityKind.REFERENCE:
        label = entity.label if entity.label in _REFERENCE_LABELS else "reference"
        return f"{label} number"
    if entity.kind in (EntityKind.AMOUNT, EntityKind.DATE):
        before = _words(text[max(0, entity.start - 60) : entity.start])[-4:]
        nouns = [w for w in before if w in _NOUNS]
        if nouns:
            return f"{nouns[-1]} {base}"
    return base
