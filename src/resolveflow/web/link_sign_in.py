"""Signing in with a one-time link (``resolveflow sign-in-link``; ``accounts/sign_in_links.py``).

Opening the link (GET) uses nothing: it shows whom the link signs in, with a button. Link
previews (a chat unfurling it, a mail scanner) only ever GET, so they cannot use it up. The button
posts the token with a nonce that a short-lived cookie scoped to this path also carries; a form
on another site cannot send that cookie (SameSite=Lax), so nobody can be signed in as someone else
by a page they did not open. The POST uses the link and sets the session cookie a GitHub sign-in
sets. A used, expired or unknown link gets a page saying so and signs nobody in. Refused POSTs
past a limit per client address or per tenant get 429 with Retry-After, and no audit row each
(``accounts/refusal_limits.py``); a valid link is still used.
"""

from __future__ import annotations

import hmac
import logging
import secrets

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from resolveflow.accounts import sign_in_links as links
from resolveflow.accounts.refusal_limits import RefusalLimits, RefusalScope
from resolveflow.config import WebSettings
from resolveflow.web.security import SESSION_COOKIE, clear_cookie, set_cookie, wired

logger = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)

LINK_COOKIE = "rf_link"
_NONCE_MAX_AGE = 600
_STATUS = {links.Refusal.UNKNOWN: 404, links.Refusal.USED: 410, links.Refusal.EXPIRED: 410}
_TOKEN_MAX = 200


def _page(request: Request, status: int, **values: object) -> Response:
    templates = request.app.state.templates
    response: Response = templates.TemplateResponse(
        request, "link.html", {"viewer": None, "notice": None, **values}, status_code=status
    )
    return response


def _refused(request: Request, refused: links.LinkRefused) -> Response:
    return _page(request, _STATUS[refused.why], refused=refused.message, link=None)


def _address(request: Request) -> str | None:
    """The peer's address (``serve`` trusts no forwarding header: behind a proxy, the proxy's)."""
    return request.client.host if request.client else None


def refusal_limits(settings: WebSettings) -> RefusalLimits:
    """One per app: the refusals of every request thread counted together."""
    return RefusalLimits(
        {
            RefusalScope.ADDRESS: settings.sign_in_refusals_per_address,
            RefusalScope.TENANT: settings.sign_in_refusals_per_tenant,
        },
        settings.sign_in_refusal_window_seconds,
    )


@router.get(links.PATH)
def open_link(request: Request, token: str = "") -> Response:
    try:
        found = links.look(wired(request).db, token[:_TOKEN_MAX])
    except links.LinkRefused as refused:
        return _refused(request, refused)
    nonce = secrets.token_urlsafe(24)
    response = _page(request, 200, link=found, token=token, nonce=nonce, refused=None)
    set_cookie(response, request, LINK_COOKIE, nonce, _NONCE_MAX_AGE, path=links.PATH)
    return response


@router.post(links.PATH)
def use_link(request: Request, token: str = Form(""), nonce: str = Form("")) -> Response:
    expected = request.cookies.get(LINK_COOKIE, "")
    if not (expected and nonce) or not hmac.compare_digest(expected.encode(), nonce.encode()):
        message = "This sign-in did not start on this page: open the link again."
        return _page(request, 400, refused=message, link=None)
    app = wired(request)
    ttl = app.settings.web.session_ttl_seconds
    attempt = links.Attempt(request.app.state.sign_in_refusals, _address(request))
    try:
        session = links.sign_in(app.db, token[:_TOKEN_MAX], ttl, attempt)
    except links.TooManyRefusals as many:
        page = _page(request, 429, refused=many.message, link=None)
        page.headers["Retry-After"] = str(many.retry_after)
        return page
    except links.LinkRefused as refused:
        return _refused(request, refused)
    logger.info("signed in with a link", extra={"principal": session.principal.subject})
    response = RedirectResponse("/inbox", status_code=303)
    clear_cookie(response, request, LINK_COOKIE, path=links.PATH)
    set_cookie(response, request, SESSION_COOKIE, session.cookie, ttl)
    return response
