"""What the gate reads and holds of the run a proposal belongs to, without importing the
product that runs it (triage, issue 27): deciding holds the run's lease and requires it to wait at
its pause; the approval checks take the repository's labels from the run's evidence.

The wiring installs the runs (``bootstrap/kinds.py``) before anything decides.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from resolveflow.domain.vocabulary import RunStatus
from resolveflow.store.database import Connection


class RunRecords(Protocol):
    def status(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> RunStatus | None:
        """The run's status; None when the tenant has no such run."""
        ...

    def acquire_lease(
        self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str, seconds: float
    ) -> bool:
        """Taken only if free or expired."""
        ...

    def release_lease(
        self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str
    ) -> None: ...

    def labels_seen(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> frozenset[str] | None:
        """The repository's labels as the run's evidence saw them; None without them."""
        ...


_installed: list[RunRecords] = []


def install(runs: RunRecords) -> None:
    """The wiring's, once per process (the same object again is fine)."""
    if _installed and _installed[0] is not runs:
        raise RuntimeError("the runs are installed twice")
    _installed[:] = [runs]


def runs() -> RunRecords:
    if not _installed:
        raise RuntimeError("no runs installed in this process (bootstrap installs them)")
    return _installed[0]
