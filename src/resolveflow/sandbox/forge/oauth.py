"""The forge's OAuth provider: GitHub's web sign-in flow as extra routes, and ``FakeGitHubWithOAuth``.

``FakeGitHubWithOAuth`` is a ``FakeGitHubServer`` with these routes added to its table, on the same
address (so the one URL is both the "web" and the "API" base URL):

- ``GET /login/oauth/authorize``: a page, clearly a sandbox, with one button per known user;
- ``GET /login/oauth/authorize/confirm``: what the button does: a one-time code, then a redirect
  back to the application (loopback redirect URLs only);
- ``POST /login/oauth/access_token``: code + client secret + PKCE verifier -> an access token that
  the forge's API then treats as that user's (``GET /user`` answers with the login; comments
  posted with it are authored by that login).

The routes are public: sign-in requests are not counted as writes and never consume injected
faults. Their state (``OAuthState``: users, one-time codes, issued tokens) has its own lock and
reaches into the forge's state only to register an issued token. Sandbox users play the
repositories' maintainers, so by default they may push everywhere (``add_oauth_user(push=...)``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from resolveflow.sandbox.forge import repos
from resolveflow.sandbox.forge.model import FakeRequest
from resolveflow.sandbox.forge.routing import Route, bind, route
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class _Grant:
    login: str
    client_id: str
    redirect_uri: str
    challenge: str | None
    used: bool = False


@dataclass(eq=False)
class OAuthState:
    """The OAuth app the forge knows, its users, and the codes and tokens it has handed out."""

    forge: ForgeState
    client_id: str
    client_secret: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: list[str] = field(default_factory=list)
    grants: dict[str, _Grant] = field(default_factory=dict)  # one-time code -> grant
    issued_tokens: dict[str, str] = field(default_factory=dict)  # token -> login


class FakeGitHubWithOAuth(FakeGitHubServer):
    """``FakeGitHubServer`` plus the OAuth routes (see the module docstring)."""

    def __init__(
        self,
        port: int = 0,
        *,
        client_id: str = "sandbox-client",
        client_secret: str = "sandbox-secret",  # noqa: S107 - a sandbox's well-known value
        **kwargs: Any,
    ) -> None:
        super().__init__(port, **kwargs)
        self.oauth = OAuthState(self.state, client_id, client_secret)
        self.serve_routes(bind(ROUTES, self.oauth, self.oauth.lock))

    @property
    def client_id(self) -> str:
        return self.oauth.client_id

    @property
    def client_secret(self) -> str:
        return self.oauth.client_secret

    @property
    def issued_tokens(self) -> dict[str, str]:
        """Token -> login for every token the flow issued, for tests to inspect."""
        with self.oauth.lock:
            return dict(self.oauth.issued_tokens)

    def add_oauth_user(self, login: str, *, push: bool = True) -> None:
        """Offer ``login`` on the sign-in page; with ``push`` it may push to every repository."""
        with self.oauth.lock:
            if login not in self.oauth.users:
                self.oauth.users.append(login)
        if push:
            with self.state.lock:
                self.state.maintainers.add(login)


# --- routes (oauth lock held) --------------------------------------------------------------


def authorize_page(oauth: OAuthState, request: FakeRequest) -> Reply:
    query = request.args
    problem = _check_client(oauth, query.get("client_id"), query.get("redirect_uri"))
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
        for login in oauth.users
    )
    return _page(
        200,
        "Sandbox GitHub: authorize ResolveFlow",
        "<p><strong>SANDBOX</strong>: this is ResolveFlow's local stand-in for GitHub; "
        "nothing here is real.</p>" + (buttons or "<p>No sandbox users.</p>"),
    )


def confirm(oauth: OAuthState, request: FakeRequest) -> Reply:
    query = request.args
    redirect_uri = query.get("redirect_uri", "")
    problem = _check_client(oauth, query.get("client_id"), redirect_uri)
    login = query.get("login", "")
    if problem or login not in oauth.users:
        return _page(400, "Sign-in refused", html.escape(problem or "unknown user"))
    code = secrets.token_urlsafe(16)
    oauth.grants[code] = _Grant(
        login, oauth.client_id, redirect_uri, query.get("code_challenge") or None
    )
    back = urlencode({"code": code, "state": query.get("state", "")})
    separator = "&" if "?" in redirect_uri else "?"
    return Reply(302, raw=b"", headers={"Location": f"{redirect_uri}{separator}{back}"})


def access_token(oauth: OAuthState, request: FakeRequest) -> Reply:
    form = {k: v[-1] for k, v in parse_qs(request.body.decode("utf-8", "replace")).items()}
    grant = oauth.grants.get(form.get("code", ""))
    if form.get("client_id") != oauth.client_id or form.get("client_secret") != oauth.client_secret:
        return Reply(200, {"error": "incorrect_client_credentials"})
    if grant is None or grant.used or form.get("redirect_uri") != grant.redirect_uri:
        return Reply(200, {"error": "bad_verification_code"})
    if grant.challenge is not None and _challenge(form.get("code_verifier", "")) != (
        grant.challenge
    ):
        return Reply(200, {"error": "bad_verification_code", "error_description": "PKCE"})
    grant.used = True
    token = "gho_" + secrets.token_urlsafe(27)
    oauth.issued_tokens[token] = grant.login
    repos.register_token(oauth.forge, token, grant.login)
    return Reply(200, {"access_token": token, "token_type": "bearer", "scope": "repo"})


ROUTES: list[Route[OAuthState]] = [
    route("GET", r"/login/oauth/authorize", authorize_page, public=True),
    route("GET", r"/login/oauth/authorize/confirm", confirm, public=True),
    route("POST", r"/login/oauth/access_token", access_token, public=True),
]


def _check_client(oauth: OAuthState, client_id: str | None, redirect_uri: str | None) -> str | None:
    if client_id != oauth.client_id:
        return "unknown client_id"
    host = urlsplit(redirect_uri or "").hostname
    if host not in _LOOPBACK:
        return "the sandbox only redirects to this machine"
    return None


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _page(status: int, title: str, body: str) -> Reply:
    text = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "</head><body style='font-family:sans-serif;max-width:40em;margin:2em auto'>"
        "<div style='background:#fde68a;padding:.5em 1em;border-radius:6px'>"
        "SANDBOX forge: not GitHub</div>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return Reply(status, raw=text.encode("utf-8"), content_type="text/html; charset=utf-8")
