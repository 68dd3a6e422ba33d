"""Learning from the team's decisions (issue 31): every decision on a suggestion is a labelled
example, and each kind of suggestion has a measured acceptance per repository.

Read from the records the gate keeps anyway (proposals, their versions, approvals, the triage
run's branch), so the history before this module counts too. A principal reads the examples of
the mailboxes they may read only (the mail grant holds here as everywhere).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.domain.vocabulary import Decision, SuggestionKind
from resolveflow.errors import InvalidInput, ResolveFlowError
from resolveflow.gate import kind_rules
from resolveflow.gate.domain.actions import parse_action
from resolveflow.gate.domain.parts import PartRecord
from resolveflow.gate.domain.suggestions import (
    Acceptance,
    Decided,
    DecisionExample,
    acceptance,
    examples,
    suggestion_detail,
    suggestion_kind,
)
from resolveflow.gate.domain.thresholds import (
    BandFigure,
    Fitted,
    Scored,
    band,
    band_of,
    fit_threshold,
)
from resolveflow.gate.store import feedback as store
from resolveflow.gate.store import parts as part_store
from resolveflow.gate.suggestion_decisions import with_decisions_in_github
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)

LAST = 50  # decisions per repository and kind that a figure is read over
DAYS = 90  # and no older than this
MAX_DAYS = 3650
MAX_DECISIONS = 5000  # read at most this many decisions (the newest)


@dataclass(frozen=True)
class AcceptanceReport:
    last: int
    days: int
    figures: list[Acceptance]

    def as_json(self) -> dict[str, object]:
        return {
            "last": self.last,
            "days": self.days,
            "figures": [figure.as_json() for figure in self.figures],
        }


def _since(days: int) -> datetime:
    if not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"days must be between 1 and {MAX_DAYS}")
    return datetime.now(UTC) - timedelta(days=days)


def decision_examples_in(
    conn: Connection, principal: Principal, days: int = DAYS, place: str | None = None
) -> list[DecisionExample]:
    """Every example the tenant's decisions of the last ``days`` make (in one ``place`` only,
    when given), newest first, in the caller's transaction."""
    since = _since(days)
    rows = store.decided_proposals(conn, principal.tenant_id, since, MAX_DECISIONS, place)
    readers = kind_rules.readers(conn, principal)
    readable = [row for row in rows if readers.may_read(row.first_action)]
    found = _examples(conn, principal.tenant_id, readable)
    # A part sent as a GitHub suggestion counts by what the maintainer did with it there.
    return with_decisions_in_github(conn, principal.tenant_id, found, since, place)


def _examples(
    conn: Connection, tenant_id: UUID, rows: list[store.DecidedRow]
) -> list[DecisionExample]:
    """The examples of decided lineages, each with its run's parts when it stored them."""
    parts = part_store.parts_of_lineages(conn, tenant_id, [row.lineage_id for row in rows])
    return [e for row in rows for e in _examples_of(row, parts.get(row.lineage_id, ()))]


def _examples_of(
    row: store.DecidedRow, parts: tuple[PartRecord, ...] = ()
) -> list[DecisionExample]:
    try:
        decided = Decided(
            proposal_id=row.proposal_id,
            lineage_id=row.lineage_id,
            version=row.version,
            first=parse_action(row.first_action),
            decided=parse_action(row.decided_action),
            author_kind=row.author_kind,
            note=row.note,
            branch=row.branch,
            rule=row.rule,
            decision=Decision(row.decision),
            reason=row.reason,
            decided_at=row.decided_at,
            score=row.score,
            parts=parts,
        )
    except ResolveFlowError as exc:  # a stored action no kind reads now: not an example
        logger.warning("decision left out", extra={"proposal_id": str(row.proposal_id)})
        logger.debug("why", extra={"reason": exc.message})
        return []
    return examples(decided)


def decision_examples(
    db: Database, principal: Principal, days: int = DAYS
) -> list[DecisionExample]:
    with db.tenant(principal.tenant_id) as conn:
        return decision_examples_in(conn, principal, days)


def acceptance_report(
    db: Database, principal: Principal, last: int = LAST, days: int = DAYS
) -> AcceptanceReport:
    """Per repository (or project, or mailbox), kind of suggestion and label or rule: how many
    of its last ``last`` decisions of the last ``days`` approved it as proposed, after an edit,
    or rejected it."""
    return report_of(decision_examples(db, principal, days), last, days)


