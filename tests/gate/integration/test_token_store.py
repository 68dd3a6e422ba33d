"""One encrypted store for every principal's own GitHub token (issue 11, finding 8).

Tokens given with ``principals add --github-token-stdin`` and tokens from a sign-in live in one
table, encrypted with AES-256-GCM and bound to their principal; keys rotate; a sign-in's token
replaces an operator's; the executor writes with the approver's token or refuses, never quietly
with the service token. Rows are read and tampered with through the superuser connection.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from conftest import (
    World,
    attempt_outcomes,
    execution_state,
    propose_and_approve,
    tables_containing,
)
from fixtures_cli import Cli
from fixtures_github import SERVICE_LOGIN
from resolveflow.accounts import admin, sessions
from resolveflow.accounts.auth import authenticate
from resolveflow.bootstrap.app import App, migrate
from resolveflow.config import Settings, WebSettings
from resolveflow.domain.records import ExecutionState, Role
from resolveflow.errors import ConfigError, ErrorCategory
from resolveflow.gate import approvals, proposals
from resolveflow.gate.credentials import approver_token
from resolveflow.gate.store.context import execution_context
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store import migrate as migrations
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher, TokenOwner, TokenUnreadable

REPO = "acme/widgets"
KEY = TokenCipher.generate_key()
OLD_KEY = TokenCipher.generate_key()
NEW_KEY = TokenCipher.generate_key()


def app_with(db: Database, github_client: Any, keys: str | None) -> App:
    return App(
        settings=Settings(web=WebSettings(token_encryption_key=keys)), db=db, _github=github_client
    )


def cli_json(cli: Cli, *args: str, **env: str) -> Any:
    result = cli.with_stdin(*args, "--json", **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def approve_as(db: Database, world: World, api_token: str, comment: str) -> uuid.UUID:
    proposal = proposals.create_proposal(
        db, world.requester(db), repository=REPO, issue=1, comment=comment, labels=[]
    )
    approved = approvals.approve(
        db, authenticate(db, api_token), proposal.id, proposal.digest, 3600
    )
    return approved.execution.id


def stored_ciphertext(superuser: psycopg.Connection[Any], principal_id: uuid.UUID) -> str:
    row = superuser.execute(
        "SELECT ciphertext FROM github_tokens WHERE principal_id = %s", [principal_id]
    ).fetchone()
    assert row is not None
    return str(row[0])


# --- the CLI stores tokens encrypted, and refuses without a key -----------------------------


def test_a_token_given_on_the_cli_is_stored_encrypted_and_never_in_clear_text(
    cli: Cli, db: Database, superuser: psycopg.Connection[Any], github_client: Any
) -> None:
    token = "ghp_cli_given_" + uuid.uuid4().hex
    cli.run("tenants", "add", "acme")
    added = cli.with_stdin(
        *("principals", "add", "--subject", "olga", "--role", "approver"),
        *("--github-token-stdin", "--json"),
        stdin=token + "\n",
        RESOLVEFLOW_TOKEN_ENCRYPTION_KEY=KEY,
    )
    assert added.returncode == 0, added.stderr
    olga = uuid.UUID(json.loads(added.stdout)["id"])

    assert tables_containing(superuser, token) == []
    assert stored_ciphertext(superuser, olga).startswith("v1.")
    tenant = admin.find_tenant(db, "acme")
    lookup = app_with(db, github_client, KEY).token_lookup()
    assert lookup is not None
    with db.tenant(tenant.id) as conn:
        assert lookup(conn, tenant.id, olga) == token
        assert tenant_store.principal_by_id(conn, tenant.id, olga).has_github_token  # type: ignore[union-attr]


def test_without_a_key_github_token_stdin_is_refused_in_one_line_and_nothing_is_stored(
    cli: Cli, superuser: psycopg.Connection[Any]
) -> None:
    cli.run("tenants", "add", "acme")
    refused = cli.with_stdin(
        *("principals", "add", "--subject", "olga", "--role", "approver", "--github-token-stdin"),
        stdin="ghp_never_stored\n",
    )
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.returncode == 7, refused.stderr  # configuration
    assert len(lines) == 1 and "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY" in lines[0], refused.stderr
    assert tables_containing(superuser, "ghp_never_stored") == []
    assert tables_containing(superuser, "olga") == []


# --- ciphertexts are bound to their principal ---------------------------------------------------


def test_a_ciphertext_copied_to_another_principals_row_does_not_decrypt(
    db: Database,
    world: World,
    superuser: psycopg.Connection[Any],
    fake_github: FakeGitHubServer,
    github_client: Any,
) -> None:
    fake_github.register_token("tok-olga", "olga-on-github")
    app = app_with(db, github_client, KEY)
    olga = admin.add_principal(
        db, "acme", "olga", [Role.APPROVER], github_token="tok-olga", cipher=app.token_cipher()
    )
    alex = world.approver(db)
    with db.tenant(world.tenant.id) as conn:
        tenant_store.save_github_token(conn, TokenCipher(KEY), alex, "tok-alex")
    # Someone with write access to the table gives alex olga's token.
    superuser.execute(
        "UPDATE github_tokens SET ciphertext = %s WHERE principal_id = %s",
        [stored_ciphertext(superuser, olga.principal.id), alex.id],
    )

    with db.tenant(world.tenant.id) as conn, pytest.raises(TokenUnreadable, match="alex") as err:
        tenant_store.github_token(conn, TokenCipher(KEY), world.tenant.id, alex.id)
    assert err.value.category is ErrorCategory.FORBIDDEN
    assert "does not decrypt for that principal" in err.value.message

    _, approved = propose_and_approve(db, world, comment="alex approved this")
    app.executor().run_due()
    execution = execution_state(db, world, approved.execution.id)
    assert execution.state is ExecutionState.FAILED
    assert "alex" in (execution.detail or "") and "refused before sending" in (
        execution.detail or ""
    )
    assert fake_github.writes_received == 0


def test_an_altered_ciphertext_is_a_clear_error_never_a_cryptography_exception() -> None:
    cipher = TokenCipher(KEY)
    owner = TokenOwner(tenant_id=uuid.uuid4(), principal_id=uuid.uuid4(), subject="olga")
    sealed = cipher.encrypt("ghp_secret", owner)
    assert cipher.decrypt(sealed, owner) == "ghp_secret"
    flipped = sealed[:-3] + ("A" if sealed[-3] != "A" else "B") + sealed[-2:]
    for altered in [flipped, sealed[:-4], sealed + "x", "v1.00000000.abc", "gAAAAAB-legacy", ""]:
        with pytest.raises(TokenUnreadable, match="olga"):
            cipher.decrypt(altered, owner)
    other_tenant = TokenOwner(uuid.uuid4(), owner.principal_id, "olga")
    with pytest.raises(TokenUnreadable, match="olga"):
        cipher.decrypt(sealed, other_tenant)
    for bad in ["", " , ", "not-a-key", f"{KEY},{KEY}"]:
        with pytest.raises(ConfigError, match="RESOLVEFLOW_TOKEN_ENCRYPTION_KEY"):
            TokenCipher(bad)


# --- key rotation ---------------------------------------------------------------------------


def test_rotation_keeps_old_tokens_readable_and_reencrypt_moves_them_to_the_primary(
    cli: Cli, db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    alex = world.approver(db)
    rita = world.requester(db)
    with db.tenant(world.tenant.id) as conn:
        tenant_store.save_github_token(conn, TokenCipher(OLD_KEY), alex, "tok-alex")
        tenant_store.save_github_token(conn, TokenCipher(f"{NEW_KEY},{OLD_KEY}"), rita, "tok-rita")
    rotated, new_only = TokenCipher(f"{NEW_KEY},{OLD_KEY}"), TokenCipher(NEW_KEY)
    old_id, new_id = TokenCipher(OLD_KEY).primary_key_id, new_only.primary_key_id
    assert stored_ciphertext(superuser, alex.id).startswith(f"v1.{old_id}.")
    assert stored_ciphertext(superuser, rita.id).startswith(f"v1.{new_id}.")

    with db.tenant(world.tenant.id) as conn:
        assert tenant_store.github_token(conn, rotated, world.tenant.id, alex.id) == "tok-alex"
        with pytest.raises(TokenUnreadable, match=f"alex was encrypted with key {old_id}"):
            tenant_store.github_token(conn, new_only, world.tenant.id, alex.id)

    untouched = stored_ciphertext(superuser, rita.id)
    done = cli_json(
        cli, "tokens", "reencrypt", RESOLVEFLOW_TOKEN_ENCRYPTION_KEY=f"{NEW_KEY},{OLD_KEY}"
    )
    assert done == {"primary_key_id": new_id, "reencrypted": 1, "unreadable": []}
    assert stored_ciphertext(superuser, alex.id).startswith(f"v1.{new_id}.")
    assert stored_ciphertext(superuser, rita.id) == untouched  # already under the primary
    with db.tenant(world.tenant.id) as conn:
        assert tenant_store.github_token(conn, new_only, world.tenant.id, alex.id) == "tok-alex"
        assert tenant_store.github_token(conn, new_only, world.tenant.id, rita.id) == "tok-rita"
    assert admin.reencrypt_tokens(db, new_only).changed == 0


# --- which token writes -------------------------------------------------------------------------


def test_a_sign_in_token_replaces_the_operators_and_the_executor_writes_with_it(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: Any
) -> None:
    fake_github.register_token("tok-olga-operator", "olga-bot")
    fake_github.register_token("gho-olga-signed-in", "olga-on-github")
    app = app_with(db, github_client, KEY)
    olga = admin.add_principal(
        db,
        "acme",
        "olga",
        [Role.APPROVER],
        github_token="tok-olga-operator",
        cipher=app.token_cipher(),
    )
    first = approve_as(db, world, olga.token, "before olga signed in")
    app.executor().run_due()
    sessions.sign_in(
        db,
        login="olga",
        github_token="gho-olga-signed-in",
        grants=sessions.parse_users({"olga": "acme:approver"}),
        cipher=TokenCipher(KEY),
        ttl_seconds=3600,
    )
    second = approve_as(db, world, olga.token, "after olga signed in")
    _, by_alex = propose_and_approve(db, world, comment="alex has no token of his own")
    app.executor().run_due()

    authors = {c["body"].split("\n")[0]: c["user"]["login"] for c in fake_github.comments(REPO, 1)}
    assert authors == {
        "before olga signed in": "olga-bot",
        "after olga signed in": "olga-on-github",
        "alex has no token of his own": SERVICE_LOGIN,
    }
    assert [w.login for w in fake_github.write_log] == ["olga-bot", "olga-on-github", SERVICE_LOGIN]
    for execution_id in [first, second, by_alex.execution.id]:
        assert attempt_outcomes(db, world, execution_id) == [("comment", "sent")]


def test_an_approver_whose_token_cannot_be_read_is_refused_not_sent_as_the_service(
    db: Database, world: World, fake_github: FakeGitHubServer, github_client: Any
) -> None:
    olga = admin.add_principal(
        db, "acme", "olga", [Role.APPROVER], github_token="tok-olga", cipher=TokenCipher(KEY)
    )
    execution_id = approve_as(db, world, olga.token, "needs olga's own token")
    app_with(db, github_client, None).executor().run_due()
    execution = execution_state(db, world, execution_id)
    assert execution.state is ExecutionState.FAILED
    assert "olga" in (execution.detail or "")
    assert "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY" in (execution.detail or "")
    assert fake_github.writes_received == 0
    # Reconciliation asks the same function, and fails the same way rather than guess.
    with db.tenant(world.tenant.id) as conn:
        context = execution_context(conn, execution)
        with pytest.raises(ConfigError, match="olga"):
            approver_token(conn, context, None)


# --- the migration: clear-text CLI tokens and unbound sign-in tokens move into the store -----


@pytest.fixture
def pre_0010_url(pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database with only the migrations before 0010 applied."""
    name = f"t_pre_{uuid.uuid4().hex[:10]}"
    root = pg_server.get_uri()
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    url = pg_server.get_uri(name)
    earlier = [m for m in migrations.available_migrations() if m.version < "0010"]
    with (
        monkeypatch.context() as patch,
        psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn,
    ):
        patch.setattr(migrations, "available_migrations", lambda: earlier)
        migrations.upgrade(conn)
    yield url
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


