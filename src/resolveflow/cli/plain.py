"""The words a person reads on the command line for the domain's vocabulary: the pages' table
(``web/words.py``), so a command and a page say the same thing (issue 29). ``--json`` keeps the
values themselves; only what is printed for a person goes through here.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType

from resolveflow.gate.outcome_words import shown_moment

UNDECIDED = "undecided"


@cache
def _table() -> ModuleType:
    # Imported when a command prints for a person, not when the CLI starts: importing
    # resolveflow.web runs its __init__, which imports the web app (FastAPI and the pages).
    from resolveflow.web import words as shared

    return shared


def words(value: object, table: str = "") -> str:
    """``value``'s words (``table``: its enum's name, or ``fact``, ``rule``, ``key``)."""
    said: str = _table().words(value, table)
    return said


def actor(value: object) -> str:
    """Who did something, as the pages say it: ``alex``, ``the executor``, ``an operator (root)``."""
    from resolveflow.web.page_words import actor_words

    return actor_words(value)


def reconcile_words(outcome: str) -> str:
    """What reconciliation did with one execution (``reconcile``'s ``outcome`` values)."""
    table: dict[str, str] = _table().RECONCILE_OUTCOME
    return table.get(outcome, outcome.replace("_", " "))


def moment(value: object) -> str:
    """A moment in the one date format of the pages (``2026-05-01 14:03 UTC``)."""
    return shown_moment(value) if value else "–"


def like_this(like: object) -> str:
    """How suggestions like a proposal's fared, as the proposal page says it."""
    said: str = _table().like_this(like)
    return said


def decision(value: object) -> str:
    return UNDECIDED if value is None else words(value, "Decision")


def state(value: object) -> str:
    """An execution's state in words (``–`` for none)."""
    return words(value, "ExecutionState")
