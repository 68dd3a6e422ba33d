"""The forge as a GitHub App host: the manifest flow, App JWTs, installations and installation
tokens that expire. ``FakeGitHubWithApp`` is a ``FakeGitHubWithOAuth`` with these routes:

- ``POST /app-manifests/{code}/conversions`` (no authentication: the one-time code is the
  credential): the App ``create_app_from_manifest`` registered, with a freshly generated RSA key
  pair's private key as ``pem``, its webhook secret, client id and secret; a code works once;
- ``GET /app`` (the App's JWT): the App;
- ``GET /repos/{o}/{r}/installation`` (JWT): the installation covering the repository, or 404;
- ``POST /app/installations/{id}/access_tokens`` (JWT): a new token for the installation that
  expires ``token_lifetime`` after the forge's clock (``advance`` moves that clock); requests
  bearing it act as ``<slug>[bot]`` until then, and are answered 401 afterwards.

The JWT is checked the way GitHub does: RS256 over the App's public key, ``iss`` the App id,
``iat`` not in the future (a minute of drift allowed), ``exp`` not passed and at most ten minutes
after ``iat``. A bad one is answered 401, as GitHub does. ``tokens_minted`` counts the tokens.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from resolveflow.sandbox.forge import payloads, repos
from resolveflow.sandbox.forge.model import FakeRequest
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.sandbox.forge.routing import REPO, Route, bind, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

JWT_LOGIN = "\x00app-jwt"  # who a valid App JWT acts as: no real login can look like it
DRIFT = 60
MAX_JWT_SECONDS = 600


@dataclass
class _App:
    app_id: int
    slug: str
    manifest: dict[str, Any]
    pem: str
    public_key: Any
    webhook_secret: str
    client_id: str
    client_secret: str


@dataclass
class _Installation:
    installation_id: int
    account: str
    repositories: list[str]


@dataclass(eq=False)
class AppState:
    forge: ForgeState
    lock: threading.Lock = field(default_factory=threading.Lock)
    app: _App | None = None
    codes: dict[str, _App] = field(default_factory=dict)
    installations: dict[int, _Installation] = field(default_factory=dict)
    tokens: dict[str, tuple[int, float]] = field(default_factory=dict)  # token -> (inst, expiry)
    offset: float = 0.0  # seconds the forge's clock is ahead of the machine's
    token_lifetime: float = 3600.0
    next_id: int = 41000

    def now(self) -> float:
        return time.time() + self.offset


class FakeGitHubWithApp(FakeGitHubWithOAuth):
    """``FakeGitHubWithOAuth`` plus the App routes (see the module docstring)."""

    def __init__(self, port: int = 0, **kwargs: Any) -> None:
        super().__init__(port, **kwargs)
        self.app_state = AppState(self.state)
        self.serve_routes(bind(ROUTES, self.app_state, self.app_state.lock))

    def _identify(self, authorization: str | None) -> str | None:
        scheme, _, credential = (authorization or "").strip().partition(" ")
        credential = credential.strip()
        if scheme.lower() in ("token", "bearer") and credential:
            with self.app_state.lock:
                if credential.count(".") == 2:
                    return JWT_LOGIN if _jwt_valid(self.app_state, credential) else None
                issued = self.app_state.tokens.get(credential)
                if issued is not None:
                    app = self.app_state.app
                    expired = issued[1] <= self.app_state.now()
                    return None if expired or app is None else f"{app.slug}[bot]"
        return super()._identify(authorization)

    # --- seeding and inspection ---------------------------------------------------------------

    def create_app_from_manifest(self, manifest: dict[str, Any]) -> str:
        """What a person's click on GitHub's "Create GitHub App" does: registers the App the
        manifest describes and returns the one-time code GitHub appends to its redirect URL."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode("ascii")
        with self.app_state.lock:
            self.app_state.next_id += 1
            name = str(manifest.get("name") or "resolveflow")
            app = _App(
                app_id=self.app_state.next_id,
                slug="".join(c if c.isalnum() else "-" for c in name.lower()).strip("-"),
                manifest=dict(manifest),
                pem=pem,
                public_key=key.public_key(),
                webhook_secret=secrets.token_urlsafe(24),
                client_id="Iv1." + secrets.token_hex(8),
                client_secret=secrets.token_hex(20),
            )
            code = secrets.token_hex(10)
            self.app_state.codes[code] = app
        return code

    def install_app(self, account: str, repositories: list[str]) -> int:
        """Install the App on ``repositories`` of ``account``; its bot may push there."""
        with self.app_state.lock:
            app = self.app_state.app
            assert app is not None, "convert the manifest's code first"
            self.app_state.next_id += 1
            installation = _Installation(self.app_state.next_id, account, list(repositories))
            self.app_state.installations[installation.installation_id] = installation
        for full_name in repositories:
            repos.add_repo(self.state, full_name, pushers=[f"{app.slug}[bot]"])
        return installation.installation_id

    def advance(self, seconds: float) -> None:
        """Move the forge's clock: tokens and JWTs expire by it."""
        with self.app_state.lock:
            self.app_state.offset += seconds

    def expire_installation_tokens(self) -> None:
        """Every token issued so far expires now (as a revoked one would): GitHub answers 401."""
        with self.app_state.lock:
            now = self.app_state.now()
            self.app_state.tokens = {t: (i, now) for t, (i, _) in self.app_state.tokens.items()}

    @property
    def tokens_minted(self) -> int:
        with self.app_state.lock:
            return len(self.app_state.tokens)

    @property
    def app_webhook_secret(self) -> str:
        with self.app_state.lock:
            assert self.app_state.app is not None
            return self.app_state.app.webhook_secret

    def installation_payload(self, installation_id: int) -> dict[str, Any]:
        """The ``installation`` object a webhook delivery of this installation carries."""
        with self.app_state.lock:
            return _installation(self.app_state, self.app_state.installations[installation_id])


