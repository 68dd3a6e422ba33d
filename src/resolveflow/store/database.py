"""Connections: one pool whose every connection runs as the non-superuser runtime role.

Superusers and table owners bypass row-level security, so the pool switches each new connection to
``resolveflow_app`` before the application sees it. The tenant is set per transaction with
``set_config(..., is_local => true)``, so it ends with the transaction and never leaks to the next
user of a pooled connection.
"""

from __future__ import annotations

import logging
import select
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any
from uuid import UUID

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from resolveflow import errors as domain_errors
from resolveflow.errors import ResolveFlowError, StoreUnavailable

logger = logging.getLogger(__name__)

Connection = psycopg.Connection[dict[str, Any]]

# Constraint name -> the domain error a person should see when it fires.
_CONSTRAINT_ERRORS: dict[str, type[ResolveFlowError]] = {
    "tenants_name_key": domain_errors.AlreadyExists,
    "principals_subject_unique": domain_errors.AlreadyExists,
    "principals_token_unique": domain_errors.AlreadyExists,
    "repositories_unique": domain_errors.AlreadyExists,
    "runs_pkey": domain_errors.AlreadyExists,  # a run id chosen beforehand (a webhook's claim)
    "approvals_one_decision": domain_errors.AlreadyDecided,
    "executions_one_per_proposal": domain_errors.AlreadyExecuted,
    "executions_one_per_approval": domain_errors.AlreadyExecuted,
    "executions_idempotency_key": domain_errors.AlreadyExecuted,
    "proposals_version_unique": domain_errors.SupersededProposal,
    "close_duplicate_claims_one_in_flight": domain_errors.AlreadyExists,
}
# The line a constraint's error says, where its class's own words would not tell what to do.
_CONSTRAINT_MESSAGES: dict[str, str] = {
    "close_duplicate_claims_one_in_flight": (
        "another close-as-duplicate of this issue is in flight (proposals list shows it): "
        "reject it, or wait until it ends"
    ),
}


def translate_error(exc: psycopg.Error) -> ResolveFlowError:
    """Turn a database error into the domain error it stands for."""
    diag = exc.diag
    if isinstance(exc, pg_errors.UniqueViolation) and diag.constraint_name in _CONSTRAINT_ERRORS:
        name = diag.constraint_name
        return _CONSTRAINT_ERRORS[name](_CONSTRAINT_MESSAGES.get(name))
    if isinstance(exc, pg_errors.ForeignKeyViolation):
        return domain_errors.NotFound(
            f"a referenced record does not exist ({diag.constraint_name})"
        )
    if isinstance(exc, pg_errors.CheckViolation):
        return domain_errors.InvalidInput(f"rejected by the database: {diag.constraint_name}")
    if exc.sqlstate == "RFX01":
        return domain_errors.InvalidTransition(diag.message_primary)
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return domain_errors.NotAuthorized(f"the database refused: {diag.message_primary}")
    if isinstance(exc, pg_errors.QueryCanceled):
        return StoreUnavailable("a database statement timed out")
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable(f"the database is unreachable: {_first_line(str(exc))}")
    return ResolveFlowError(f"database error: {_first_line(str(exc))}")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no detail"


class IdleCheck:
    """Ping a pooled connection before handing it out only when it has sat idle for a while.

    A connection returned moments ago is almost certainly alive, and the ping is a round trip on
    every checkout (about 5% of the executor's throughput). One whose socket has something to
    read is pinged too: that is how a terminated backend shows (load and chaos, issue 17). One
    that dies after checkout is still caught: its statement fails with ``StoreUnavailable`` and
    the pool drops it on return.
    """

    def __init__(self, idle_seconds: float) -> None:
        self._idle_seconds = idle_seconds
        self._returned_at: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = (
            weakref.WeakKeyDictionary()
        )

    def returned(self, conn: psycopg.Connection[Any]) -> None:
        self._returned_at[conn] = time.monotonic()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        returned_at = self._returned_at.get(conn)
        if (
            returned_at is None
            or time.monotonic() - returned_at > self._idle_seconds
            or _has_unread_input(conn)
        ):
            ConnectionPool.check_connection(conn)


def _has_unread_input(conn: psycopg.Connection[Any]) -> bool:
    """An idle connection has nothing to read; one that does was most likely told it is being
    terminated (``pg_terminate_backend``, a server shutting down, a failover). Asking the
    socket costs a system call, not a round trip, so every checkout can afford it."""
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.OperationalError):
        return True  # no usable socket: let the ping find out
    return bool(readable)


