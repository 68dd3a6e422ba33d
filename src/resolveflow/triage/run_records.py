"""Triage's runs as the gate reads them (``gate.run_records.RunRecords``): a run's status, its
lease and the labels its evidence saw, over triage's run store. The wiring installs
``TRIAGE_RUNS`` (``bootstrap/kinds.py``), so the gate decides on a run's proposal without
importing triage."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from resolveflow.domain.vocabulary import RunStatus

if TYPE_CHECKING:
    from resolveflow.store.database import Connection


class TriageRuns:
    """``gate.run_records.RunRecords`` over triage's run store, imported when the gate first reads
    a run rather than with the wiring every command imports."""

    def status(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> RunStatus | None:
        from resolveflow.triage.store import runs as run_store

        run = run_store.find_run(conn, tenant_id, run_id)
        return None if run is None else RunStatus(run.status)

    def acquire_lease(
        self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str, seconds: float
    ) -> bool:
        from resolveflow.triage.store import runs as run_store

        return run_store.acquire_lease(conn, tenant_id, run_id, owner, seconds)

    def release_lease(self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str) -> None:
        from resolveflow.triage.store import runs as run_store

        run_store.release_lease(conn, tenant_id, run_id, owner)

    def labels_seen(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> frozenset[str] | None:
        from resolveflow.triage.store import runs as run_store

        snapshot = run_store.snapshot_for_run(conn, tenant_id, run_id)
        seen = (snapshot.raw if snapshot else {}).get("repository_labels")
        return frozenset(str(name) for name in seen) if isinstance(seen, list) else None


TRIAGE_RUNS = TriageRuns()
