"""Everything is wired here: settings -> database, GitHub client, executor, reconciler."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from resolveflow.adapters.github import GitHub
from resolveflow.config import Settings
from resolveflow.domain.errors import ConfigError
from resolveflow.execution.gate import Executor, GateSettings
from resolveflow.execution.reconcile import Reconciler
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url
from resolveflow.store.migrate import upgrade

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

    @property
    def github(self) -> GitHub:
        if self._github is None:
            self._github = github_client(self.settings)
        return self._github

    def executor(self) -> Executor:
        return Executor(self.db, self.github, gate_settings(self.settings))

    def reconciler(self) -> Reconciler:
        return Reconciler(self.db, self.github, gate_settings(self.settings))


def migrate(url: str) -> list[str]:
    probe = Database(url)
    with probe.owner_connection() as conn:
        return [m.version for m in upgrade(conn)]


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
        yield App(settings=settings, db=db)
