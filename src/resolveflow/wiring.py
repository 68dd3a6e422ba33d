"""Everything is wired here: settings -> database, GitHub client, executor, reconciler."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from psycopg_pool import ConnectionPool

from resolveflow.adapters.github import GitHub
from resolveflow.config import Settings
from resolveflow.domain.errors import ConfigError
from resolveflow.domain.triage_policy import DEFAULT_POLICY, PolicyFile, parse_policy
from resolveflow.execution.gate import Executor, GateSettings
from resolveflow.execution.reconcile import Reconciler
from resolveflow.store.database import Connection, Database
from resolveflow.store.embedded import embedded_database_url
from resolveflow.store.migrate import upgrade
from resolveflow.workflows.checkpoints import checkpoint_saver
from resolveflow.workflows.runs import RunController
from resolveflow.workflows.triage import TriageDeps, build_triage_graph

logger = logging.getLogger(__name__)

LEASE_TIMEOUT_RATIO = 5


def database_url(settings: Settings) -> str:
    if settings.database_url is not None:
        return settings.database_url.get_secret_value()
    return embedded_database_url(settings.home)


def gate_settings(settings: Settings) -> GateSettings:
    # The lease must outlive one whole request, or a reconciler could take over mid-request. httpx
    # applies the timeout per phase (pool wait, connect, write, read), so one call can take up to
    # about four timeouts; five leaves a margin.
    if settings.lease_seconds < settings.github_timeout_seconds * LEASE_TIMEOUT_RATIO:
        raise ConfigError(
            f"RESOLVEFLOW_LEASE_SECONDS must be at least {LEASE_TIMEOUT_RATIO} times "
            "RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS"
        )
    return GateSettings(
        lease_seconds=settings.lease_seconds,
        rate_limit_max_waits=settings.rate_limit_max_waits,
        rate_limit_max_wait_seconds=settings.rate_limit_max_wait_seconds,
        unavailable_retry_seconds=settings.unavailable_retry_seconds,
    )


def github_client(settings: Settings) -> GitHub:
    from resolveflow.adapters.githubkit_client import GitHubKitClient

    token = settings.github_token.get_secret_value() if settings.github_token else None
    return GitHubKitClient(settings.github_api_url, token, settings.github_timeout_seconds)


@dataclass
class App:
    settings: Settings
    db: Database
    _github: GitHub | None = field(default=None, repr=False)
    _checkpoint_pool: ConnectionPool[Any] | None = field(default=None, repr=False)

    @property
    def github(self) -> GitHub:
        if self._github is None:
            self._github = github_client(self.settings)
        return self._github

    def executor(self) -> Executor:
        return Executor(self.db, self.github, gate_settings(self.settings))

    def reconciler(self) -> Reconciler:
        return Reconciler(self.db, self.github, gate_settings(self.settings))

    def policy(self) -> PolicyFile:
        path = self.settings.policy_file
        if path is None:
            return DEFAULT_POLICY
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the policy file {path}: {exc.strerror}") from None
        return parse_policy(text, str(path))

    def run_controller(self) -> RunController:
        """The triage graph with its Postgres checkpointer, and the run lease around it."""
        if self._checkpoint_pool is None:
            self._checkpoint_pool = self.db.autocommit_pool()
        deps = TriageDeps(
            db=self.db, github=self.github, policy=self.policy, executor=self.executor
        )
        graph = build_triage_graph(deps, checkpoint_saver(self._checkpoint_pool))
        return RunController(
            db=self.db,
            graph=graph,
            lease_seconds=self.settings.run_lease_seconds,
            approval_ttl_seconds=self.settings.approval_ttl_seconds,
        )

    def close(self) -> None:
        if self._checkpoint_pool is not None:
            self._checkpoint_pool.close()


def migrate(url: str) -> list[str]:
    """SQL migrations, then the LangGraph checkpoint tables (created by the saver's own setup),
    both as the owner; the runtime role is then granted use of the checkpoint tables."""
    probe = Database(url)
    with probe.owner_connection() as conn:
        return [m.version for m in upgrade(conn, after=setup_checkpoints)]


@contextmanager
def open_app(settings: Settings, *, auto_migrate: bool = True) -> Iterator[App]:
    """Open the database (starting the embedded one if needed), bring its schema up to date."""
    url = database_url(settings)
    if auto_migrate:
        migrate(url)
    db = Database(
        url,
        max_size=settings.db_pool_max_size,
        connect_timeout=settings.db_connect_timeout_seconds,
        statement_timeout_ms=settings.db_statement_timeout_ms,
    )
    with db:
        app = App(settings=settings, db=db)
        try:
            yield app
        finally:
            app.close()


def setup_checkpoints(conn: Connection) -> None:
    """The saver's setup is idempotent (it keeps its own migration table)."""
    from resolveflow.store.queries import q

    checkpoint_saver(conn).setup()
    granted = conn.execute(q("runs", "checkpoint_tables_granted")).fetchone()
    if not (granted and granted["granted"]):
        conn.execute(q("runs", "grant_checkpoint_tables"))
