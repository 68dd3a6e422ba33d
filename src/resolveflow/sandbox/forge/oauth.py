"""The fake GitHub with an OAuth provider: the sign-in pages and the token exchange.

``FakeGitHubWithOAuth`` serves everything ``FakeGitHubServer`` does, plus GitHub's web flow on the
same address (so the one URL is both the "web" and the "API" base URL):

- ``GET /login/oauth/authorize``: a page, clearly a sandbox, with one button per known user;
- ``GET /login/oauth/authorize/confirm``: what the button does: a one-time code, then a redirect
  back to the application (loopback redirect URLs only);
- ``POST /login/oauth/access_token``: code + client secret + PKCE verifier -> an access token that
  the fake's API then treats as that user's (``GET /user`` answers with the login; comments
  posted with it are authored by that login).

Sign-in requests are not counted as writes and never consume injected faults.
"""

from __future__ import annotations

import base64
import hashlib
import html
import secrets
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from resolveflow.sandbox.forge.faults import Fault
from resolveflow.sandbox.forge.model import FakeReply, FakeRequest
from resolveflow.sandbox.forge.server import FakeGitHubServer

OAUTH_PREFIX = "/login/oauth/"
_OAUTH_LOGIN = "(oauth)"  # the request identity of sign-in pages (they carry no token)
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class _Grant:
    login: str
    client_id: str
    redirect_uri: str
    challenge: str | None
    used: bool = False


class FakeGitHubWithOAuth(FakeGitHubServer):
    def __init__(
        self,
        port: int = 0,
        *,
        client_id: str = "sandbox-client",
        client_secret: str = "sandbox-secret",  # noqa: S107 - a sandbox's well-known value
        **kwargs: Any,
    ) -> None:
        super().__init__(port, **kwargs)
        self.client_id = client_id
        self.client_secret = client_secret
        self._oauth_lock = threading.Lock()
        self._oauth_users: list[str] = []
        self._grants: dict[str, _Grant] = {}
        self.issued_tokens: dict[str, str] = {}  # token -> login, for tests to inspect

    def add_oauth_user(self, login: str) -> None:
        with self._oauth_lock:
            if login not in self._oauth_users:
                self._oauth_users.append(login)

    # --- hooks into the server's request path ----------------------------------------------

    def _begin(
        self, method: str, target: str, body: bytes, authorization: str | None
    ) -> FakeRequest:
        path, _, query = target.partition("?")
        if path.startswith(OAUTH_PREFIX):
            return FakeRequest(method, path, parse_qs(query), body, _OAUTH_LOGIN, logged=True)
        return super()._begin(method, target, body, authorization)

    def _take_fault(self, method: str, target: str) -> Fault | None:
        if target.startswith(OAUTH_PREFIX):
            return None
        return super()._take_fault(method, target)

    def _execute(self, request: FakeRequest) -> FakeReply:
        if not request.path.startswith(OAUTH_PREFIX):
            return super()._execute(request)
        with self._oauth_lock:
            if request.method == "GET" and request.path == "/login/oauth/authorize":
                return self._authorize_page(request)
            if request.method == "GET" and request.path == "/login/oauth/authorize/confirm":
                return self._confirm(request)
            if request.method == "POST" and request.path == "/login/oauth/access_token":
                return self._access_token(request)
        return FakeReply(404, {"message": "Not Found"})

    # --- the flow (oauth lock held) ----------------------------------------------------------

    def _authorize_page(self, request: FakeRequest) -> FakeReply:
        query = {key: values[-1] for key, values in request.query.items()}
        problem = self._check_client(query.get("client_id"), query.get("redirect_uri"))
        if problem:
            return _page(400, "Sign-in refused", f"<p>{html.escape(problem)}</p>")
        buttons = "".join(
            '<form method="get" action="/login/oauth/authorize/confirm">'
            + "".join(
                f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                for k, v in query.items()
                if k in ("client_id", "redirect_uri", "state", "code_challenge")
            )
            + f'<input type="hidden" name="login" value="{html.escape(login)}">'
            f'<button type="submit" id="signin-{html.escape(login)}">'
            f"Authorize as {html.escape(login)}</button></form>"
            for login in self._oauth_users
        )
        return _page(
            200,
            "Sandbox GitHub: authorize ResolveFlow",
            "<p><strong>SANDBOX</strong>: this is ResolveFlow's local stand-in for GitHub; "
            "nothing here is real.</p>" + (buttons or "<p>No sandbox users.</p>"),
        )

    def _confirm(self, request: FakeRequest) -> FakeReply:
        query = {key: values[-1] for key, values in request.query.items()}
        redirect_uri = query.get("redirect_uri", "")
        problem = self._check_client(query.get("client_id"), redirect_uri)
        login = query.get("login", "")
        if problem or login not in self._oauth_users:
            return _page(400, "Sign-in refused", html.escape(problem or "unknown user"))
        code = secrets.token_urlsafe(16)
        self._grants[code] = _Grant(
            login, self.client_id, redirect_uri, query.get("code_challenge") or None
        )
        back = urlencode({"code": code, "state": query.get("state", "")})
        separator = "&" if "?" in redirect_uri else "?"
        return FakeReply(302, raw=b"", headers={"Location": f"{redirect_uri}{separator}{back}"})

    def _access_token(self, request: FakeRequest) -> FakeReply:
        form = {k: v[-1] for k, v in parse_qs(request.body.decode("utf-8", "replace")).items()}
        grant = self._grants.get(form.get("code", ""))
        if (
            form.get("client_id") != self.client_id
            or form.get("client_secret") != self.client_secret
        ):
            return FakeReply(200, {"error": "incorrect_client_credentials"})
        if grant is None or grant.used or form.get("redirect_uri") != grant.redirect_uri:
            return FakeReply(200, {"error": "bad_verification_code"})
        if grant.challenge is not None and _challenge(form.get("code_verifier", "")) != (
            grant.challenge
        ):
            return FakeReply(200, {"error": "bad_verification_code", "error_description": "PKCE"})
        grant.used = True
        token = "gho_" + secrets.token_urlsafe(27)
        self.issued_tokens[token] = grant.login
        self.register_token(token, grant.login)
        return FakeReply(200, {"access_token": token, "token_type": "bearer", "scope": "repo"})

    def _check_client(self, client_id: str | None, redirect_uri: str | None) -> str | None:
        if client_id != self.client_id:
            return "unknown client_id"
        host = urlsplit(redirect_uri or "").hostname
        if host not in _LOOPBACK:
            return "the sandbox only redirects to this machine"
        return None


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _page(status: int, title: str, body: str) -> FakeReply:
    text = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "</head><body style='font-family:sans-serif;max-width:40em;margin:2em auto'>"
        "<div style='background:#fde68a;padding:.5em 1em;border-radius:6px'>"
        "SANDBOX forge: not GitHub</div>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return FakeReply(status, raw=text.encode("utf-8"), content_type="text/html; charset=utf-8")
