"""``GET /github-app/callback``: the last step of creating the GitHub App from its manifest.

GitHub redirects the browser here with a one-time ``code`` and the ``state`` that
``resolveflow github-app manifest`` issued (one use, within the hour: without it, whoever reaches
this URL with a code of their own App could make it this deployment's); converting the code
(``POST /app-manifests/{code}/conversions``) returns the App's id, slug, private key, webhook
secret and OAuth client, which are stored encrypted and never shown. Only the first App is taken
this way: with one stored, the callback refuses, so a code from someone else's App cannot replace
it. The process uses the App from its next start.
"""

from __future__ import annotations

import html
import logging

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from resolveflow.accounts import github_app
from resolveflow.adapters.github.app_auth import GitHubAppApi
from resolveflow.errors import Conflict
from resolveflow.web.security import wired

logger = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
NO_KEY = "set RESOLVEFLOW_TOKEN_ENCRYPTION_KEY first: the App's secrets are stored encrypted"


@router.get("/github-app/callback")
def callback(request: Request, code: str = "", state: str = "") -> HTMLResponse:
    app = wired(request)
    cipher = app.token_cipher()
    if cipher is None:
        return _page(503, "GitHub App not stored", NO_KEY)
    if github_app.stored_app(app.db, cipher) is not None:
        raise Conflict("a GitHub App is already stored; nothing was changed")
    github_app.redeem_manifest_state(app.db, state)  # NotAuthorized: 403, nothing converted
    github = app.settings.github
    created = GitHubAppApi(github.api_url, github.timeout_seconds).convert_manifest(code)
    github_app.save_created_app(app.db, cipher, created)
    install = f"{github.web_url.rstrip('/')}/apps/{created.slug}/installations/new"
    return _page(
        200,
        f"GitHub App {created.slug} stored",
        f"App {created.app_id} is stored, its secrets encrypted. Restart ResolveFlow, then "
        f'<a href="{html.escape(install)}">install it</a> and map the installation to a tenant: '
        "<code>resolveflow github-app install-map --installation ID --tenant NAME</code>",
        escape=False,
    )


def _page(status: int, title: str, text: str, *, escape: bool = True) -> HTMLResponse:
    body = html.escape(text) if escape else text
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><h1>{html.escape(title)}</h1><p>{body}</p></body></html>",
        status_code=status,
    )
