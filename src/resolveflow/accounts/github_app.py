"""The GitHub App's use cases: store what the manifest flow returns, map installations to
tenants, and hand out installation tokens cached across processes.

Tokens: one per installation, in ``github_app_tokens``, encrypted. ``token_for`` reads the cached
one; with less than ``refresh_margin`` left (or none) it takes the row's lock, looks again (another
process may have minted meanwhile) and only then mints one with the App's JWT, so two workers
never both mint. GitHub's tokens last an hour; with the default five-minute margin a request
never leaves with a token that expires in flight.

A token is handed out for a repository and a tenant: the installation covering the repository
must be mapped to that tenant (``install-map``), or ``AppInstallationRefused`` says why not. The
allowlists alone never decide it: an operator allowing another tenant's repository for this one
does not lend it the other tenant's installation.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

from resolveflow.accounts.admin import find_tenant, operator_actor
from resolveflow.adapters.github.app_auth import CreatedApp, GitHubAppApi, app_jwt
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import (
    AppInstallationRefused,
    ConfigError,
    Conflict,
    NotAuthorized,
    NotFound,
)
from resolveflow.store import audit
from resolveflow.store import github_app as store
from resolveflow.store.database import Connection, Database
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


@dataclass(frozen=True)
class Mapped:
    """An installation as ``map_installation`` left it: ``moved_from`` names the tenant it left
    (None: it had none, or already served this one); ``never_seen``: no installation event or
    lookup had recorded it."""

    row: store.InstallationRow
    moved_from: str | None
    never_seen: bool


def map_installation(
    db: Database, installation_id: int, tenant: str, *, force: bool = False
) -> Mapped:
    """Deliveries and writes of ``installation_id`` belong to ``tenant`` from now on.

    Moving it from another tenant, or mapping an id never seen (a typo maps a stranger's
    installation), takes ``force``; without it, an error says what would happen. A change is
    audited in the tenant it goes to, and a move also in the tenant it leaves."""
    if installation_id <= 0:
        raise NotFound("an installation id is a positive number")
    found = find_tenant(db, tenant)
    with db.tenant(found.id) as conn:
        known = store.lock_installation(conn, installation_id)
        left = _tenant_left(known, found.id)
        _check_mapping(installation_id, tenant, known, left, force)
        account = known.account if known else ""
        row = store.map_installation(conn, installation_id, account, found.id)
        if known is None or known.tenant_id != found.id:
            _audit_mapping(conn, found.id, AuditEvent.APP_INSTALLATION_MAPPED, row, known, force)
    if left is not None:
        with db.tenant(left) as conn:
            _audit_mapping(conn, left, AuditEvent.APP_INSTALLATION_MOVED_AWAY, row, known, force)
    moved_from = known.tenant if known is not None and left is not None else None
    logger.info(
        "GitHub App installation mapped",
        extra={"installation": installation_id, "moved": left is not None, "forced": force},
    )
    return Mapped(replace(row, tenant=tenant), moved_from, known is None)


def _tenant_left(known: store.InstallationRow | None, tenant_id: UUID) -> UUID | None:
    """The tenant a mapping to ``tenant_id`` takes the installation from, if any."""
    if known is None or known.tenant_id is None or known.tenant_id == tenant_id:
        return None
    return known.tenant_id


def _check_mapping(
    installation_id: int,
    tenant: str,
    known: store.InstallationRow | None,
    left: UUID | None,
    force: bool,
) -> None:
    if force:
        return
    if known is None:
        raise NotFound(
            f"installation {installation_id} was never seen (no installation event or delivery "
            f"recorded it; `resolveflow github-app installations` lists those): add --force to "
            f"map it to {tenant} anyway"
        )
    if left is not None:
        raise Conflict(
            f"installation {installation_id} belongs to tenant {known.tenant}: mapping it to "
            f"{tenant} moves its deliveries and writes there; add --force to move it"
        )


def _audit_mapping(
    conn: Connection,
    tenant_id: UUID,
    event: AuditEvent,
    row: store.InstallationRow,
    known: store.InstallationRow | None,
    force: bool,
) -> None:
    """The other tenant is not named: each tenant's audit is read by its own people."""
    moved = known is not None and known.tenant_id not in (None, row.tenant_id)
    audit.record(
        conn,
        tenant_id=tenant_id,
        actor=operator_actor(),
        event=event,
        subject_type="github_app_installation",
        subject_id=str(row.installation_id),
        details={
            "account": row.account,
            "moved": moved,
            "never_seen": known is None,
            "forced": force,
        },
    )


