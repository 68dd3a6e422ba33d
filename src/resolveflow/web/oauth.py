"""Sign-in with GitHub (authorization code + PKCE) and sign-out.

The ``state`` and the PKCE verifier live in a short-lived HTTP-only cookie scoped to ``/auth``;
the callback compares the returned ``state`` with it in constant time, so a sign-in cannot be
started by another site. The user's token is encrypted before it is stored.
"""

from __future__ import annotations

import hmac
import logging

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from resolveflow.accounts import sessions
from resolveflow.errors import AuthenticationFailed, ConfigError
from resolveflow.web.security import (
    OAUTH_COOKIE,
    SESSION_COOKIE,
    check_csrf,
    clear_cookie,
    identify,
    set_cookie,
    wired,
)

logger = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)

_STATE_MAX_AGE = 600


def redirect_uri(request: Request) -> str:
    base = wired(request).settings.web.public_url or str(request.base_url).rstrip("/")
    return f"{base}/auth/callback"


@router.get("/auth/login")
def login(request: Request) -> Response:
    if not wired(request).settings.github.oauth_client_id:
        return RedirectResponse("/login", status_code=303)  # it says how to sign in instead
    authorization = wired(request).github_oauth().authorization(redirect_uri(request))
    response = RedirectResponse(authorization.url, status_code=303)
    set_cookie(
        response,
        request,
        OAUTH_COOKIE,
        f"{authorization.state}.{authorization.verifier}",
        _STATE_MAX_AGE,
        path="/auth",
    )
    return response


@router.get("/auth/callback")
def callback(request: Request, code: str = "", state: str = "") -> Response:
    app = wired(request)
    client = app.github_oauth()
    cipher = app.token_cipher()
    if cipher is None:
        raise ConfigError("RESOLVEFLOW_TOKEN_ENCRYPTION_KEY is not set; sign-in stores no tokens")
    expected_state, _, verifier = request.cookies.get(OAUTH_COOKIE, "").partition(".")
    if not (code and state and expected_state and verifier) or not hmac.compare_digest(
        expected_state.encode(), state.encode()
    ):
        raise AuthenticationFailed("the sign-in expired or did not start here; try again")
    token = client.exchange(code[:200], redirect_uri(request), verifier)
    github_login = app.github.authenticated_login(token=token)
    session = sessions.sign_in(
        app.db,
        login=github_login,
        github_token=token,
        grants=app.user_grants(),
        cipher=cipher,
        ttl_seconds=app.settings.web.session_ttl_seconds,
    )
    logger.info("signed in", extra={"principal": session.principal.subject})
    response = RedirectResponse("/inbox", status_code=303)
    clear_cookie(response, request, OAUTH_COOKIE, path="/auth")
    set_cookie(
        response, request, SESSION_COOKIE, session.cookie, app.settings.web.session_ttl_seconds
    )
    return response


@router.post("/logout")
def logout(request: Request, csrf_token: str = Form("")) -> Response:
    response = RedirectResponse("/login?signed_out=1", status_code=303)
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        try:
            viewer = identify(request)
        except AuthenticationFailed:
            viewer = None  # already ended: just drop the cookie
        if viewer is not None:
            check_csrf(request, viewer, csrf_token)
            sessions.sign_out(wired(request).db, cookie)
    clear_cookie(response, request, SESSION_COOKIE)
    return response
