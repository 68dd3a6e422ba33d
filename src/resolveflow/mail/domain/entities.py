"""The specifics of a message that amount to a commitment: amounts, dates, percentages, order,
ticket and invoice numbers, URLs and e-mail addresses, found in text and normalised so that two
ways of writing one value compare equal ("€25", "25.00 EUR" and "EUR 25"; "14 March 2026",
"2026-03-14" and "March 14th, 2026").

The drafting code replaces an old reply's specifics (``mail_draft``) and the checks refuse a
specific that nobody supplied (``mail_checks``); both use these rules, so a deterministic draft
passes the checks whenever it left no placeholder. Extraction is deliberately simple and
over-inclusive: a false alarm costs a reviewer a look, a missed invented price costs a customer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum


class EntityKind(StrEnum):
    AMOUNT = "amount"
    DATE = "date"
    PERCENTAGE = "percentage"
    REFERENCE = "reference"  # an order, ticket, invoice, case or tracking number
    URL = "url"
    EMAIL = "email"


@dataclass(frozen=True)
class Entity:
    """One specific as found: ``provides`` are the keys it makes allowed when it is in the
    request, the facts or the signature; it is allowed itself when one of ``accepted_by`` is."""

    kind: EntityKind
    text: str
    start: int
    end: int
    provides: frozenset[str]
    accepted_by: frozenset[str]
    label: str = ""  # "order", "ticket", ... for references; the word before for the others

    @property
    def key(self) -> str:
        return min(self.accepted_by)


PLACEHOLDER = re.compile(r"\[\[([^\[\]\n]{1,80})\]\]")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'\[\]]+", re.IGNORECASE)
# Bounded parts and a start only where a run of address characters starts: no quadratic scans
# on a long "a.a.a.a..." (the request is untrusted and may be large).
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
    r"\.[A-Za-z]{2,24}\b"
)
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DATES = [
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]?\d)-(?P<day>[0-3]?\d)\b"),
    re.compile(r"\b(?P<a>[0-3]?\d)[/.](?P<b>[0-3]?\d)[/.](?P<year>(?:19|20)?\d\d)\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b", re.IGNORECASE),
]
_CURRENCIES = {
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "$": "USD",
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "£": "GBP",
    "gbp": "GBP",
    "pound": "GBP",
    "pounds": "GBP",
    "chf": "CHF",
}
_NUMBER = r"(?P<number>\d{1,3}(?:[,' ]\d{3}){1,4}(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)"
_SYMBOL = r"(?P<symbol>[€$£]|\b(?:EUR|USD|GBP|CHF)\b)"
_WORD_CURRENCY = r"(?P<word>eur|euros?|usd|dollars?|gbp|pounds?|chf)\b"
_AMOUNTS = [
    re.compile(rf"{_SYMBOL}\s?{_NUMBER}", re.IGNORECASE),
    re.compile(rf"\b{_NUMBER}\s?(?:{_SYMBOL}|{_WORD_CURRENCY})", re.IGNORECASE),
    # a bare number with cents ("25.00") is an amount without a currency
    re.compile(r"(?<![\d.,])(?P<number>\d+\.\d\d)(?![\d.])"),
]
_PERCENT = re.compile(r"\b(?P<number>\d+(?:[.,]\d+)?)\s?(?:%|per\s?cent\b)", re.IGNORECASE)
_REFERENCE_WORDS = "order|ticket|invoice|case|reference|ref|booking|rma|tracking|account|contract"
_REFERENCES = [
    re.compile(
        rf"\b(?P<label>{_REFERENCE_WORDS})\b\s*(?:number\b|no\.?|nr\.?|id\b)?\s*[:#]?\s*#?"
        r"(?P<id>(?=[A-Za-z0-9-]{3})[A-Za-z0-9][A-Za-z0-9-]*\d[A-Za-z0-9-]*)",
        re.IGNORECASE,
    ),
    re.compile(r"(?<![\w&])#(?P<id>\d{3,})\b"),
    re.compile(r"\b(?P<id>[A-Z]{2,6}-\d[\d-]{2,})\b"),
    re.compile(r"\b(?P<id>(?=[A-Z0-9]*\d{3})[A-Z]{1,6}\d[A-Z0-9]{2,})\b"),  # INV20240042, RMA512
    re.compile(r"(?<![\w.,])(?P<id>\d{5,})(?![\w]|[.,]\d)"),  # a long bare number
]


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with ``spans`` blanked (one pass: a long text with many numbers stays linear)."""
    if not spans:
        return text
    parts, last = [], 0
    for start, end in sorted(spans):
        parts += [text[last:start], " " * (end - start)]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _same(kind: EntityKind, key: str) -> frozenset[str]:
    return frozenset({f"{kind}:{key}"})


