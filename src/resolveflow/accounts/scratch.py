"""Scratch tenants for evaluations: created through the normal path, marked ``scratch`` so that
no command picks one as the only tenant nor lists it (workers still go through it: an evaluation
runs the real flows in its tenant), removed afterwards.

``scratch_tenant`` is removed when its evaluation ends. ``kept_index`` is one an evaluation keeps
for its next run on the same corpus (``eval answers``): found by the corpus's key, or made, filled
by the caller and then kept under that key; only the ``KEPT_INDEXES`` most recently used are kept.

Removal deletes the tenant row through the owner connection (the runtime role may not delete
tenants, nor mark a kept index); the query only matches scratch tenants. A scratch tenant left
behind by a killed run is removed by the next evaluation once it is a day old.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.store import documents as store
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

STALE_AFTER_SECONDS = 86_400.0
# Kept indexes of distinct corpora: the dev corpora one works on at once (runbooks, R's pages, the
# Rust and Cargo books) fit, and a few hundred pages each cost tens of megabytes.
KEPT_INDEXES = 4


def _remove(db: Database, tenant_id: UUID) -> None:
    with db.owner_connection() as conn:
        store.delete_scratch_tenant(conn, tenant_id)


def _remove_stale(db: Database) -> None:
    with db.owner_connection() as conn:
        stale = store.stale_scratch_tenants(conn, STALE_AFTER_SECONDS)
    for tenant_id in stale:
        logger.warning("removing stale scratch tenant", extra={"tenant_id": str(tenant_id)})
        _remove(db, tenant_id)


def _new(db: Database) -> UUID:
    name = store.SCRATCH_TENANT_PREFIX + secrets.token_hex(6)
    return admin.add_tenant(db, name, scratch=True).id


@contextmanager
def scratch_tenant(db: Database) -> Iterator[UUID]:
    _remove_stale(db)
    tenant_id = _new(db)
    try:
        yield tenant_id
    finally:
        _remove(db, tenant_id)


@dataclass(frozen=True)
class KeptIndex:
    tenant_id: UUID
    reused: bool  # False: the index is new and empty; the caller fills it


@contextmanager
def kept_index(db: Database, key: str, keep: int = KEPT_INDEXES) -> Iterator[KeptIndex]:
    """The scratch tenant whose index was kept for ``key``; else a new one, kept for ``key``
    when the block ends without an error (removed when it raises, or when a concurrent run kept
    the same key first). Past ``keep`` kept indexes, the least recently used are removed."""
    _remove_stale(db)
    with db.owner_connection() as conn:
        found = store.kept_index(conn, key)
        if found is not None:
            store.use_kept_index(conn, found)
    if found is not None:
        yield KeptIndex(found, reused=True)
        return
    tenant_id = _new(db)
    try:
        yield KeptIndex(tenant_id, reused=False)
    except BaseException:
        _remove(db, tenant_id)
        raise
    with db.owner_connection() as conn:
        kept = store.keep_index(conn, tenant_id, key)
        beyond = store.kept_indexes_beyond(conn, keep)
    if not kept:
        _remove(db, tenant_id)
    for old in beyond:
        logger.info("removing a kept evaluation index", extra={"tenant_id": str(old)})
        _remove(db, old)
