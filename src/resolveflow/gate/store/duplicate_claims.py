"""Which ``github.issue_close_duplicate`` holds an issue: one in flight per issue, held by the
database (``close_duplicate_claims``, migration 0036). A proposal's insert claims its issue (a
trigger); a rejection or the execution's end lets the claim go; before its notice an execution
takes its lineage's claim again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from uuid import UUID

from psycopg import errors as pg_errors

from resolveflow.errors import AlreadyExists
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q

ONE_IN_FLIGHT = "close_duplicate_claims_one_in_flight"  # the partial unique index


@dataclass(frozen=True)
class Holder:
    """The close-as-duplicate in flight for an issue."""

    lineage_id: UUID
    proposal_id: UUID  # its latest version
    original: int


def holder(conn: Connection, tenant_id: UUID, repository: str, issue: int) -> Holder | None:
    return typed.one(
        conn,
        Holder,
        q("gate/store/duplicate_claims", "holder"),
        {"tenant_id": tenant_id, "repository": repository, "issue": issue},
    )


def in_flight(repository: str, issue: int, held: Holder | None) -> AlreadyExists:
    """The one line that refuses a second close-as-duplicate of ``repository#issue``."""
    which = f"proposal {held.proposal_id} (as a duplicate of #{held.original})" if held else "one"
    return AlreadyExists(
        f"{repository}#{issue} already has a close-as-duplicate in flight: {which}; "
        "reject it, or wait until it ends, to propose another"
    )


def _is_one_in_flight(exc: pg_errors.UniqueViolation) -> bool:
    return exc.diag.constraint_name == ONE_IN_FLIGHT


@contextmanager
def refused_when_held(
    conn: Connection, tenant_id: UUID, repository: str, issue: int
) -> Iterator[None]:
    """Around the insert of a close-as-duplicate's version (whose trigger claims the issue), in a
    savepoint: the database refusing it because another lineage holds the issue becomes
    ``AlreadyExists`` naming that lineage, read after the refusal (the one that won a race)."""
    try:
        with conn.transaction():
            yield
    except pg_errors.UniqueViolation as exc:
        if not _is_one_in_flight(exc):
            raise
        raise in_flight(repository, issue, holder(conn, tenant_id, repository, issue)) from None


def take(
    conn: Connection, tenant_id: UUID, proposal_id: UUID, repository: str, issue: int
) -> Holder | None:
    """Claim the issue for ``proposal_id`` (its lineage's claim taken again if it was let go, or
    taken for the first time by a lineage older than the claims). None when ``proposal_id``
    holds it; otherwise whoever does (None there too would mean nobody, which the claim just
    taken rules out)."""
    try:
        with conn.transaction():  # a savepoint: a refusal leaves the caller's transaction usable
            conn.execute(
                q("gate/store/duplicate_claims", "take"),
                {"tenant_id": tenant_id, "proposal_id": proposal_id},
            )
    except pg_errors.UniqueViolation as exc:
        if not _is_one_in_flight(exc):
            raise
    held = holder(conn, tenant_id, repository, issue)
    return None if held is not None and held.proposal_id == proposal_id else held
