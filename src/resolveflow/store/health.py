"""What readiness reads, as the runtime role: which migrations are missing, the queue's backlog
and how many workers beat lately."""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.store.database import Connection
from resolveflow.store.migrate import available_migrations
from resolveflow.store.queries import q

# procrastinate's workers beat every 10 s: three beats missed and a worker no longer counts.
LIVE_WORKER_SECONDS = 30


@dataclass(frozen=True)
class QueueBacklog:
    waiting: int
    oldest_seconds: float
    live_workers: int = 0


def migrations_behind(conn: Connection) -> list[str]:
    """This code's migrations that the database has not applied, or applied from another text
    (versions, sorted)."""
    applied = {row["version"]: row["checksum"] for row in conn.execute(q("migrations", "applied"))}
    return [
        migration.version
        for migration in available_migrations()
        if applied.get(migration.version) != migration.checksum
    ]


def queue_backlog(conn: Connection) -> QueueBacklog:
    row = conn.execute(q("health", "queue_waiting")).fetchone()
    live = conn.execute(q("health", "live_workers"), {"seconds": LIVE_WORKER_SECONDS}).fetchone()
    assert row is not None and live is not None  # an aggregate always answers one row
    return QueueBacklog(int(row["waiting"]), float(row["oldest_seconds"]), int(live["live"]))