def report_of(found: list[DecisionExample], last: int, days: int) -> AcceptanceReport:
    """The acceptance figures of examples already read (``decision_examples`` of ``days``)."""
    if not 1 <= last <= MAX_DECISIONS:
        raise InvalidInput(f"last must be between 1 and {MAX_DECISIONS}")
    return AcceptanceReport(last, days, acceptance(found, last))


@dataclass(frozen=True)
class LikeThis:
    """How suggestions like one lineage's fared in its place and, when its kind is made with
    a score, how those in its score band fared and the threshold its place uses."""

    acceptance: Acceptance
    score: float | None = None
    band: tuple[float, float] | None = None
    in_band: Acceptance | None = None
    floor: float | None = None  # the threshold it was made at


def like_this_in(
    conn: Connection,
    principal: Principal,
    lineage_id: UUID,
    last: int = LAST,
    days: int = DAYS,
) -> LikeThis | None:
    """How suggestions like this lineage's (its kind and rule, in its place) fared; None for a
    person's own proposal. Counts other lineages' decisions only."""
    first = store.lineage_first(conn, principal.tenant_id, lineage_id)
    if first is None:
        return None
    try:
        action = parse_action(first.first_action)
    except ResolveFlowError:
        return None
    kind = suggestion_kind(action, first.author_kind, first.note, first.branch)
    if kind is None:
        return None
    detail = suggestion_detail(kind, first.rule)
    place = action.repository
    found = [
        e
        for e in decision_examples_in(conn, principal, days, place)
        if (e.place, e.kind, e.detail) == (place, kind, detail) and e.lineage_id != lineage_id
    ]
    figures = acceptance(found, last)
    overall = figures[0] if figures else Acceptance(place, kind, detail, 0, 0, 0, None)
    if first.score is None:
        return LikeThis(overall)
    low, high = band(first.score)
    banded = [e for e in found if e.score is not None and band(e.score) == (low, high)]
    in_band = acceptance(banded, last)
    return LikeThis(
        overall,
        first.score,
        (low, high),
        in_band[0] if in_band else Acceptance(place, kind, detail, 0, 0, 0, None),
        first.floor,
    )


def _scored(found: Sequence[DecisionExample]) -> list[Scored]:
    return [Scored(e.score, e.approved) for e in found if e.score is not None]


def scored_examples_in(conn: Connection, tenant_id: UUID, place: str) -> list[DecisionExample]:
    """Every example the tenant's decisions in ``place`` of the last ``DAYS`` days make, for
    what is read of them by score only (never what a suggestion said, so no reading grant
    applies): the fitted floors, a band's acceptance."""
    rows = store.decided_proposals(conn, tenant_id, _since(DAYS), MAX_DECISIONS, place)
    return with_decisions_in_github(
        conn, tenant_id, _examples(conn, tenant_id, rows), _since(DAYS), place
    )


def fitted_threshold_in(
    conn: Connection, tenant_id: UUID, place: str, kind: SuggestionKind, default: float
) -> Fitted:
    """The threshold ``kind`` is made with in ``place``, fitted from the decisions on it of
    the last ``DAYS`` days (``gate/domain/thresholds.py``; the default until there are enough)."""
    return fitted_from(scored_examples_in(conn, tenant_id, place), kind, default)


def fitted_from(found: Sequence[DecisionExample], kind: SuggestionKind, default: float) -> Fitted:
    """``fitted_threshold_in`` over examples already read (one place's)."""
    return fit_threshold(_scored([e for e in found if e.kind is kind]), default)


def part_bands_in(
    conn: Connection,
    principal: Principal,
    place: str,
    parts: Sequence[PartRecord],
    lineage_id: UUID | None = None,
) -> list[BandFigure | None]:
    """For each part, how the decided suggestions of its kind in its score band fared in
    ``place`` (``thresholds.band_of``), other lineages' decisions only; None for a part whose
    decisions count as no kind of their own."""
    return bands_of(decision_examples_in(conn, principal, DAYS, place), parts, lineage_id)


def bands_of(
    found: Sequence[DecisionExample], parts: Sequence[PartRecord], lineage_id: UUID | None
) -> list[BandFigure | None]:
    """``part_bands_in`` over examples already read (one place's)."""

    def decided(kind: SuggestionKind) -> list[Scored | bool]:
        return [
            Scored(e.score, e.approved) if e.score is not None else e.approved
            for e in found
            if e.kind is kind and e.lineage_id != lineage_id
        ]

    return [None if p.kind is None else band_of(p.score, decided(p.kind)) for p in parts]
