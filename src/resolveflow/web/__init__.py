"""The web app: JSON API, approval inbox pages (Jinja2 + htmx), GitHub webhooks and sign-in.

``create_app`` is imported on first use: the CLI reads the pages' words (``web/words.py``,
``web/page_words.py``) to print plain ones, and importing this package must not load FastAPI and
every page with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resolveflow.web.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from resolveflow.web.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
