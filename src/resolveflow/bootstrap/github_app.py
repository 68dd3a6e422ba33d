"""The GitHub App's wiring: which App this deployment authenticates as (the one the manifest's
callback stored, else ``RESOLVEFLOW_GITHUB_APP_ID`` with ``RESOLVEFLOW_GITHUB_APP_PRIVATE_KEY_FILE``),
and the ``GitHub`` client whose service credential is then the installation token
(``adapters/github/app_client.py``, tokens from ``accounts/github_app.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from resolveflow.accounts.github_app import (
    AppIdentity,
    Clock,
    DatabaseInstallationTokens,
    stored_app,
    utc_now,
)
from resolveflow.adapters.github.app_auth import GitHubAppApi, app_jwt
from resolveflow.adapters.github.app_client import AppGitHub
from resolveflow.adapters.github.protocol import GitHub
from resolveflow.config import Settings
from resolveflow.errors import ConfigError
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher

NO_KEY = (
    "a GitHub App's installation tokens are cached encrypted: set "
    "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY (a Fernet key)"
)


@dataclass(frozen=True)
class ConfiguredApp:
    identity: AppIdentity
    webhook_secret: str | None


def configured_app(
    settings: Settings, db: Database, cipher: TokenCipher | None, clock: Clock = utc_now
) -> ConfiguredApp | None:
    """The App to authenticate as, or None when none is configured."""
    stored = stored_app(db, cipher)
    github = settings.github
    setting_secret = github.app_webhook_secret
    secret = setting_secret.get_secret_value() if setting_secret is not None else None
    if stored is not None:
        return ConfiguredApp(stored.identity, secret or stored.webhook_secret)
    if github.app_id is None:
        return None
    if github.app_private_key_file is None:
        raise ConfigError(
            "RESOLVEFLOW_GITHUB_APP_ID is set without RESOLVEFLOW_GITHUB_APP_PRIVATE_KEY_FILE"
        )
    try:
        key = Path(github.app_private_key_file).read_text("ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"RESOLVEFLOW_GITHUB_APP_PRIVATE_KEY_FILE cannot be read: {type(exc).__name__}"
        ) from None
    api = GitHubAppApi(github.api_url, github.timeout_seconds)
    slug = api.app_slug(app_jwt(github.app_id, key, clock()))
    return ConfiguredApp(AppIdentity(github.app_id, slug, key), secret)


def app_github(
    inner: GitHub,
    settings: Settings,
    db: Database,
    cipher: TokenCipher | None,
    configured: ConfiguredApp,
    clock: Clock = utc_now,
) -> AppGitHub:
    if cipher is None:
        raise ConfigError(NO_KEY)
    github = settings.github
    api = GitHubAppApi(github.api_url, github.timeout_seconds)
    tokens = DatabaseInstallationTokens(db, cipher, api, configured.identity, clock=clock)
    return AppGitHub(inner, tokens)
