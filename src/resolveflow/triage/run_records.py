"""Triage's runs as the gate reads them (``gate.run_records.RunRecords``): a run's status, its
lease and the labels its evidence saw, over triage's run store. The wiring installs
``TRIAGE_RUNS`` (``bootstrap/kinds.py``), so the gate decides on a run's proposal without
importing triage."""

from __future__ import annotations

from uuid import UUID

from resolveflow.domain.vocabulary import RunStatus
from resolveflow.store.database import Connection
from resolveflow.triage.store import runs as run_store


class TriageRuns:
    """``gate.run_records.RunRecords`` over triage's run store."""

    def status(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> RunStatus | None:
        run = run_store.find_run(conn, tenant_id, run_id)
        return None if run is None else RunStatus(run.status)

    def acquire_lease(
        self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str, seconds: float
    ) -> bool:
        return run_store.acquire_lease(conn, tenant_id, run_id, owner, seconds)

    def release_lease(self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str) -> None:
        run_store.release_lease(conn, tenant_id, run_id, owner)

    def labels_seen(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> frozenset[str] | None:
        snapshot = run_store.snapshot_for_run(conn, tenant_id, run_id)
        seen = (snapshot.raw if snapshot else {}).get("repository_labels")
        return frozenset(str(name) for name in seen) if isinstance(seen, list) else None


TRIAGE_RUNS = TriageRuns()
