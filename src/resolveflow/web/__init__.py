"""The web app: JSON API, approval inbox pages (Jinja2 + htmx), GitHub webhooks and sign-in."""

from resolveflow.web.app import create_app

__all__ = ["create_app"]
