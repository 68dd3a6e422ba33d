"""The parts of triage runs' results (``triage_parts``): written with the run's proposal, read by
the run page, the inbox, the proposal page and the decisions (``gate/feedback.py``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from resolveflow.domain.vocabulary import SuggestionKind
from resolveflow.gate.domain.parts import PartItemRecord, PartRecord
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def insert_parts(
    conn: Connection,
    tenant_id: UUID,
    run_id: UUID,
    proposal_id: UUID | None,
    parts: Sequence[PartRecord],
) -> None:
    """In the caller's transaction, the one that records the run's proposal or its no_action
    status. A run's node re-running after a crash writes nothing twice."""
    for position, part in enumerate(parts):
        conn.execute(
            q("gate/store/parts", "insert_part"),
            {
                "run_id": run_id,
                "name": part.name,
                "tenant_id": tenant_id,
                "proposal_id": proposal_id,
                "position": position,
                "kind": part.kind.value if part.kind else None,
                "score": part.score,
                "floor": part.floor,
                "left_out": part.left_out,
                "public": part.public,
                "paragraph": part.paragraph,
                "items": Jsonb([item.as_json() for item in part.items]),
            },
        )


@dataclass(frozen=True)
class _PartRow:
    name: str
    kind: str | None
    score: float | None
    floor: float | None
    left_out: str | None
    public: bool
    paragraph: str | None
    items: list[dict[str, Any]]

    def record(self) -> PartRecord:
        return PartRecord(
            self.name,
            SuggestionKind(self.kind) if self.kind in set(SuggestionKind) else None,
            self.score,
            self.floor,
            self.left_out,
            self.public,
            self.paragraph,
            tuple(PartItemRecord.from_json(item) for item in self.items if isinstance(item, dict)),
        )


@dataclass(frozen=True)
class _LineagePartRow(_PartRow):
    lineage_id: UUID


def parts_of_run(conn: Connection, tenant_id: UUID, run_id: UUID) -> list[PartRecord]:
    params = {"tenant_id": tenant_id, "run_id": run_id}
    rows = typed.every(conn, _PartRow, q("gate/store/parts", "parts_of_run"), params)
    return [row.record() for row in rows]


def parts_of_lineages(
    conn: Connection, tenant_id: UUID, lineage_ids: Sequence[UUID]
) -> dict[UUID, tuple[PartRecord, ...]]:
    if not lineage_ids:
        return {}
    params = {"tenant_id": tenant_id, "lineage_ids": list(lineage_ids)}
    rows = typed.every(conn, _LineagePartRow, q("gate/store/parts", "parts_of_lineages"), params)
    return _grouped((row.lineage_id, row.record()) for row in rows)


@dataclass(frozen=True)
class _RunPartRow(_PartRow):
    run_id: UUID


def parts_of_runs(
    conn: Connection, tenant_id: UUID, run_ids: Sequence[UUID]
) -> dict[UUID, tuple[PartRecord, ...]]:
    if not run_ids:
        return {}
    params = {"tenant_id": tenant_id, "run_ids": list(run_ids)}
    rows = typed.every(conn, _RunPartRow, q("gate/store/parts", "parts_of_runs"), params)
    return _grouped((row.run_id, row.record()) for row in rows)


def _grouped(rows: Iterable[tuple[UUID, PartRecord]]) -> dict[UUID, tuple[PartRecord, ...]]:
    """Parts by the id they belong to, in the order the query gave them."""
    found: dict[UUID, list[PartRecord]] = defaultdict(list)
    for key, record in rows:
        found[key].append(record)
    return {key: tuple(parts) for key, parts in found.items()}
