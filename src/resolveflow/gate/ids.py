"""Short ids: a unique prefix of 8 or more hex characters names a run, a proposal or an execution.

Pages and commands show ids in full, but people type the first few characters. A prefix is read
as the UUID's text with or without its dashes (``5f0c1a2b-9d``, ``5f0c1a2b9d``), and looked up
only within the principal's tenant (the queries run under row-level security). A full UUID is
passed through unchanged, so the command's own "no such record" error still names it.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.errors import InvalidInput, NotFound
from resolveflow.gate.store import ids as id_store
from resolveflow.store.database import Database

MIN_PREFIX = 8
SHOWN_MATCHES = 5  # an ambiguity error lists at most this many

IdKind = Literal["run", "proposal", "execution"]
_TABLES: dict[IdKind, id_store.IdTable] = {
    "run": "runs",
    "proposal": "proposals",
    "execution": "executions",
}
_HEX = frozenset(string.hexdigits.lower())
# What a table or a README may have shown after a cut id; copied along, it is not part of it.
_ELLIPSES = ("…", "...")


@dataclass(frozen=True)
class IdPrefix:
    typed: str
    digits: str  # lower-case hex, no dashes

    @property
    def full(self) -> UUID | None:
        return UUID(self.digits) if len(self.digits) == 32 else None

    def bounds(self) -> tuple[UUID, UUID]:
        """The first and last UUID whose text starts with this prefix."""
        return UUID(self.digits.ljust(32, "0")), UUID(self.digits.ljust(32, "f"))


def parse_prefix(value: str, what: str = "id") -> IdPrefix:
    """Check the form of a typed id (no database needed), so a malformed one fails early."""
    typed = value.strip()
    for ellipsis in _ELLIPSES:
        typed = typed.removesuffix(ellipsis)
    typed = typed.lower()
    digits = typed.replace("-", "")
    expected = "expected a UUID or its first 8 or more characters"
    if not digits or len(digits) > 32 or not set(digits) <= _HEX:
        raise InvalidInput(f"{what} {value!r} is not a valid id ({expected})")
    if typed != str(UUID(digits.ljust(32, "0")))[: len(typed)] and typed != digits:
        raise InvalidInput(
            f"{what} {value!r} is not a valid id (dashes go where the UUID has them: "
            "8-4-4-4-12 characters)"
        )
    if len(digits) < MIN_PREFIX:
        raise InvalidInput(
            f"{what} {value!r} is too short: give at least {MIN_PREFIX} characters of the id"
        )
    return IdPrefix(typed=typed, digits=digits)


def resolve(
    db: Database,
    principal: Principal,
    value: str | IdPrefix,
    kinds: Sequence[IdKind],
    what: str | None = None,
) -> UUID:
    """The one id of ``kinds`` in the principal's tenant that starts with ``value``."""
    what = what or " or ".join(kinds)
    prefix = value if isinstance(value, IdPrefix) else parse_prefix(value, what)
    if prefix.full is not None:
        return prefix.full
    low, high = prefix.bounds()
    matches: list[tuple[IdKind, UUID]] = []
    with db.tenant(principal.tenant_id) as conn:
        for kind in kinds:
            found = id_store.ids_in_range(
                conn, _TABLES[kind], principal.tenant_id, low, high, SHOWN_MATCHES + 1
            )
            matches += [(kind, found_id) for found_id in found]
    if not matches:
        raise NotFound(f"no {what} has an id starting with {prefix.typed}")
    if len(matches) > 1:
        raise InvalidInput(_ambiguous(prefix, what, matches, several=len(kinds) > 1))
    return matches[0][1]


def _ambiguous(
    prefix: IdPrefix, what: str, matches: list[tuple[IdKind, UUID]], *, several: bool
) -> str:
    shown = [
        f"{kind} {found}" if several else str(found) for kind, found in matches[:SHOWN_MATCHES]
    ]
    more = " and more" if len(matches) > SHOWN_MATCHES else ""
    return (
        f"{what} id {prefix.typed} is ambiguous: it starts {', '.join(shown)}{more}; "
        "give more characters"
    )
