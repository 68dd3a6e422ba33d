"""Quiet by default (issue 31, part 3): where a product's suggestion goes, the daily digest, and
the inbox's lines for kinds that went quiet by themselves (``gate/domain/quiet.py`` says how).

The gate decides it once, where a product's proposal is recorded (``gate/proposals.py``): it
tells the kind from the proposal (as the decisions page does), reads the mode of that kind in
that place from the policy file, and, for a kind left ``on``, the kind's last decisions there
(those the proposing principal may read). A kind that is off is refused there as a one-line
``PolicyViolation`` (the products check first and record why instead: ``apply_off``); a kind that
goes to the digest is recorded as usual, and its lineage is written in ``digest_entries`` in the
same transaction, which keeps it out of the inbox and in the digest.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.domain.vocabulary import SuggestionKind, SuggestionMode
from resolveflow.errors import InvalidInput, PolicyViolation, ResolveFlowError
from resolveflow.gate import feedback, kind_rules
from resolveflow.gate.domain.actions import AnyAction, parse_action
from resolveflow.gate.domain.quiet import (
    DigestWhy,
    QuietRules,
    Route,
    kind_figures,
    moved_line,
    off_reason,
    place_modes,
    route,
)
from resolveflow.gate.store import digest as store
from resolveflow.policy_file import DEFAULT_POLICY, PolicyFile
from resolveflow.store.database import Connection, Database

DIGEST_DAYS = 7  # the digest page without a day: this many days, today's included
MAX_ENTRIES = 1000


@dataclass(frozen=True)
class Quiet:
    """What decides where a suggestion goes: the policy file and the automatic move's rules.
    The products are handed the wiring's (``bootstrap``); without one, every kind is ``on``
    and the move's defaults hold."""

    policy: PolicyFile = DEFAULT_POLICY
    rules: QuietRules = field(default_factory=QuietRules)

    def modes(self, place: str) -> dict[SuggestionKind, SuggestionMode]:
        return place_modes(self.policy, place)


DEFAULT_QUIET = Quiet()


def route_in(
    conn: Connection, principal: Principal, quiet: Quiet, place: str, kind: SuggestionKind
) -> Route:
    """Where a suggestion of ``kind`` in ``place`` goes now, in the caller's transaction."""
    configured = quiet.modes(place).get(kind, SuggestionMode.ON)
    figures = None
    if configured is SuggestionMode.ON and kind is not SuggestionKind.LABEL:
        found = [
            e
            for e in feedback.decision_examples_in(conn, principal, feedback.DAYS, place)
            if e.kind is kind and e.place == place
        ]
        read = kind_figures(found, quiet.rules)
        figures = read[0] if read else None
    return route(place, kind, configured, figures, quiet.rules)


def refuse_off(quiet: Quiet, routed: Route, action: AnyAction) -> None:
    """The gate's own check of what the products drop first (``domain.quiet.apply_off``)."""
    if routed.off:
        raise PolicyViolation(off_reason(routed.kind, routed.place))
    label_mode = quiet.modes(routed.place).get(SuggestionKind.LABEL)
    if action.labels and label_mode is SuggestionMode.OFF:
        reason = off_reason(SuggestionKind.LABEL, routed.place)
        raise PolicyViolation(f"{reason}: propose it without labels")


def record_in(conn: Connection, tenant_id: UUID, lineage_id: UUID, routed: Route) -> None:
    """Put a new lineage in the digest, out of the inbox (``routed.in_digest``)."""
    why = routed.why
    assert why is not None
    figures = routed.figures if why is DigestWhy.ACCEPTANCE else None
    store.insert_entry(
        conn,
        tenant_id=tenant_id,
        lineage_id=lineage_id,
        place=routed.place,
        kind=routed.kind.value,
        why=why.value,
        approved=figures.approved + figures.edited if figures else None,
        decisions=figures.decisions if figures else None,
    )


# --- the inbox's lines ------------------------------------------------------------------------


@dataclass(frozen=True)
class Notice:
    """A kind whose acceptance in a place moved it to the digest by itself."""

    place: str
    kind: SuggestionKind
    approved: int  # as proposed or after an edit
    decisions: int
    floor: float
    text: str

    def as_json(self) -> dict[str, Any]:
        return {
            "place": self.place,
            "kind": self.kind.value,
            "approved": self.approved,
            "decisions": self.decisions,
            "floor": self.floor,
            "text": self.text,
        }


