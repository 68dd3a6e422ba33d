"""An embedded Postgres (with pgvector) from the ``pgserver`` package, for installs with no database."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from resolveflow.errors import StoreUnavailable

logger = logging.getLogger(__name__)


def embedded_database_url(home: Path) -> str:
    """Start (or join) the embedded server whose data lives under ``home`` and return its URL.

    pgserver shares one server between every process that uses the same data directory and stops
    it when the last of them exits, so concurrent CLI invocations and workers cooperate.
    """
    pgdata = home / "pgdata"
    try:
        pgdata.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            # platformdirs warns about XDG_RUNTIME_DIR on servers; pgserver copes without it.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            import pgserver  # lazily: only needed when no database URL is configured

            server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    except Exception as exc:
        raise StoreUnavailable(f"could not start the embedded Postgres in {pgdata}: {exc}") from exc
    uri: str = server.get_uri()
    logger.info("embedded postgres ready", extra={"pgdata": str(pgdata)})
    return uri
