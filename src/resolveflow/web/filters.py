"""Template filters for what a person reads: one date format, plain words, and audit details as
a list of label and value (never raw JSON), a list of records among them as a small table.

Dates: every moment is shown as ``2026-05-01 14:03 UTC`` inside ``<time datetime=... title=...>``;
``static/time.js`` replaces the title with the viewer's local time, so hovering shows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from jinja2 import Environment
from markupsafe import Markup, escape

from resolveflow.domain.vocabulary import ReviewOutcome
from resolveflow.gate.domain.actions.github_issue_close_duplicate import grace_words
from resolveflow.web.page_words import (
    MORE_DETAIL_KEYS,
    REVIEW_GATE,
    actor_words,
    branch_words,
    gate_words,
    link_event_words,
    prose,
)
from resolveflow.web.words import (
    DETAIL_KEYS,
    fact_is_good,
    like_this,
    part_band,
    part_score,
    words,
)

DATE_FORMAT = "%Y-%m-%d %H:%M UTC"
_REVIEW_OUTCOMES = {outcome.value for outcome in ReviewOutcome}
# Detail values that are machine words, with the table that has their words.
_VALUES = {
    "rule": "rule",
    "classification": "Classification",
    "state": "ExecutionState",
    "status": "RunStatus",
    "decision": "Decision",
    "outcome": "AttemptOutcome",
    "credential": "Credential",
    "step": "AttemptStep",
    "kind": "ActionKind",
    "from": "ExecutionState",
    "to": "Classification",
    "name": "gate",
}


def moment(value: object) -> datetime | None:
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, str) and value:
        try:
            found = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return (found if found.tzinfo else found.replace(tzinfo=UTC)).astimezone(UTC)


def when(value: object) -> Markup:
    """A ``<time>`` element in the one date format (``–`` for no date)."""
    found = moment(value)
    if found is None:
        return escape(str(value)) if value else Markup("–")
    stamp = found.isoformat().replace("+00:00", "Z")
    shown = found.strftime(DATE_FORMAT)
    return Markup('<time datetime="{0}" title="{1}">{1}</time>').format(stamp, shown)


_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?")


def dates_in(text: object) -> str:
    """``text`` with every ISO 8601 moment in it written in the one date format."""

    def one(match: re.Match[str]) -> str:
        found = moment(match.group(0))
        return found.strftime(DATE_FORMAT) if found else match.group(0)

    return _ISO.sub(one, str(text))


def said(text: object) -> str:
    """A sentence our own code wrote, as a person reads it: dates in the one format, machine
    words in words (``page_words.prose``)."""
    return prose(dates_in(text))


def detail_items(details: object) -> list[tuple[str, str]]:
    """An audit event's details as (label, value) pairs, values flattened to text."""
    if not isinstance(details, dict):
        return [] if details in (None, "", [], {}) else [("details", _text(details))]
    return [(_key(key), _value(key, value)) for key, value in details.items()]


@dataclass(frozen=True)
class Table:
    headings: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Detail:
    """One detail as a page shows it: a text, or a list of records as a table."""

    label: str
    text: str
    table: Table | None = None


def details_shown(details: object) -> list[Detail]:
    """``detail_items``, except that a list of records (the gates a review passed, the snippets
    it read) becomes a table with a heading per field instead of one long line."""
    if not isinstance(details, dict):
        return [Detail(label, text) for label, text in detail_items(details)]
    shown = []
    for key, value in details.items():
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            shown.append(Detail(_key(key), "", _table(value)))
        else:
            shown.append(Detail(_key(key), _value(key, value)))
    return shown


def _table(records: list[dict[str, object]]) -> Table:
    fields = list(dict.fromkeys(field for record in records for field in record))
    rows = [[_value(field, record.get(field)) for field in fields] for record in records]
    return Table([_key(field) for field in fields], rows)


def _key(key: str) -> str:
    return DETAIL_KEYS.get(key) or MORE_DETAIL_KEYS.get(key) or words(key, "key")


def _value(key: str, value: object) -> str:
    table = _VALUES.get(key)
    if table == "gate" and isinstance(value, str) and value in REVIEW_GATE:
        return gate_words(value)
    if table and table != "gate" and isinstance(value, str):
        if key == "outcome" and value in _REVIEW_OUTCOMES:  # a review's, not an attempt's
            return words(value, "ReviewOutcome")
        return words(value, table)
    return _text(value)


def _text(value: object) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{_key(k)}: {_value(k, v)}" for k, v in value.items()) or "–"
    if isinstance(value, list | tuple):
        return ", ".join(_text(item) for item in value) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "–" if value is None else said(value)


def event_words(event: object) -> str:
    """An audit event in words (the sign-in link's own events too)."""
    return link_event_words(str(event)) or words(event, "AuditEvent")


def install(env: Environment) -> None:
    env.filters["words"] = words
    env.filters["when"] = when
    env.filters["dates"] = dates_in
    env.filters["said"] = said
    env.filters["branch"] = branch_words
    env.filters["detail_items"] = detail_items
    env.filters["details_shown"] = details_shown
    env.filters["actor"] = actor_words
    env.filters["event"] = event_words
    env.filters["gate"] = gate_words
    env.filters["like_this"] = like_this
    env.filters["part_score"] = part_score
    env.filters["part_band"] = part_band
    env.filters["grace"] = grace_words
    env.globals["fact_is_good"] = fact_is_good
