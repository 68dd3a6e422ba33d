"""Mailbox grants and mailbox secrets: encrypted, bound to their tenant and mailbox, given on
stdin only, never printed, logged or stored in clear; the CLI refuses mailboxes the policy file
does not configure, in one line."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import World, execution_state, make_world, tables_containing
from fixtures_cli import Cli, one_line_error
from fixtures_mail import MAILBOX, approve, email_action, executor, mailbox_toml, make_mail, propose
from resolveflow.domain.records import ExecutionState
from resolveflow.errors import InvalidInput
from resolveflow.mail import admin as mail_admin
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.mail.store import credentials as mail_credentials
from resolveflow.mail.store import grants as mail_grants
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher, TokenUnreadable

SECRET = "pw-7c1e5d0a-never-in-clear"
OTHER = "other@acme.example"


def test_a_ciphertext_copied_to_another_tenant_or_mailbox_does_not_decrypt(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    cipher = TokenCipher(TokenCipher.generate_key())
    globex = make_world(db, "globex", "globex/app")
    with db.tenant(world.tenant.id) as conn:
        mail_credentials.save_mailbox_secret(
            conn, cipher, world.tenant.id, MAILBOX, "password", SECRET
        )
        mail_credentials.save_mailbox_secret(
            conn, cipher, world.tenant.id, OTHER, "password", "other-secret"
        )
        found = mail_credentials.mailbox_secret(
            conn, cipher, world.tenant.id, "Support@ACME.example"
        )
    assert found is not None and (found.kind, found.secret) == ("password", SECRET)
    assert SECRET not in repr(found)
    assert tables_containing(superuser, SECRET) == []

    # Copied to another tenant's row, to another mailbox's row, or relabelled as the other kind.
    superuser.execute(
        "INSERT INTO mailbox_credentials (tenant_id, mailbox, kind, ciphertext) "
        "SELECT %s, mailbox, kind, ciphertext FROM mailbox_credentials "
        "WHERE tenant_id = %s AND mailbox = %s",
        [globex.tenant.id, world.tenant.id, MAILBOX],
    )
    superuser.execute(
        "UPDATE mailbox_credentials SET ciphertext = (SELECT ciphertext FROM mailbox_credentials "
        "WHERE tenant_id = %s AND mailbox = %s) WHERE tenant_id = %s AND mailbox = %s",
        [world.tenant.id, MAILBOX, world.tenant.id, OTHER],
    )
    with db.tenant(globex.tenant.id) as conn, pytest.raises(TokenUnreadable, match=MAILBOX):
        mail_credentials.mailbox_secret(conn, cipher, globex.tenant.id, MAILBOX)
    with db.tenant(world.tenant.id) as conn, pytest.raises(TokenUnreadable, match=OTHER):
        mail_credentials.mailbox_secret(conn, cipher, world.tenant.id, OTHER)
    superuser.execute(
        "UPDATE mailbox_credentials SET kind = 'xoauth2' WHERE tenant_id = %s AND mailbox = %s",
        [world.tenant.id, MAILBOX],
    )
    with db.tenant(world.tenant.id) as conn, pytest.raises(TokenUnreadable):
        mail_credentials.mailbox_secret(conn, cipher, world.tenant.id, MAILBOX)


def test_the_secret_is_in_no_log_record_and_not_in_the_database_in_clear(
    db: Database,
    world: World,
    superuser: psycopg.Connection[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeSmtpServer(credentials=(MAILBOX, SECRET)) as smtp:
        mail = make_mail(db, world, mailbox_toml("acme", smtp.port, username=MAILBOX))
        mail_admin.set_mailbox_secret(
            db,
            mail.cipher,
            "acme",
            MAILBOX,
            tenant_mailboxes(mail.policy, "acme"),
            "password",
            SECRET,
        )
        approved = approve(db, mail, propose(db, mail, email_action()))
        executor(db, mail).run_due()
        assert execution_state(db, world, approved.execution.id).state is ExecutionState.SENT
        assert len(smtp.logins) == 1
    assert caplog.records  # the run did log
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)
    assert tables_containing(superuser, SECRET) == []


def test_grants_are_per_tenant_principal_and_configured_mailbox(db: Database, world: World) -> None:
    mail = make_mail(db, world, mailbox_toml("acme", 2525), grant=())
    configured = tenant_mailboxes(mail.policy, "acme")
    assert mail_admin.set_mailbox_grant(
        db, "acme", "alex", "SUPPORT@acme.example", configured, granted=True
    )
    assert not mail_admin.set_mailbox_grant(db, "acme", "alex", MAILBOX, configured, granted=True)
    with pytest.raises(InvalidInput, match="not a mailbox of tenant acme"):
        mail_admin.set_mailbox_grant(db, "acme", "alex", OTHER, configured, granted=True)
    alex = world.approver(db)
    with db.tenant(world.tenant.id) as conn:
        assert mail_grants.granted_mailboxes(conn, world.tenant.id, alex.id) == {MAILBOX}
        assert mail_grants.granted_mailboxes(conn, world.tenant.id, world.requester(db).id) == set()
    assert mail_admin.set_mailbox_grant(db, "acme", "alex", MAILBOX, configured, granted=False)
    with db.tenant(world.tenant.id) as conn:
        assert mail_grants.granted_mailboxes(conn, world.tenant.id, alex.id) == frozenset()


def test_cli_grants_and_stores_a_secret_without_printing_it(
    cli: Cli, db: Database, tmp_path: Path, superuser: psycopg.Connection[Any]
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(mailbox_toml("acme", 2525, username=MAILBOX), "utf-8")
    env = {
        "RESOLVEFLOW_POLICY_FILE": str(policy),
        "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY": TokenCipher.generate_key(),
    }
    make_world(db)  # in process: only the commands under test run as processes
    granted = cli.with_stdin(
        "principals", "grant", "--subject", "alex", "--mailbox", MAILBOX, **env
    )
    assert granted.returncode == 0, granted.stderr
    assert f"{MAILBOX} granted for alex" in granted.stdout
    one_line_error(
        cli.with_stdin("principals", "grant", "--subject", "alex", "--mailbox", OTHER, **env),
        "not a mailbox of tenant acme",
    )
    stored = cli.with_stdin(
        "mail",
        "credentials",
        "set",
        "--mailbox",
        MAILBOX,
        "--stdin",
        stdin=SECRET + "\n",
        **env,
    )
    assert stored.returncode == 0, stored.stderr
    assert SECRET not in stored.stdout + stored.stderr
    assert tables_containing(superuser, SECRET) == []
    row = superuser.execute("SELECT kind, ciphertext FROM mailbox_credentials").fetchone()
    assert row is not None and row[0] == "password" and row[1].startswith("v1.")
    one_line_error(
        cli.with_stdin("mail", "credentials", "set", "--mailbox", MAILBOX, **env), "--stdin"
    )
    one_line_error(
        cli.with_stdin(
            "mail", "credentials", "set", "--mailbox", OTHER, "--stdin", stdin="x", **env
        ),
        "not a mailbox of tenant acme",
    )


def test_cli_edits_an_email_proposal_into_a_new_version(
    cli: Cli, db: Database, tmp_path: Path
) -> None:
    world = make_world(db)
    # rita edits: an edit of mail takes the mailbox's grant, as reading it does (issue 26)
    mail = make_mail(db, world, mailbox_toml("acme", 2525), grant=("alex", "rita"))
    proposal = propose(db, mail, email_action())
    text = tmp_path / "text.txt"
    text.write_text("Hello Alice,\n\nThe refund is on its way.\n", "utf-8")
    args = ["proposals", "edit", str(proposal.id), "--bcc", "audit@acme.example"]
    args += ["--cc", "ops@acme.example", "--cc", "lead@acme.example"]
    args += ["--subject", "Re: Refund", "--text-file", str(text)]
    view = cli.json(*args, token=world.requester_token)
    assert view["version"] == 2 and view["digest"] != proposal.digest
    action = view["action"]
    assert (action["bcc"], action["cc"]) == (
        ["audit@acme.example"],
        ["lead@acme.example", "ops@acme.example"],
    )
    assert (action["subject"], action["text"]) == ("Re: Refund", text.read_text("utf-8"))
    assert action["to"] == ["alice@customer.example"]
    refused = cli.run(
        "proposals", "edit", str(proposal.id), "--title", "x", token=world.requester_token, ok=False
    )
    assert refused.returncode != 0 and "an email has recipients" in refused.stderr
