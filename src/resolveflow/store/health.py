"""What readiness reads, as the runtime role: which migrations are missing, and the queue's backlog."""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.store.database import Connection
from resolveflow.store.migrate import available_migrations
from resolveflow.store.queries import q


@dataclass(frozen=True)
class QueueBacklog:
    waiting: int
    oldest_seconds: float


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
    assert row is not None  # an aggregate always answers one row
    return QueueBacklog(int(row["waiting"]), float(row["oldest_seconds"]))
