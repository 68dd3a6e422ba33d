"""Who is asking: an API token (``Authorization: Bearer rf_...``) or a browser session cookie.

Browser sessions carry ambient credentials, so every unsafe request made with one must present the
session's CSRF token (form field ``csrf_token`` or header ``X-CSRF-Token``); a request with an API
token needs none (nothing sends it automatically). Cookies: HTTP-only, SameSite=Lax, Secure unless
configured off.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request, Response

from resolveflow.accounts import sessions
from resolveflow.accounts.auth import authenticate
from resolveflow.bootstrap.app import App
from resolveflow.domain.records import Principal
from resolveflow.errors import AuthenticationFailed, NotAuthorized
from resolveflow.gate.approvals import RepositoryLabels
from resolveflow.gate.decisions import Deciding, FollowUp

SESSION_COOKIE = "rf_session"
OAUTH_COOKIE = "rf_oauth"
CSRF_HEADER = "X-CSRF-Token"
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class CsrfRefused(NotAuthorized):
    """The form or request carried no valid CSRF token; reload the page and try again."""


@dataclass(frozen=True)
class Viewer:
    principal: Principal
    via: str  # "token" | "session"
    csrf_token: str | None  # sessions only


def wired(request: Request) -> App:
    app: App = request.app.state.wired
    return app


def deciding(request: Request) -> Deciding:
    """Decisions taken over HTTP answer at once; the worker carries them out."""
    app = wired(request)
    return Deciding(
        runs=app.run_handle(),  # an email's decision builds no graph
        follow_up=FollowUp.QUEUE,
        ttl_seconds=app.settings.approval.ttl_seconds,
        lease_seconds=app.settings.triage.run_lease_seconds,
        labels=RepositoryLabels(app.github),  # this request's
        mailboxes=app.mailbox_lookup(),
        aliases=app.alias_lookup(),
    )


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def identify(request: Request) -> Viewer:
    """The viewer, or ``AuthenticationFailed``."""
    app = wired(request)
    token = bearer_token(request)
    if token is not None:
        return Viewer(authenticate(app.db, token), "token", None)
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        raise AuthenticationFailed(
            "sign in, or send an API token as 'Authorization: Bearer rf_...'"
        )
    session = sessions.session_for(app.db, cookie)
    return Viewer(session.principal, "session", session.csrf_token)


def check_csrf(request: Request, viewer: Viewer, form_value: str | None = None) -> None:
    """Refuse an unsafe session request whose CSRF token (header, else form field) is wrong."""
    if request.method not in _UNSAFE or viewer.via != "session":
        return
    assert viewer.csrf_token is not None
    supplied = request.headers.get(CSRF_HEADER) or form_value
    if not sessions.csrf_matches(viewer.csrf_token, supplied):
        raise CsrfRefused()


def set_cookie(
    response: Response, request: Request, name: str, value: str, max_age: int, path: str = "/"
) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=path,
        httponly=True,
        secure=wired(request).settings.web.cookie_secure,
        samesite="lax",
    )


def clear_cookie(response: Response, request: Request, name: str, path: str = "/") -> None:
    response.delete_cookie(
        name,
        path=path,
        httponly=True,
        secure=wired(request).settings.web.cookie_secure,
        samesite="lax",
    )
