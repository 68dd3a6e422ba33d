"""Authenticating as a GitHub App: the App's JWT, and the App endpoints it is used on.

A GitHub App proves who it is with a JWT (RS256) signed by its private key: ``iss`` is the App
id, ``iat`` a minute in the past (GitHub allows for clock drift), ``exp`` at most ten minutes
later. With that JWT it asks which installation covers a repository
(``GET /repos/{o}/{r}/installation``) and mints an installation token
(``POST /app/installations/{id}/access_tokens``, valid an hour), which then authenticates every
ordinary request as the App's bot, ``<slug>[bot]``. The manifest flow's last step
(``POST /app-manifests/{code}/conversions``) needs no authentication at all: the one-time code is
the credential.

These are three requests, so plain httpx (as ``oauth.py``), each with a timeout, none retried.
The JWT is signed with ``cryptography`` (already used for the token cipher): githubkit's own App
auth needs PyJWT and caches installation tokens in its process; ours live in the database
(``accounts/github_app.py``), so every worker reuses one.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

import httpx
import pydantic

from resolveflow.adapters.github.protocol import RepoName
from resolveflow.adapters.github.validation import check_repo
from resolveflow.errors import (
    ConfigError,
    InvalidInput,
    NotFound,
    ProviderError,
    ProviderOutcomeUnknown,
    ProviderRejected,
    ProviderUnavailable,
)

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=pydantic.BaseModel)

JWT_BACKDATE = timedelta(seconds=60)  # GitHub's advice: allow for its clock being behind ours
JWT_LIFETIME = timedelta(minutes=9)  # GitHub refuses more than ten minutes
USER_AGENT = "ResolveFlow (GitHub App)"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def app_jwt(app_id: int, private_key_pem: str, now: datetime) -> str:
    """The App's JWT (RS256) valid from a minute before ``now`` for nine minutes."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        key = serialization.load_pem_private_key(private_key_pem.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        raise ConfigError("the GitHub App's private key is not a PEM RSA private key") from exc
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError("the GitHub App's private key is not an RSA key")
    header = _b64(json.dumps({"alg": "RS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {
        "iat": int((now - JWT_BACKDATE).timestamp()),
        "exp": int((now + JWT_LIFETIME).timestamp()),
        "iss": str(app_id),
    }
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{_b64(signature)}"


class _App(pydantic.BaseModel):
    id: int
    slug: str = pydantic.Field(min_length=1)


class _Token(pydantic.BaseModel):
    token: str = pydantic.Field(min_length=1)
    expires_at: datetime


class _Account(pydantic.BaseModel):
    login: str


class _Installation(pydantic.BaseModel):
    id: int = pydantic.Field(gt=0)
    account: _Account


class _Conversion(pydantic.BaseModel):
    id: int = pydantic.Field(gt=0)
    slug: str = pydantic.Field(min_length=1)
    pem: str = pydantic.Field(min_length=1)
    webhook_secret: str | None = None
    client_id: str = ""
    client_secret: str | None = None


@dataclass(frozen=True)
class InstallationToken:
    token: str
    expires_at: datetime


@dataclass(frozen=True)
class Installation:
    id: int
    account: str


@dataclass(frozen=True)
class CreatedApp:
    """What GitHub hands back once, when the manifest's code is converted."""

    app_id: int
    slug: str
    private_key: str
    webhook_secret: str | None
    client_id: str
    client_secret: str | None

    def __repr__(self) -> str:  # the secrets never reach a log line
        return f"CreatedApp(app_id={self.app_id}, slug={self.slug!r})"


class GitHubAppApi:
    """The App endpoints, over the REST API's base URL (``RESOLVEFLOW_GITHUB_API_URL``)."""

    def __init__(self, api_url: str, timeout_seconds: float) -> None:
        self.api_url = api_url.rstrip("/")
        self.timeout_seconds = timeout_seconds

    def app_slug(self, jwt: str) -> str:
        """The App's slug (``GET /app``): its bot is ``<slug>[bot]``."""
        return self._parse("app", self._call("GET", "/app", jwt), _App).slug

    def installation_for(self, jwt: str, repo: RepoName) -> Installation:
        check_repo(repo)
        answer = self._call("GET", f"/repos/{repo.owner}/{repo.name}/installation", jwt)
        if answer.status_code == 404:
            raise NotFound(
                f"the GitHub App is not installed on {repo.full_name}: install it there "
                "(the App's page on GitHub, Install App)"
            )
        found = self._parse("installation_for", answer, _Installation)
        return Installation(found.id, found.account.login)

    def mint_token(self, jwt: str, installation_id: int) -> InstallationToken:
        path = f"/app/installations/{int(installation_id)}/access_tokens"
        answer = self._call("POST", path, jwt)
        found = self._parse("mint_token", answer, _Token)
        return InstallationToken(found.token, found.expires_at)

    def convert_manifest(self, code: str) -> CreatedApp:
        if not code or not code.replace("-", "").replace("_", "").isalnum() or len(code) > 200:
            raise InvalidInput("the manifest code from GitHub is missing or malformed")
        answer = self._call("POST", f"/app-manifests/{code}/conversions", None)
        found = self._parse("convert_manifest", answer, _Conversion)
        return CreatedApp(
            found.id,
            found.slug,
            found.pem,
            found.webhook_secret,
            found.client_id,
            found.client_secret,
        )

    def _call(self, method: str, path: str, jwt: str | None) -> httpx.Response:
        headers = {"Accept": "application/vnd.github+json", "User-Agent": USER_AGENT}
        if jwt is not None:
            headers["Authorization"] = f"Bearer {jwt}"
        try:
            with httpx.Client(timeout=self.timeout_seconds, trust_env=True) as client:
                return client.request(method, self.api_url + path, headers=headers)
        except httpx.TimeoutException as exc:
            raise ProviderOutcomeUnknown(f"GitHub App call {method} {path} timed out") from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"GitHub is unreachable for {method} {path}") from exc

    def _parse(self, operation: str, answer: httpx.Response, model: type[M]) -> M:
        if answer.status_code == 401:
            raise ProviderRejected(
                f"GitHub refused the App's credentials for {operation} (401): check "
                "RESOLVEFLOW_GITHUB_APP_ID and the App's private key, and this machine's clock",
                status=401,
            )
        if answer.status_code in (403, 404, 422):
            raise ProviderRejected(
                f"GitHub refused {operation} ({answer.status_code})", status=answer.status_code
            )
        if answer.status_code >= 300:
            raise ProviderError(f"GitHub answered {answer.status_code} to {operation}")
        try:
            return model.model_validate_json(answer.content)
        except pydantic.ValidationError as exc:
            raise ProviderError(f"GitHub's answer to {operation} is not what it should be") from exc
