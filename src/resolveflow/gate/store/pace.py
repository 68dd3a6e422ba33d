"""Write pacing's buckets (one row per credential) and the slot an execution holds."""

from __future__ import annotations

from datetime import datetime

from resolveflow.domain.records import Execution
from resolveflow.gate.domain.pace import Bucket, Pace, full_bucket, reserve
from resolveflow.gate.store.executions import to_execution
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def reserve_slot(conn: Connection, pace_key: str, pace: Pace) -> tuple[datetime, datetime]:
    """Take the credential's next slot in ``conn``'s transaction: (slot, the database's now).

    The bucket's row stays locked until the transaction ends, so keep it short."""
    conn.execute(
        q("gate/store/pace", "ensure_bucket"), {"pace_key": pace_key, "burst": float(pace.burst)}
    )
    row = conn.execute(q("gate/store/pace", "lock_bucket"), {"pace_key": pace_key}).fetchone()
    assert row is not None  # ensured just above, in this transaction
    now: datetime = row["now"]
    bucket = Bucket(row["tokens"], row["refilled_at"], row["next_at"])
    if bucket.tokens > pace.burst:  # the burst was lowered since: never more than it allows now
        bucket = full_bucket(pace, bucket.refilled_at)
    slot, after = reserve(pace, bucket, now)
    conn.execute(
        q("gate/store/pace", "store_bucket"),
        {
            "pace_key": pace_key,
            "tokens": after.tokens,
            "refilled_at": after.refilled_at,
            "next_at": after.next_at,
        },
    )
    return slot, now


def database_now(conn: Connection) -> datetime:
    row = conn.execute(q("gate/store/pace", "database_now")).fetchone()
    assert row is not None
    now: datetime = row["now"]
    return now


def release_for_pace(
    conn: Connection, execution: Execution, *, owner: str, slot: datetime, detail: str
) -> Execution | None:
    row = conn.execute(
        q("gate/store/pace", "release_for_pace"),
        {
            "tenant_id": execution.tenant_id,
            "id": execution.id,
            "owner": owner,
            "slot": slot,
            "detail": detail,
        },
    ).fetchone()
    return to_execution(row) if row else None


def use_held_slot(conn: Connection, execution: Execution, *, owner: str) -> None:
    conn.execute(
        q("gate/store/pace", "use_held_slot"),
        {"tenant_id": execution.tenant_id, "id": execution.id, "owner": owner},
    )
