"""An embedded Postgres (with pgvector) from the ``pgserver`` package, for installs with no database."""

from __future__ import annotations

import logging
from pathlib import Path

from resolveflow.domain.errors import StoreUnavailable

logger = logging.getLogger(__name__)


def embedded_database_url(home: Path) -> str:
    """Start (or join) the embedded server whose data lives under ``home`` and return its URL.

    pgserver shares one server between every process that uses the same data directory and stops
    it when the last of them exits, so concurrent CLI invocations and workers cooperate.
    """
    import pgserver  # imported lazily: it is only needed when no database URL is configured

    pgdata = home / "pgdata"
    try:
        pgdata.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:
        raise StoreUnavailable(f"could not start the embedded Postgres in {pgdata}: {exc}") from exc
    uri: str = server.get_uri()
    logger.info("embedded postgres ready", extra={"pgdata": str(pgdata)})
    return uri