def notices(db: Database, principal: Principal, quiet: Quiet) -> list[Notice]:
    """One line per place and kind that goes to the digest now because of its acceptance (the
    decisions the viewer may read); a kind the policy file sets is not moved, so not listed."""
    with db.tenant(principal.tenant_id) as conn:
        found = feedback.decision_examples_in(conn, principal)
    lines = []
    for figures in kind_figures(found, quiet.rules):
        configured = quiet.modes(figures.place).get(figures.kind, SuggestionMode.ON)
        routed = route(figures.place, figures.kind, configured, figures, quiet.rules)
        if routed.why is DigestWhy.ACCEPTANCE:
            lines.append(
                Notice(
                    figures.place,
                    figures.kind,
                    figures.approved + figures.edited,
                    figures.decisions,
                    quiet.rules.floor,
                    moved_line(figures, quiet.rules.floor),
                )
            )
    return lines


# --- the digest -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DigestItem:
    proposal_id: UUID  # the lineage's latest version
    lineage_id: UUID
    version: int
    why: DigestWhy
    approved: int | None
    decisions: int | None
    summary: str | None  # None: an email of a mailbox the viewer holds no grant for
    state: str  # waiting, rejected, approved, or the execution's state
    created_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "proposal_id": str(self.proposal_id),
            "lineage_id": str(self.lineage_id),
            "version": self.version,
            "why": self.why.value,
            "approved": self.approved,
            "decisions": self.decisions,
            "summary": self.summary,
            "state": self.state,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True)
class DigestGroup:
    place: str
    kind: SuggestionKind
    items: list[DigestItem]

    def as_json(self) -> dict[str, Any]:
        return {
            "place": self.place,
            "kind": self.kind.value,
            "items": [item.as_json() for item in self.items],
        }


@dataclass(frozen=True)
class DigestDay:
    day: date
    groups: list[DigestGroup]

    def as_json(self) -> dict[str, Any]:
        return {"day": self.day.isoformat(), "groups": [g.as_json() for g in self.groups]}


@dataclass(frozen=True)
class Digest:
    first: date
    last: date
    days: list[DigestDay]  # newest first; a day without an entry is left out

    def as_json(self) -> dict[str, Any]:
        return {
            "first": self.first.isoformat(),
            "last": self.last.isoformat(),
            "days": [d.as_json() for d in self.days],
        }


def parse_day(text: str | None) -> date | None:
    """A ``--day`` or ``?day=`` (YYYY-MM-DD); None when absent. One line for a bad one."""
    if not text:
        return None
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInput(f"day must be YYYY-MM-DD, not {text[:40]!r}") from None


def digest(
    db: Database, principal: Principal, day: date | None = None, today: date | None = None
) -> Digest:
    """The proposals sent to the digest on ``day`` (UTC), or over the last ``DIGEST_DAYS``
    days, per day, place and kind."""
    last = day or today or datetime.now(UTC).date()
    first = day or last - timedelta(days=DIGEST_DAYS - 1)
    since = datetime.combine(first, time.min, UTC)
    until = datetime.combine(last + timedelta(days=1), time.min, UTC)
    with db.tenant(principal.tenant_id) as conn:
        rows = store.entries(conn, principal.tenant_id, since, until, MAX_ENTRIES)
        readers = kind_rules.readers(conn, principal)
    grouped: dict[date, dict[tuple[str, SuggestionKind], list[DigestItem]]] = defaultdict(dict)
    for row in rows:
        key = (row.place, SuggestionKind(row.kind))
        readable = readers.may_read(row.action)
        item = DigestItem(
            proposal_id=row.proposal_id,
            lineage_id=row.lineage_id,
            version=row.version,
            why=DigestWhy(row.why),
            approved=row.approved,
            decisions=row.decisions,
            summary=_summary(row.action) if readable else None,
            state=_state(row),
            created_at=row.created_at,
        )
        grouped[row.created_at.astimezone(UTC).date()].setdefault(key, []).append(item)
    days = [
        DigestDay(
            d,
            [DigestGroup(place, kind, items) for (place, kind), items in sorted(groups.items())],
        )
        for d, groups in sorted(grouped.items(), reverse=True)
    ]
    return Digest(first, last, days)


def _summary(action: dict[str, Any]) -> str:
    try:
        return parse_action(action).summary
    except ResolveFlowError:  # a stored action no kind reads now
        return str(action.get("kind", "?"))


def _state(row: store.DigestRow) -> str:
    if row.decision is None:
        return "waiting"
    if row.decision == "rejected":
        return "rejected"
    return row.execution_state or "approved"