# --- the JWT --------------------------------------------------------------------------------


def _b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _jwt_valid(state: AppState, jwt: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    app = state.app
    if app is None:
        return False
    try:
        header_part, claims_part, signature_part = jwt.split(".")
        header = json.loads(_b64decode(header_part))
        claims = json.loads(_b64decode(claims_part))
        app.public_key.verify(
            _b64decode(signature_part),
            f"{header_part}.{claims_part}".encode("ascii"),
            padding.PKCS1v15(),
            hashes.SHA256(),
        )
        iat, exp = int(claims["iat"]), int(claims["exp"])
    except (ValueError, KeyError, TypeError, InvalidSignature):
        return False
    now = state.now()
    return (
        header.get("alg") == "RS256"
        and str(claims.get("iss")) == str(app.app_id)
        and iat <= now + DRIFT
        and now < exp
        and exp - iat <= MAX_JWT_SECONDS + DRIFT
    )


# --- payloads -------------------------------------------------------------------------------


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _account(state: AppState, login: str) -> dict[str, Any]:
    return payloads.simple_user(state.forge.url, state.forge.url, login)


def _app(state: AppState, app: _App) -> dict[str, Any]:
    stamp = payloads.now_iso()
    return {
        "id": app.app_id,
        "slug": app.slug,
        "node_id": f"A_{app.app_id}",
        "client_id": app.client_id,
        "owner": _account(state, "sandbox-owner"),
        "name": app.manifest.get("name", app.slug),
        "description": app.manifest.get("description", ""),
        "external_url": app.manifest.get("url", ""),
        "html_url": f"{state.forge.url}/apps/{app.slug}",
        "created_at": stamp,
        "updated_at": stamp,
        "permissions": dict(app.manifest.get("default_permissions", {})),
        "events": list(app.manifest.get("default_events", [])),
        "installations_count": len(state.installations),
    }


def _installation(state: AppState, installation: _Installation) -> dict[str, Any]:
    app = state.app
    assert app is not None
    stamp = payloads.now_iso()
    url = state.forge.url
    iid = installation.installation_id
    return {
        "id": iid,
        "account": _account(state, installation.account),
        "repository_selection": "selected",
        "access_tokens_url": f"{url}/app/installations/{iid}/access_tokens",
        "repositories_url": f"{url}/installation/repositories",
        "html_url": f"{url}/settings/installations/{iid}",
        "app_id": app.app_id,
        "app_slug": app.slug,
        "target_id": 1,
        "target_type": "Organization",
        "permissions": dict(app.manifest.get("default_permissions", {})),
        "events": list(app.manifest.get("default_events", [])),
        "created_at": stamp,
        "updated_at": stamp,
        "single_file_name": None,
        "suspended_by": None,
        "suspended_at": None,
    }


# --- routes (app lock held) -------------------------------------------------------------------


def _needs_jwt(request: FakeRequest) -> None:
    if request.login != JWT_LOGIN:
        raise payloads.Rejected(
            401, payloads.error("A JSON web token could not be decoded", status=401)
        )


def convert(state: AppState, request: FakeRequest) -> Reply:
    (code,) = request.params
    app = state.codes.pop(code, None)
    if app is None:
        return Reply(404, payloads.not_found())
    state.app = app
    state.tokens.clear()
    body = _app(state, app) | {
        "pem": app.pem,
        "webhook_secret": app.webhook_secret,
        "client_secret": app.client_secret,
    }
    return Reply(201, body)


def get_app(state: AppState, request: FakeRequest) -> Reply:
    _needs_jwt(request)
    assert state.app is not None
    return Reply(200, _app(state, state.app))


def repo_installation(state: AppState, request: FakeRequest) -> Reply:
    _needs_jwt(request)
    (full_name,) = request.params
    for installation in state.installations.values():
        if full_name in installation.repositories:
            return Reply(200, _installation(state, installation))
    return Reply(404, payloads.not_found())


def access_token(state: AppState, request: FakeRequest) -> Reply:
    _needs_jwt(request)
    installation = state.installations.get(int(request.params[0]))
    if installation is None:
        return Reply(404, payloads.not_found())
    token = "ghs_" + secrets.token_urlsafe(27)
    expires = state.now() + state.token_lifetime
    state.tokens[token] = (installation.installation_id, expires)
    return Reply(
        201,
        {
            "token": token,
            "expires_at": _stamp(expires),
            "permissions": _installation(state, installation)["permissions"],
            "repository_selection": "selected",
        },
    )


ROUTES: list[Route[AppState]] = [
    route("POST", r"/app-manifests/([A-Za-z0-9_-]+)/conversions", convert, public=True),
    route("GET", r"/app", get_app),
    route("GET", rf"{REPO}/installation", repo_installation),
    route("POST", r"/app/installations/(\d+)/access_tokens", access_token),
]
