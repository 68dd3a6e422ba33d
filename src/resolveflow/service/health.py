"""``/readyz``'s checks: the database answers, its schema is the one this code installs, and
the job queue can be read. Each is a name, whether it passed, and one line saying why; the
first failure does not hide the others."""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.errors import ResolveFlowError
from resolveflow.store import health as store
from resolveflow.store.database import Database


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def readiness(db: Database) -> list[Check]:
    try:
        with db.unscoped() as conn:
            behind = store.migrations_behind(conn)
    except ResolveFlowError as exc:
        unreachable = f"unreachable: {exc.message}"
        return [
            Check("database", False, unreachable),
            Check("migrations", False, "not checked: the database is unreachable"),
            Check("queue", False, "not checked: the database is unreachable"),
        ]
    checks = [Check("database", True, "answers")]
    if not behind:
        checks.append(Check("migrations", True, "current"))
    else:
        missing = ", ".join(behind)
        checks.append(
            Check("migrations", False, f"not applied: {missing} (resolveflow db upgrade)")
        )
    checks.append(_queue(db))
    return checks


def _queue(db: Database) -> Check:
    try:
        with db.unscoped() as conn:
            backlog = store.queue_backlog(conn)
    except ResolveFlowError as exc:
        return Check("queue", False, f"cannot be read: {exc.message}")
    return Check(
        "queue", True, f"{backlog.waiting} job(s) waiting, oldest {backlog.oldest_seconds:.0f} s"
    )