def list_installations(db: Database) -> list[store.InstallationRow]:
    with db.unscoped() as conn:
        return store.installations(conn)


def delivery_tenant(db: Database, installation_id: int, account: str) -> UUID | None:
    """The tenant an App delivery of ``installation_id`` belongs to (None: no tenant's, or
    suspended). An installation not recorded yet is recorded now, mapped to none: a delivery
    signed by the App is GitHub's word that it exists, so ``install-map`` takes it as seen."""
    with db.unscoped() as conn:
        row = store.installation(conn, installation_id)
        if row is None:
            store.note_installation(conn, installation_id, account)
    return None if row is None or row.suspended else row.tenant_id


def refusal(covering: store.Covering, repo: RepoName, tenant_id: UUID | None) -> str | None:
    """Why the App may not act for ``tenant_id`` through ``covering`` (None: it may).

    ``map_installation`` gives an installation's deliveries and writes to one tenant, so its token
    serves that tenant only, whatever the allowlists say; an installation mapped to no tenant
    serves none (as its deliveries start nothing). The other tenant is never named: the person
    reading this belongs to the tenant that was refused."""
    repository = repo.full_name.lower()
    number = covering.installation_id
    if tenant_id is None:
        return f"the GitHub App acts for one tenant at a time; this call on {repository} named none"
    if covering.suspended:
        return f"the GitHub App's installation covering {repository} is suspended or removed"
    if covering.tenant_id is None:
        return (
            f"the GitHub App's installation {number} covering {repository} is mapped to no "
            f"tenant: resolveflow github-app install-map --installation {number} --tenant NAME"
        )
    if covering.tenant_id != tenant_id:
        return (
            f"the GitHub App's installation covering {repository} is mapped to another tenant: "
            "the App does not read or write there for this one"
        )
    return None


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
        return self._covering(repo).installation_id

    def _covering(self, repo: RepoName) -> store.Covering:
        """The installation covering ``repo``: remembered, else asked of GitHub once."""
        full_name = repo.full_name.lower()  # as the installation events remember them
        with self.db.unscoped() as conn:
            known = store.covering_installation(conn, full_name)
        if known is not None:
            return known
        found = self.api.installation_for(self.jwt(), repo)
        with self.db.unscoped() as conn:
            if store.installation(conn, found.id) is None:
                store.record_installation(conn, found.id, found.account)
            store.remember_repository(conn, full_name, found.id)
            known = store.covering_installation(conn, full_name)
        assert known is not None  # remembered in this transaction
        return known

    def installation_for(self, repo: RepoName, tenant_id: UUID | None) -> int:
        """The installation covering ``repo`` when it is mapped to ``tenant_id``; otherwise
        ``AppInstallationRefused`` (see ``refusal``), before any token is handed out."""
        covering = self._covering(repo)
        why = refusal(covering, repo, tenant_id)
        if why is not None:
            logger.warning(
                "GitHub App refused for a tenant",
                extra={
                    "installation": covering.installation_id,
                    "tenant": str(tenant_id),
                    "mapped_to": str(covering.tenant_id),
                },
            )
            raise AppInstallationRefused(why)
        return covering.installation_id

    def token_for(self, repo: RepoName, tenant_id: UUID | None) -> str:
        return self.installation_token(self.installation_for(repo, tenant_id))

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
