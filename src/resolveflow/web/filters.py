"""Template filters for what a person reads: one date format, plain words, and audit details as
a list of label and value (never raw JSON).

Dates: every moment is shown as ``2026-05-01 14:03 UTC`` inside ``<time datetime=... title=...>``;
``static/time.js`` replaces the title with the viewer's local time, so hovering shows it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from jinja2 import Environment
from markupsafe import Markup, escape

from resolveflow.web.words import fact_is_good, words

DATE_FORMAT = "%Y-%m-%d %H:%M UTC"
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


def detail_items(details: object) -> list[tuple[str, str]]:
    """An audit event's details as (label, value) pairs, values flattened to text."""
    if not isinstance(details, dict):
        return [] if details in (None, "", [], {}) else [("details", _text(details))]
    return [
        (words(key, "key"), words(value, _VALUES[key]) if key in _VALUES else _text(value))
        for key, value in details.items()
    ]


def _text(value: object) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{words(k, 'key')}: {_text(v)}" for k, v in value.items()) or "–"
    if isinstance(value, list | tuple):
        return ", ".join(_text(item) for item in value) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "–" if value is None else dates_in(value)


def install(env: Environment) -> None:
    env.filters["words"] = words
    env.filters["when"] = when
    env.filters["dates"] = dates_in
    env.filters["detail_items"] = detail_items
    env.globals["fact_is_good"] = fact_is_good
