"""Plain words the pages need beyond the enums' tables of ``web/words.py``: who did something
(an audit event's actor), the sign-in link's audit events, the investigation's review gates, and
more names of audit details.

An actor is stored as ``kind:who`` (``principal:alex``, ``executor:vm:10831:72ac928c``,
``operator:root``); a page says ``alex``, ``the executor``, ``an operator (root)``.
"""

from __future__ import annotations

import re
from functools import cache

from resolveflow.domain.vocabulary import WEBHOOK_SUBJECT, LinkEvent
from resolveflow.web.words import FACTS, LINK_EVENT, TABLES

# The actor kinds: a person's login is shown as it is; the workers by what they are.
_PEOPLE = {"principal", "github"}
_SYSTEMS: dict[str, str] = {
    "executor": "the executor",
    "reconciler": "the reconciler",
    "workflow": "the triage workflow",
    "webhook": "a GitHub webhook",
    "web": "the web app",
}
# The investigation's review gates (triage/domain/review.py), decided in code.
REVIEW_GATE: dict[str, str] = {
    "groundedness": "grounded in the sources",
    "risk": "risk",
    "permission": "permission",
    "duplicate_sanity": "duplicate check",
}
# Where triage sends a run next (its branch: a classification's value).
BRANCH: dict[str, str] = {
    "deterministic": "act by the rule",
    "ai_investigation": "investigate",
    "human_review": "a person reviews it",
}
# GitHub's check-run conclusions that are two words.
CONCLUSION: dict[str, str] = {
    "timed_out": "timed out",
    "action_required": "action required",
    "startup_failure": "startup failure",
}
# Audit detail names that read better than their name with spaces.
MORE_DETAIL_KEYS: dict[str, str] = {
    "investigation_id": "investigation",
    "external_id": "document",
    "id": "id",
    "passed": "passed",
    "relevance": "relevance",
    "own_github_token": "own GitHub token",
    "expires_at": "expires",
    "wait_seconds": "wait (seconds)",
    "was_sent": "was sent",
    "from": "before",
    "via": "signed in with",
}


def actor_words(actor: object) -> str:
    """Who did it, in words; the stored form stays in the page's ``title`` for the curious."""
    text = str(actor or "")
    kind, _, who = text.partition(":")
    if kind in _PEOPLE and who:
        return "a GitHub webhook" if who == WEBHOOK_SUBJECT else who
    if kind == "operator":
        return f"an operator ({who})" if who else "an operator"
    if kind == "configuration":
        return f"the configuration ({who})" if who else "the configuration"
    if kind in _SYSTEMS:
        return _SYSTEMS[kind]
    return text.replace("_", " ") or "–"


def link_event_words(event: str) -> str | None:
    try:
        return LINK_EVENT[LinkEvent(event)]
    except ValueError:
        return None


def gate_words(name: object) -> str:
    text = str(name or "")
    return REVIEW_GATE.get(text, text.replace("_", " "))


def branch_words(branch: object) -> str:
    text = str(branch or "")
    return BRANCH.get(text, text.replace("_", " "))


@cache
def _machine() -> tuple[re.Pattern[str], dict[str, str]]:
    """Every machine word our own sentences may contain, with its words."""
    known: dict[str, str] = {**CONCLUSION, **FACTS}
    known.update((k, v) for k, v in REVIEW_GATE.items() if "_" in k)
    for enum, names in TABLES.items():
        for member in enum:
            if "_" in member.value or "." in member.value:
                known[member.value] = names[member]
    alternatives = "|".join(re.escape(word) for word in sorted(known, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?:{alternatives})(?![\w])"), known


def prose(text: object) -> str:
    """A sentence our code wrote (a rule's reason, a gate's), its machine words in words:
    ``check run conclusion failure or timed_out`` reads ``... or timed out``."""
    pattern, known = _machine()
    return pattern.sub(lambda match: known[match.group(0)], str(text))