def _decimal(number: str) -> Decimal | None:
    cleaned = re.sub(r"[' ]", "", number)
    if re.search(r",\d{1,2}$", cleaned):  # "25,50": a decimal comma
        cleaned = cleaned.replace(".", "").replace(",", ".")
    cleaned = cleaned.replace(",", "")
    try:
        return Decimal(cleaned).normalize()
    except InvalidOperation:
        return None


def _amount(match: re.Match[str]) -> Entity | None:
    groups = match.groupdict()
    value = _decimal(groups["number"])
    if value is None:
        return None
    plain = f"{value:f}"
    unit = groups.get("symbol") or groups.get("word")
    bare, any_currency = f"amount:?:{plain}", f"amount:any:{plain}"
    if unit is None:
        return Entity(
            EntityKind.AMOUNT,
            match.group(),
            *match.span(),
            frozenset({bare, any_currency}),
            frozenset({any_currency}),
        )
    # "€25" is allowed by "25.00" in the request (the customer's own currency) and "25.00" by
    # "€25"; "$25" is not allowed by "€25"
    priced = f"amount:{_CURRENCIES[unit.lower()]}:{plain}"
    return Entity(
        EntityKind.AMOUNT,
        match.group(),
        *match.span(),
        frozenset({priced, any_currency}),
        frozenset({priced, bare}),
    )


def _date_keys(year: int | None, month: int, day: int) -> tuple[frozenset[str], frozenset[str]]:
    md = f"{month:02d}-{day:02d}"
    if year is None:
        # "14 March" is allowed by any 14 March; it allows a 14 March with a year as well
        return frozenset({f"date:md:{md}", f"date:mdonly:{md}"}), frozenset({f"date:md:{md}"})
    full = f"date:{year:04d}-{md}"
    return frozenset({full, f"date:md:{md}"}), frozenset({full, f"date:mdonly:{md}"})


def _date_readings(groups: dict[str, str | None]) -> list[tuple[int | None, int, int]]:
    year_text = groups.get("year")
    year = int(year_text) if year_text else None
    if year is not None and year < 100:
        year += 2000
    if groups.get("a"):  # 03/04/2026: both readings, as the writer's convention is unknown
        a, b = int(groups["a"] or 0), int(groups["b"] or 0)
        return [(year, m, d) for d, m in ((a, b), (b, a)) if 1 <= m <= 12 and 1 <= d <= 31]
    month_text = groups["month"] or ""
    month = int(month_text) if month_text.isdigit() else _MONTHS[month_text.lower().rstrip(".")]
    day = int(groups["day"] or 0)
    return [(year, month, day)] if 1 <= month <= 12 and 1 <= day <= 31 else []


def _date(match: re.Match[str]) -> Entity | None:
    readings = _date_readings(match.groupdict())
    if not readings:
        return None
    provides: set[str] = set()
    accepted: set[str] = set()
    for reading in readings:
        give, take = _date_keys(*reading)
        provides |= give
        accepted |= take
    return Entity(
        EntityKind.DATE, match.group(), *match.span(), frozenset(provides), frozenset(accepted)
    )


