"""Commands for indexing, search and retrieval evaluation (registered on the main app)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the retrieval commands to ``app``."""
