"""The GitHub App's rows (migration 0029): its encrypted credentials, installations and their
tenants, which installation covers a repository, and the shared installation token cache.

Secrets are encrypted by the caller's ``TokenCipher`` with ``AppSecret`` owners: the associated
data names the App and the field (or the installation), so a ciphertext moved elsewhere does not
decrypt. Non-tenant tables: read and written in ``db.unscoped()`` transactions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import TokenOwner

_NO_ONE = UUID(int=0)


@dataclass(frozen=True)
class AppSecret(TokenOwner):
    """The cipher's owner of one App secret: ``subject`` names the field (or installation)."""

    def associated_data(self) -> bytes:
        return f"resolveflow github app v1|{self.subject}".encode()


def secret_owner(app_id: int, field: str) -> AppSecret:
    return AppSecret(_NO_ONE, _NO_ONE, f"app {app_id} {field}")


@dataclass(frozen=True)
class StoredApp:
    app_id: int
    slug: str
    client_id: str
    private_key: str  # ciphertexts, all three
    webhook_secret: str | None
    client_secret: str | None


@dataclass(frozen=True)
class InstallationRow:
    installation_id: int
    account: str
    tenant_id: UUID | None
    suspended: bool
    tenant: str | None = None


@dataclass(frozen=True)
class Covering:
    """The installation covering a repository: whose it is (``tenant_id`` None: no tenant's) and
    whether it is suspended (None: the installation itself was never recorded)."""

    installation_id: int
    tenant_id: UUID | None
    suspended: bool | None


@dataclass(frozen=True)
class CachedToken:
    ciphertext: str | None
    expires_at: datetime | None
    minted: int


def save_app(conn: Connection, app: StoredApp) -> None:
    conn.execute(q("github_app", "save_app"), app.__dict__)
    conn.execute(q("github_app", "forget_tokens"))


def stored_app(conn: Connection) -> StoredApp | None:
    row = conn.execute(q("github_app", "stored_app")).fetchone()
    return None if row is None else StoredApp(**row)


def record_installation(conn: Connection, installation_id: int, account: str) -> None:
    conn.execute(
        q("github_app", "record_installation"),
        {"installation_id": installation_id, "account": account},
    )


def note_installation(conn: Connection, installation_id: int, account: str) -> None:
    """Record an installation first seen in a delivery; one recorded already is left as it is."""
    conn.execute(
        q("github_app", "note_installation"),
        {"installation_id": installation_id, "account": account},
    )


def installation_removed(conn: Connection, installation_id: int) -> None:
    conn.execute(q("github_app", "installation_removed"), {"installation_id": installation_id})


def map_installation(
    conn: Connection, installation_id: int, account: str, tenant_id: UUID
) -> InstallationRow:
    row = conn.execute(
        q("github_app", "map_installation"),
        {"installation_id": installation_id, "account": account, "tenant_id": tenant_id},
    ).fetchone()
    assert row is not None
    return InstallationRow(**row)


def installation(conn: Connection, installation_id: int) -> InstallationRow | None:
    row = conn.execute(
        q("github_app", "installation"), {"installation_id": installation_id}
    ).fetchone()
    return None if row is None else InstallationRow(**row)


def lock_installation(conn: Connection, installation_id: int) -> InstallationRow | None:
    """The installation with its tenant's name, locked until the transaction ends."""
    row = conn.execute(
        q("github_app", "lock_installation"), {"installation_id": installation_id}
    ).fetchone()
    return None if row is None else InstallationRow(**row)


def installations(conn: Connection) -> list[InstallationRow]:
    return [InstallationRow(**row) for row in conn.execute(q("github_app", "installations"))]


def remember_repository(conn: Connection, full_name: str, installation_id: int) -> None:
    conn.execute(
        q("github_app", "remember_repository"),
        {"full_name": full_name, "installation_id": installation_id},
    )


def covering_installation(conn: Connection, full_name: str) -> Covering | None:
    """The installation remembered as covering ``full_name``; None when none is."""
    row = conn.execute(
        q("github_app", "covering_installation"), {"full_name": full_name}
    ).fetchone()
    return None if row is None else Covering(**row)


def proposal_installation(conn: Connection, tenant_id: UUID, proposal_id: UUID) -> int | None:
    row = conn.execute(
        q("github_app", "proposal_installation"),
        {"tenant_id": tenant_id, "proposal_id": proposal_id},
    ).fetchone()
    return None if row is None else int(row["installation_id"])


def _cached(row: dict[str, Any] | None) -> CachedToken:
    assert row is not None  # ensured by the caller, in this transaction
    return CachedToken(row["ciphertext"], row["expires_at"], row["minted"])


def cached_token(conn: Connection, installation_id: int) -> CachedToken | None:
    row = conn.execute(
        q("github_app", "cached_token"), {"installation_id": installation_id}
    ).fetchone()
    return None if row is None else _cached(row)


def lock_token(conn: Connection, installation_id: int) -> CachedToken:
    """The installation's cache row, locked until the transaction ends (made if missing)."""
    params = {"installation_id": installation_id}
    conn.execute(q("github_app", "ensure_token_row"), params)
    return _cached(conn.execute(q("github_app", "lock_token"), params).fetchone())


def store_token(
    conn: Connection, installation_id: int, ciphertext: str, expires_at: datetime
) -> None:
    conn.execute(
        q("github_app", "store_token"),
        {"installation_id": installation_id, "ciphertext": ciphertext, "expires_at": expires_at},
    )


def drop_token(conn: Connection, installation_id: int) -> None:
    conn.execute(q("github_app", "drop_token"), {"installation_id": installation_id})


def issue_manifest_state(conn: Connection, state_hash: str, seconds: int) -> None:
    params = {"state_hash": state_hash, "seconds": seconds}
    conn.execute(q("github_app", "issue_manifest_state"), params)


def redeem_manifest_state(conn: Connection, state_hash: str) -> bool:
    row = conn.execute(
        q("github_app", "redeem_manifest_state"), {"state_hash": state_hash}
    ).fetchone()
    return row is not None