def _url_key(url: str) -> str:
    url = url.rstrip(".,;:!?)")
    rest = url.partition("://")[2] if "://" in url else url  # http and https: one page
    host, slash, path = rest.partition("/")
    return f"{host.lower().removeprefix('www.')}{slash}{path}".rstrip("/")


Found = tuple[Entity, int, int]  # the entity and the span to blank for the later patterns


def _url(match: re.Match[str], text: str) -> Found:
    trimmed = match.group().rstrip(".,;:!?)")
    key = _same(EntityKind.URL, _url_key(trimmed))
    end = match.start() + len(trimmed)
    return Entity(EntityKind.URL, trimmed, match.start(), end, key, key), match.start(), end


def _email(match: re.Match[str], text: str) -> Found:
    key = _same(EntityKind.EMAIL, match.group().lower())
    return Entity(EntityKind.EMAIL, match.group(), *match.span(), key, key), *match.span()


def _percentage(match: re.Match[str], text: str) -> Found:
    value = _decimal(match.group("number"))
    key = _same(EntityKind.PERCENTAGE, f"{value:f}" if value is not None else match.group())
    return Entity(EntityKind.PERCENTAGE, match.group(), *match.span(), key, key), *match.span()


def _reference(match: re.Match[str], text: str) -> Found:
    ident = match.group("id").strip("-")
    key = _same(EntityKind.REFERENCE, re.sub(r"[^A-Za-z0-9]", "", ident).upper())
    label = (match.groupdict().get("label") or "").lower()
    # the number alone is the specific ("order #[[order number]]" reads badly: take the #)
    start = match.start("id") - (text[match.start("id") - 1 : match.start("id")] == "#")
    end = match.start("id") + len(ident)
    entity = Entity(EntityKind.REFERENCE, text[start:end], start, end, key, key, label)
    return entity, match.start(), end


def _spanned(make: Callable[[re.Match[str]], Entity | None]) -> Callable[..., Found | None]:
    def found(match: re.Match[str], text: str) -> Found | None:
        entity = make(match)
        return (entity, *match.span()) if entity is not None else None

    return found


_PASSES: list[tuple[re.Pattern[str], Callable[[re.Match[str], str], Found | None]]] = [
    (_URL, _url),
    (_EMAIL, _email),
    *((pattern, _spanned(_date)) for pattern in _DATES),
    (_PERCENT, _percentage),
    *((pattern, _spanned(_amount)) for pattern in _AMOUNTS),
    *((pattern, _reference) for pattern in _REFERENCES),
]


def extract(text: str) -> list[Entity]:
    """The specifics in ``text``, in order of position; placeholders ``[[...]]`` are not specifics.
    Each pass blanks what it found, so a date is not also an amount, nor a URL's digits a number."""
    found: list[Entity] = []
    work = PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)
    for pattern, make in _PASSES:
        spans = []
        for match in pattern.finditer(work):
            if (hit := make(match, text)) is not None:
                found.append(hit[0])
                spans.append((hit[1], hit[2]))
        work = _mask(work, spans)
    return sorted(found, key=lambda e: e.start)


_TOKEN = re.compile(r"[A-Za-z0-9-]+")


def allowed_keys(texts: Iterable[str]) -> frozenset[str]:
    """Every key the specifics in ``texts`` provide. Any token with a digit counts as a number
    too: "my ticket is 5512" supplies the ticket number 5512 though it is too short to be found
    alone, and allowing more here can only spare a reviewer a false alarm."""
    keys: set[str] = set()
    for text in texts:
        for entity in extract(text):
            keys |= entity.provides
        for token in (t for t in _TOKEN.findall(text) if any(c.isdigit() for c in t)):
            keys.add(f"{EntityKind.REFERENCE}:{re.sub(r'[^A-Za-z0-9]', '', token).upper()}")
    return frozenset(keys)


def is_allowed(entity: Entity, allowed: frozenset[str]) -> bool:
    return not entity.accepted_by.isdisjoint(allowed)
