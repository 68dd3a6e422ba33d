"""The parts of a triage run's result as the pages, the API and the CLI show them: each with its
score, its floor and how suggestions of its kind in its score band fared in its repository
(``thresholds.band_of`` over the team's decisions), and whether each is still in a version
(what the approver may drop from it: ``gate/proposals.py::drop_parts``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal, Proposal
from resolveflow.gate import feedback
from resolveflow.gate.domain.actions import parse_action
from resolveflow.gate.domain.parts import PartRecord, in_version, item_in_version
from resolveflow.gate.domain.thresholds import BandFigure
from resolveflow.gate.store import parts as part_store
from resolveflow.store.database import Connection, Database


@dataclass(frozen=True)
class ShownPart:
    record: PartRecord
    band: BandFigure | None  # None: its decisions count as no kind of their own
    present: bool = False  # still in the version shown (it can be dropped from it)
    items_present: tuple[bool, ...] = ()

    def as_json(self) -> dict[str, Any]:
        part = self.record
        return {
            "name": part.name,
            "kind": part.kind.value if part.kind else None,
            "score": part.score,
            "floor": part.floor,
            "kept": part.kept,
            "left_out": part.left_out,
            "public": part.public,
            "present": self.present,
            "band": self.band.as_json() if self.band else None,
            "items": [
                {**item.as_json(), "present": present}
                for item, present in zip(
                    part.items, self.items_present or [False] * len(part.items), strict=True
                )
            ],
        }


def shown_in(
    conn: Connection,
    principal: Principal,
    place: str,
    parts: Sequence[PartRecord],
    lineage_id: UUID | None = None,
    version: dict[str, Any] | None = None,
) -> list[ShownPart]:
    """Each part with its band (other lineages' decisions only) and, given a version's action,
    whether it (and each of its items) is still in it."""
    bands = feedback.part_bands_in(conn, principal, place, parts, lineage_id)
    comment = (version or {}).get("comment")
    labels = list((version or {}).get("labels") or ())
    return [
        ShownPart(
            part,
            figure,
            version is not None and in_version(part, comment, labels),
            tuple(
                version is not None and item_in_version(part, item, comment, labels)
                for item in part.items
            ),
        )
        for part, figure in zip(parts, bands, strict=True)
    ]


def run_parts(db: Database, principal: Principal, run_id: UUID, place: str) -> list[ShownPart]:
    """A run's parts, kept or left out, in the order it made them (none for a run before they
    were stored)."""
    with db.tenant(principal.tenant_id) as conn:
        parts = part_store.parts_of_run(conn, principal.tenant_id, run_id)
        return shown_in(conn, principal, place, parts) if parts else []


def lineage_parts_in(conn: Connection, principal: Principal, proposal: Proposal) -> list[ShownPart]:
    """The parts of the run that proposed ``proposal``'s lineage, each marked as still in this
    version or not (none for a proposal no run made)."""
    parts = part_store.parts_of_lineages(conn, principal.tenant_id, [proposal.lineage_id])
    mine = parts.get(proposal.lineage_id, ())
    if not mine:
        return []
    place = parse_action(proposal.action).repository
    return shown_in(conn, principal, place, mine, proposal.lineage_id, proposal.action)


def runs_parts_in(
    conn: Connection, principal: Principal, runs: Sequence[tuple[UUID, str]]
) -> dict[UUID, list[ShownPart]]:
    """The parts of several runs (run id, repository), each with its band; the decisions of
    each repository read once."""
    stored = part_store.parts_of_runs(conn, principal.tenant_id, [run for run, _ in runs])
    places = {place for run, place in runs if run in stored}
    found = {
        place: feedback.decision_examples_in(conn, principal, feedback.DAYS, place)
        for place in places
    }
    shown: dict[UUID, list[ShownPart]] = {}
    for run, place in runs:
        parts = stored.get(run, ())
        if parts:
            bands = feedback.bands_of(found[place], parts, None)
            shown[run] = [ShownPart(p, b) for p, b in zip(parts, bands, strict=True)]
    return shown