def test_the_migration_moves_clear_text_tokens_into_the_encrypted_store(
    pre_0010_url: str,
) -> None:
    from cryptography.fernet import Fernet

    with psycopg.connect(pre_0010_url, autocommit=True, row_factory=dict_row) as owner:
        tenant = owner.execute("INSERT INTO tenants (name) VALUES ('acme') RETURNING id").fetchone()
        ids = {}
        for subject, clear in [
            ("olga", "tok-olga-clear"),
            ("alex", "tok-alex-clear"),
            ("rita", None),
        ]:
            row = owner.execute(
                "INSERT INTO principals (tenant_id, subject, roles, token_hash, github_token)"
                " VALUES (%s, %s, '{approver}', %s, %s) RETURNING id",
                [tenant["id"], subject, uuid.uuid4().hex * 2, clear],  # type: ignore[index]
            ).fetchone()
            ids[subject] = row["id"]  # type: ignore[index]
        owner.execute(  # alex also signed in before this release: Fernet, bound to nobody
            "INSERT INTO user_github_tokens (principal_id, tenant_id, github_login, ciphertext)"
            " VALUES (%s, %s, 'alex', %s)",
            [ids["alex"], tenant["id"], Fernet(KEY).encrypt(b"gho-alex-signed-in").decode()],  # type: ignore[index]
        )

    migrate(pre_0010_url)  # a start-up without a key: the tokens wait, out of the runtime's reach
    with psycopg.connect(pre_0010_url, autocommit=True) as conn:
        assert tables_containing(conn, "tok-olga-clear") == ["github_tokens_to_seal"]
        assert tables_containing(conn, "tok-alex-clear") == []  # the sign-in token wins
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'principals'"
        ).fetchall()
        assert ("github_token",) not in columns
        conn.execute("SET ROLE resolveflow_app")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT secret FROM github_tokens_to_seal")
    with Database(pre_0010_url) as db, db.tenant(tenant["id"]) as conn:  # type: ignore[index]
        assert tenant_store.principal_by_id(conn, tenant["id"], ids["olga"]).has_github_token  # type: ignore[index,union-attr]
        with pytest.raises(TokenUnreadable, match="olga is still waiting to be encrypted"):
            tenant_store.github_token(conn, TokenCipher(KEY), tenant["id"], ids["olga"])  # type: ignore[index]

    migrate(pre_0010_url, TokenCipher(KEY))  # the first start-up with the key seals them
    with psycopg.connect(pre_0010_url, autocommit=True) as conn:
        for secret in ["tok-olga-clear", "tok-alex-clear", "gho-alex-signed-in"]:
            assert tables_containing(conn, secret) == [], secret
        assert conn.execute("SELECT count(*) FROM github_tokens_to_seal").fetchone() == (0,)
    with Database(pre_0010_url) as db, db.tenant(tenant["id"]) as conn:  # type: ignore[index]
        read = {
            subject: tenant_store.github_token(conn, TokenCipher(KEY), tenant["id"], pid)  # type: ignore[index]
            for subject, pid in ids.items()
        }
    assert read == {"olga": "tok-olga-clear", "alex": "gho-alex-signed-in", "rita": None}
