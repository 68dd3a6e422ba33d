"""Commands for the web app and the background worker (registered on the main app)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the web and worker commands to ``app``."""
