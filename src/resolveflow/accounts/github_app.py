"""The GitHub App's use cases: store what the manifest flow returns, map installations to
tenants, and hand out installation tokens cached across processes.

Tokens: one per installation, in ``github_app_tokens``, encrypted. ``token_for`` reads the cached
one; with less than ``refresh_margin`` left (or none) it takes the row's lock, looks again (another
process may have minted meanwhile) and only then mints one with the App's JWT, so two workers
never both mint. GitHub's tokens last an hour; with the default five-minute margin a request
never leaves with a token that expires in flight.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from resolveflow.accounts.admin import find_tenant
from resolveflow.adapters.github.app_auth import CreatedApp, GitHubAppApi, app_jwt
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.errors import ConfigError, NotAuthorized, NotFound
from resolveflow.store import github_app as store
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher, TokenUnreadable

logger = logging.getLogger(__name__)

REFRESH_MARGIN = timedelta(minutes=5)
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class AppIdentity:
    """The App as it authenticates: id, slug (its bot is ``<slug>[bot]``) and private key."""

    app_id: int
    slug: str
    private_key: str

    def __repr__(self) -> str:
        return f"AppIdentity(app_id={self.app_id}, slug={self.slug!r})"

    @property
    def bot_login(self) -> str:
        return f"{self.slug}[bot]"


def save_created_app(db: Database, cipher: TokenCipher, created: CreatedApp) -> None:
    """Store the App the manifest flow created, every secret encrypted."""

    def seal(value: str | None, field: str) -> str | None:
        owner = store.secret_owner(created.app_id, field)
        return None if value is None else cipher.encrypt(value, owner)

    private_key = seal(created.private_key, "private_key")
    assert private_key is not None
    with db.unscoped() as conn:
        store.save_app(
            conn,
            store.StoredApp(
                app_id=created.app_id,
                slug=created.slug,
                client_id=created.client_id,
                private_key=private_key,
                webhook_secret=seal(created.webhook_secret, "webhook_secret"),
                client_secret=seal(created.client_secret, "client_secret"),
            ),
        )
    logger.info("GitHub App stored", extra={"app_id": created.app_id, "slug": created.slug})


@dataclass(frozen=True)
class StoredSecrets:
    identity: AppIdentity
    webhook_secret: str | None


def stored_app(db: Database, cipher: TokenCipher | None) -> StoredSecrets | None:
    """The App stored by the manifest's callback, decrypted; None when there is none."""
    with db.unscoped() as conn:
        row = store.stored_app(conn)
    if row is None:
        return None
    if cipher is None:
        raise ConfigError(
            "a GitHub App is stored encrypted: set RESOLVEFLOW_TOKEN_ENCRYPTION_KEY to use it"
        )
    try:
        key = cipher.decrypt(row.private_key, store.secret_owner(row.app_id, "private_key"))
        secret = (
            None
            if row.webhook_secret is None
            else cipher.decrypt(
                row.webhook_secret, store.secret_owner(row.app_id, "webhook_secret")
            )
        )
    except TokenUnreadable:
        raise ConfigError(
            "the stored GitHub App's secrets do not decrypt with RESOLVEFLOW_TOKEN_ENCRYPTION_KEY;"
            " create the App again (resolveflow github-app manifest)"
        ) from None
    return StoredSecrets(AppIdentity(row.app_id, row.slug, key), secret)


def map_installation(db: Database, installation_id: int, tenant: str) -> store.InstallationRow:
    """Deliveries and writes of ``installation_id`` belong to ``tenant`` from now on."""
    if installation_id <= 0:
        raise NotFound("an installation id is a positive number")
    found = find_tenant(db, tenant)
    with db.unscoped() as conn:
        known = store.installation(conn, installation_id)
        account = known.account if known else ""
        return store.map_installation(conn, installation_id, account, found.id)


def list_installations(db: Database) -> list[store.InstallationRow]:
    with db.unscoped() as conn:
        return store.installations(conn)


def installation_tenant(db: Database, installation_id: int) -> UUID | None:
    with db.unscoped() as conn:
        row = store.installation(conn, installation_id)
    return None if row is None or row.suspended else row.tenant_id