class Database:
    """The application's view of Postgres: tenant-scoped and global transactions from one pool.

    After an outage the pool must find the database again within seconds of its return. psycopg_pool
    replaces a lost connection in the background, waiting 1 s, then twice as long after each
    failure, for ``reconnect_timeout`` (5 minutes by default): after a 3-minute outage its next
    try could come a minute after the database was back, and every request until then waited out
    the connect timeout and answered 503. ``reconnect_seconds`` (5 s) ends each series of tries
    early instead; the next request that needs a connection starts a new one at once. So during an
    outage the database is tried a few times per ``reconnect_seconds`` while requests come, never
    while none do, and after it the first request (or a try under way, at most a few seconds off)
    connects.
    """

    def __init__(
        self,
        url: str,
        *,
        max_size: int = 10,
        connect_timeout: float = 10.0,
        statement_timeout_ms: int = 30_000,
        check_idle_seconds: float = 2.0,
        reconnect_seconds: float = 5.0,
    ) -> None:
        self.url = url
        self._connect_timeout = connect_timeout
        self._reconnect_seconds = reconnect_seconds
        self._statement_timeout_ms = statement_timeout_ms
        self._idle_check = IdleCheck(check_idle_seconds)
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"connect_timeout": max(1, int(connect_timeout)), "row_factory": dict_row},
            configure=self._configure,
            check=self._idle_check.check,
            reset=self._idle_check.returned,
            timeout=connect_timeout,
            open=False,
            name="resolveflow",
            reconnect_timeout=reconnect_seconds,
        )

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SET ROLE resolveflow_app")
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false)", [str(self._statement_timeout_ms)]
        )
        conn.commit()

    def open(self) -> Database:
        try:
            self._pool.open(wait=True, timeout=self._connect_timeout)
        except PoolTimeout as exc:
            raise StoreUnavailable(
                f"could not connect to the database within {self._connect_timeout}s"
            ) from exc
        return self

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Database:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self, tenant_id: UUID | None, pipelined: bool = False) -> Iterator[Connection]:
        try:
            with (
                self._pool.connection() as conn,
                conn.pipeline() if pipelined else nullcontext(),
                conn.transaction(),
            ):
                if tenant_id is not None:
                    conn.execute(
                        "SELECT set_config('resolveflow.tenant_id', %s, true)", [str(tenant_id)]
                    )
                yield conn
        except psycopg.Error as exc:
            raise translate_error(exc) from exc
        except PoolTimeout as exc:
            raise StoreUnavailable("no database connection became available in time") from exc

    def tenant(
        self, tenant_id: UUID, *, pipelined: bool = False
    ) -> AbstractContextManager[Connection]:
        """A transaction that sees only ``tenant_id``'s rows.

        ``pipelined`` sends BEGIN, the tenant setting and every statement whose result is not
        fetched together with the next one that is (psycopg's pipeline mode): the executor's hot
        path saves most of its round trips. An error then surfaces at that next fetch or at
        COMMIT, still inside this block, so the transaction rolls back as usual.
        """
        return self._transaction(tenant_id, pipelined)

    def unscoped(self) -> AbstractContextManager[Connection]:
        """A transaction with no tenant set: only non-tenant tables (tenants, migrations) are visible."""
        return self._transaction(None)

    def autocommit_pool(self, max_size: int = 4) -> ConnectionPool[Any]:
        """A separate small pool of autocommit connections, also as the runtime role.

        LangGraph's checkpoint saver wants autocommit connections, which cannot carry a
        transaction-local tenant; its tables therefore live outside row-level security.
        """
        pool: ConnectionPool[Any] = ConnectionPool(
            self.url,
            min_size=1,
            max_size=max_size,
            kwargs={
                "connect_timeout": max(1, int(self._connect_timeout)),
                "autocommit": True,
                "prepare_threshold": 0,
                "row_factory": dict_row,
            },
            configure=self._configure_autocommit,
            check=ConnectionPool.check_connection,
            timeout=self._connect_timeout,
            open=False,
            name="resolveflow-checkpoints",
            reconnect_timeout=self._reconnect_seconds,
        )
        pool.open(wait=True, timeout=self._connect_timeout)
        return pool

    def _configure_autocommit(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SET ROLE resolveflow_app")
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false)", [str(self._statement_timeout_ms)]
        )

    def owner_connection(self) -> psycopg.Connection[dict[str, Any]]:
        """A direct connection as the configured (owner) user, for migrations only."""
        try:
            return psycopg.connect(
                self.url,
                connect_timeout=max(1, int(self._connect_timeout)),
                row_factory=dict_row,
                autocommit=True,
            )
        except psycopg.Error as exc:
            raise translate_error(exc) from exc
