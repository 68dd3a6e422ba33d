"""GitHub's OAuth web flow (authorization code with PKCE): two requests, so plain httpx.

1. The browser is sent to ``{web}/login/oauth/authorize`` with our client id, the redirect URL,
   a random ``state`` and a PKCE ``code_challenge``.
2. GitHub sends it back to the redirect URL with ``code`` and ``state``; the server exchanges the
   code (with the client secret and the PKCE verifier) at ``{web}/login/oauth/access_token``.

Who the token belongs to is then read with the ordinary adapter (``GET /user``). The web base URL
is a setting, so tests point it at the fake provider in ``github_fake_oauth``.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx

from resolveflow.errors import (
    AuthenticationFailed,
    ProviderOutcomeUnknown,
    ProviderUnavailable,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Authorization:
    url: str  # where to send the browser
    state: str
    verifier: str  # PKCE: kept by us (in a short-lived cookie), sent only with the exchange


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class GitHubOAuth:
    def __init__(
        self,
        web_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str = "public_repo",
        timeout_seconds: float = 10.0,
    ) -> None:
        self.web_url = web_url.rstrip("/")
        self.client_id = client_id
        self._client_secret = client_secret
        self.scope = scope
        self.timeout_seconds = timeout_seconds

    def authorization(self, redirect_uri: str) -> Authorization:
        state = secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48)
        query = urlencode(
            {
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": self.scope,
                "state": state,
                "code_challenge": _challenge(verifier),
                "code_challenge_method": "S256",
                "allow_signup": "false",
            }
        )
        return Authorization(f"{self.web_url}/login/oauth/authorize?{query}", state, verifier)

    def exchange(self, code: str, redirect_uri: str, verifier: str) -> str:
        """Trade the code for the user's access token (never logged)."""
        try:
            response = httpx.post(
                f"{self.web_url}/login/oauth/access_token",
                data={
                    "client_id": self.client_id,
                    "client_secret": self._client_secret,
                    "code": code,
                    "redirect_uri": redirect_uri,
                    "code_verifier": verifier,
                },
                headers={"Accept": "application/json"},
                timeout=self.timeout_seconds,
            )
        except httpx.ConnectError as exc:
            raise ProviderUnavailable(
                f"GitHub sign-in is unreachable: {type(exc).__name__}"
            ) from None
        except httpx.HTTPError as exc:
            raise ProviderOutcomeUnknown(f"GitHub sign-in failed: {type(exc).__name__}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise AuthenticationFailed(
                f"GitHub sign-in answered {response.status_code} without JSON"
            )
        token = body.get("access_token")
        if response.status_code != 200 or not isinstance(token, str) or not token:
            # GitHub answers 200 with {"error": ...} for a bad or reused code.
            reason = body.get("error_description") or body.get("error") or response.status_code
            logger.info("oauth exchange refused", extra={"reason": str(reason)[:200]})
            raise AuthenticationFailed(f"GitHub refused the sign-in: {str(reason)[:200]}")
        return token