class DatabaseInstallationTokens:
    """``InstallationTokens`` over the database cache (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        cipher: TokenCipher,
        api: GitHubAppApi,
        identity: AppIdentity,
        *,
        clock: Clock = utc_now,
        refresh_margin: timedelta = REFRESH_MARGIN,
    ) -> None:
        self.db = db
        self.cipher = cipher
        self.api = api
        self.identity = identity
        self.clock = clock
        self.refresh_margin = refresh_margin

    @property
    def bot_login(self) -> str:
        return self.identity.bot_login

    def jwt(self) -> str:
        return app_jwt(self.identity.app_id, self.identity.private_key, self.clock())

    def installation_id(self, repo: RepoName) -> int:
        """The installation covering ``repo``: remembered, else asked of GitHub once."""
        with self.db.unscoped() as conn:
            known = store.repository_installation(conn, repo.full_name)
        if known is not None:
            return known
        found = self.api.installation_for(self.jwt(), repo)
        with self.db.unscoped() as conn:
            if store.installation(conn, found.id) is None:
                store.record_installation(conn, found.id, found.account)
            store.remember_repository(conn, repo.full_name, found.id)
        return found.id

    def token_for(self, repo: RepoName) -> str:
        return self.installation_token(self.installation_id(repo))

    def installation_token(self, installation_id: int) -> str:
        with self.db.unscoped() as conn:
            cached = store.cached_token(conn, installation_id)
        if cached is not None and self._fresh(cached):
            return self._open(installation_id, cached)
        with self.db.unscoped() as conn:
            cached = store.lock_token(conn, installation_id)  # held until this block commits
            if self._fresh(cached):
                return self._open(installation_id, cached)
            minted = self.api.mint_token(self.jwt(), installation_id)
            store.store_token(
                conn,
                installation_id,
                self.cipher.encrypt(minted.token, self._owner(installation_id)),
                minted.expires_at,
            )
        logger.info("installation token minted", extra={"installation": installation_id})
        return minted.token

    def refused(self, repo: RepoName, token: str) -> None:
        installation_id = self.installation_id(repo)
        with self.db.unscoped() as conn:
            cached = store.lock_token(conn, installation_id)
            if cached.ciphertext is not None and self._open(installation_id, cached) == token:
                store.drop_token(conn, installation_id)
        logger.info("installation token refused by GitHub", extra={"installation": installation_id})

    def _fresh(self, cached: store.CachedToken) -> bool:
        return (
            cached.ciphertext is not None
            and cached.expires_at is not None
            and cached.expires_at - self.clock() > self.refresh_margin
        )

    def _owner(self, installation_id: int) -> store.AppSecret:
        return store.secret_owner(self.identity.app_id, f"installation {installation_id} token")

    def _open(self, installation_id: int, cached: store.CachedToken) -> str:
        assert cached.ciphertext is not None
        try:
            return self.cipher.decrypt(cached.ciphertext, self._owner(installation_id))
        except TokenUnreadable:  # the key changed: a new token is cheap
            with self.db.unscoped() as conn:
                store.lock_token(conn, installation_id)
                store.drop_token(conn, installation_id)
            return self.installation_token(installation_id)


MANIFEST_STATE_SECONDS = 3600  # an App is created from its manifest within the hour


def issue_manifest_state(db: Database) -> str:
    """A one-time state for the manifest flow (GitHub returns it with the code); only its hash
    is kept."""
    state = secrets.token_urlsafe(24)
    with db.unscoped() as conn:
        store.issue_manifest_state(conn, _state_hash(state), MANIFEST_STATE_SECONDS)
    return state


def redeem_manifest_state(db: Database, state: str) -> None:
    """``NotAuthorized`` unless ``state`` was issued here, is unused and has not expired; it
    cannot be used again."""
    if not state or len(state) > 200:
        raise NotAuthorized("the callback needs the state `github-app manifest` printed")
    with db.unscoped() as conn:
        if not store.redeem_manifest_state(conn, _state_hash(state)):
            raise NotAuthorized(
                "this state was not issued here, was used already or expired: run "
                "`resolveflow github-app manifest` again"
            )


def _state_hash(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8")).hexdigest()
