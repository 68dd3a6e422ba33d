"""Write pacing's wiring: the paces the settings ask for, and the job that picks an execution up
when its slot comes (``gate/pace.py``)."""

from __future__ import annotations

from resolveflow.config import PaceConfig
from resolveflow.domain.records import Execution
from resolveflow.gate.domain.pace import Pace, PaceTarget
from resolveflow.gate.lease import PaceSettings
from resolveflow.store.database import Connection


def pace_settings(config: PaceConfig) -> PaceSettings:
    if not config.enabled:
        return PaceSettings()
    paces = {
        target: Pace.per_hour(
            getattr(config, f"{target.value}_min_interval_seconds"),
            getattr(config, f"{target.value}_burst"),
            getattr(config, f"{target.value}_per_hour"),
        )
        for target in PaceTarget
    }
    return PaceSettings(paces=paces)


def schedule_execute(conn: Connection, execution: Execution, wait_seconds: float) -> None:
    """Queue the ``execute`` job for the slot's time, in the transaction that gave the execution
    back (a worker picks it up then; without workers, the next drain finds it due)."""
    from resolveflow.store import queue

    queue.defer(
        conn,
        queue.EXECUTE,
        queueing_lock=f"execute:{execution.id}",
        schedule_in_seconds=max(0.0, wait_seconds),
        tenant_id=str(execution.tenant_id),
        execution_id=str(execution.id),
    )
