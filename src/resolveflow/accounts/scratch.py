"""A scratch tenant for one evaluation: created through the normal path, removed afterwards.

Removal deletes the tenant row through the owner connection (the runtime role may not delete
tenants); the query only matches names with the scratch prefix. A scratch tenant left behind by a
killed run is removed by the next evaluation once it is a day old.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.store import documents as store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

STALE_AFTER_SECONDS = 86_400.0


def _remove(db: Database, tenant_id: UUID) -> None:
    with db.owner_connection() as conn:
        store.delete_scratch_tenant(conn, tenant_id)


@contextmanager
def scratch_tenant(db: Database) -> Iterator[UUID]:
    with db.owner_connection() as conn:
        stale = store.stale_scratch_tenants(conn, STALE_AFTER_SECONDS)
    for tenant_id in stale:
        logger.warning("removing stale scratch tenant", extra={"tenant_id": str(tenant_id)})
        _remove(db, tenant_id)
    tenant = admin.add_tenant(db, store.SCRATCH_TENANT_PREFIX + secrets.token_hex(6))
    try:
        yield tenant.id
    finally:
        _remove(db, tenant.id)
