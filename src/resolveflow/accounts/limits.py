"""Per-principal daily caps (runs started, model calls), counted in the database.

The count and the check are one SQL statement, so concurrent requests cannot overshoot. Days are
UTC days. A refused request counts nothing.
"""

from __future__ import annotations

import logging
from enum import StrEnum

from resolveflow.domain.records import Principal
from resolveflow.errors import Unavailable
from resolveflow.store import usage as usage_store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)


class LimitKind(StrEnum):
    # Model calls have their own budget (accounts/model_budget.py), reserved before each call
    # (RESOLVEFLOW_MODEL_DAILY_CALLS_PER_PRINCIPAL); it is spent with the same LimitExceeded.
    RUNS = "runs"


_SETTING = {LimitKind.RUNS: "RESOLVEFLOW_LIMIT_RUNS_PER_DAY"}
_WHAT = {LimitKind.RUNS: "runs started"}


class LimitExceeded(Unavailable):
    """A daily limit was reached; try again tomorrow (UTC) or ask an operator to raise it.

    The one error of every daily limit: runs started, and model calls (the model budget). The
    web answers it with 429, the CLI with its category's exit code."""


def consume(
    db: Database, principal: Principal, kind: LimitKind, limit: int, *, setting: str | None = None
) -> int:
    """Count one use of ``kind`` for ``principal`` today; raise ``LimitExceeded`` at the cap."""
    with db.tenant(principal.tenant_id) as conn:
        used = usage_store.consume_usage(
            conn,
            tenant_id=principal.tenant_id,
            principal_id=principal.id,
            kind=kind.value,
            limit=limit,
        )
    if used is None:
        logger.info(
            "daily limit reached", extra={"principal": principal.subject, "kind": kind.value}
        )
        raise LimitExceeded(
            f"daily limit reached: {principal.subject} may have {limit} {_WHAT[kind]} per day "
            f"({setting or _SETTING[kind]}); the count starts again at 00:00 UTC"
        )
    return used


def usage(db: Database, principal: Principal) -> dict[str, int]:
    with db.tenant(principal.tenant_id) as conn:
        counts = usage_store.usage_today(conn, principal.tenant_id, principal.id)
    return {kind.value: counts.get(kind.value, 0) for kind in LimitKind}
