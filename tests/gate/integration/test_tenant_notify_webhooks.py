"""A notification webhook per tenant (docs/notifications.md, "A webhook per tenant"), through
Postgres, the worker's round and sandbox receivers over HTTP: each tenant's proposals reach its
own hook only, a tenant without one is told through the process's, removing it falls back, a
tenant with neither is not scanned; the URL and the key are stored encrypted and bound to the
tenant; the CLI reads them from stdin only and never prints them; ``notify test`` delivers one
message where the tenant's notifications go."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import World, make_world, tables_containing
from fixtures_cli import Cli, one_line_error
from hostile_http import HostileReceiver, not_http, status, trickle_status
from resolveflow.bootstrap.app import App
from resolveflow.config import ApprovalSettings, NotifySettings, Settings, WebSettings
from resolveflow.domain.network_addresses import AddressPolicy
from resolveflow.domain.records import Proposal
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.gate import proposals
from resolveflow.notify import admin
from resolveflow.notify.domain.message import NotifyFormat
from resolveflow.notify.store import webhooks as store
from resolveflow.sandbox.notify_receiver import NotifyReceiver
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher, TokenUnreadable
from resolveflow.worker.jobs import Jobs

HMAC_KEY = "globex-hmac-key-never-logged"
URL_SECRET = "url-secret-never-logged"
KEY = TokenCipher.generate_key()
LOOPBACK = AddressPolicy.parse("127.0.0.1")  # the sandbox receivers listen there


@pytest.fixture
def hooks() -> Iterator[tuple[NotifyReceiver, NotifyReceiver, NotifyReceiver]]:
    """The process's hook, acme's own (Slack-like) and globex's own (signed JSON)."""
    with (
        NotifyReceiver() as process,
        NotifyReceiver() as acme,
        NotifyReceiver(secret=HMAC_KEY.encode()) as globex,
    ):
        yield process, acme, globex


def _app(db: Database, process_url: str | None) -> App:
    settings = Settings(
        notify=NotifySettings(url=process_url, retry_base_seconds=0, allowed_hosts="127.0.0.1"),
        approval=ApprovalSettings(ttl_seconds=3600),
        web=WebSettings(public_url="https://rf.example", token_encryption_key=KEY),
    )
    return App(settings=settings, db=db)


def _propose(db: Database, world: World, issue: int) -> Proposal:
    return proposals.create_proposal(
        db,
        world.requester(db),
        repository=world.repository,
        issue=issue,
        comment="Looking into it.",
        labels=["bug"],
    )


def test_each_tenant_is_told_through_its_own_webhook_and_only_there(
    db: Database, world: World, hooks: tuple[NotifyReceiver, NotifyReceiver, NotifyReceiver]
) -> None:
    process, acme_hook, globex_hook = hooks
    globex = make_world(db, "globex", "globex/app")
    initech = make_world(db, "initech", "initech/api")
    app = _app(db, f"{process.url}?key={URL_SECRET}")
    cipher = app.token_cipher()
    assert cipher is not None
    admin.set_webhook(db, cipher, "acme", NotifyFormat.SLACK, acme_hook.url, None, LOOPBACK)
    admin.set_webhook(db, cipher, "globex", NotifyFormat.JSON, globex_hook.url, HMAC_KEY, LOOPBACK)
    told = {_propose(db, w, 1).id: w.tenant.name for w in (world, globex, initech)}

    assert Jobs(app).notify()["sent"] == 3
    assert _slack_tenants(acme_hook) == ["acme"]
    assert [d.body["tenant"] for d in globex_hook.deliveries] == ["globex"]
    assert globex_hook.deliveries[0].verified is True  # signed with globex's own key
    assert _slack_tenants(process) == ["initech"]
    for receiver in hooks:  # each message links its own tenant's proposal
        for delivery in receiver.deliveries:
            (proposal,) = [p for p in told if str(p) in delivery.raw.decode()]
            assert f"({told[proposal]}," in delivery.raw.decode() or (
                delivery.body.get("tenant") == told[proposal]
            )

    # acme's own hook removed: its next proposal goes through the process's hook.
    assert admin.remove_webhook(db, "acme") is True
    assert admin.remove_webhook(db, "acme") is False
    _propose(db, world, 2)
    assert Jobs(app).notify()["sent"] == 1
    assert len(acme_hook.deliveries) == 1
    assert _slack_tenants(process) == ["initech", "acme"]
    # A worker runs for months: the client of acme's removed hook is closed after the round, so
    # only the destinations in use keep one (a filter on httpx's logger and a connection pool).
    notifier = app.notifier()
    assert notifier is not None
    assert {d.url for d in notifier._senders} == {
        process.url + f"?key={URL_SECRET}",
        globex_hook.url,
    }


def _slack_tenants(receiver: NotifyReceiver) -> list[str]:
    """The tenant each Slack message names: "Waiting for a decision (acme, open until ...)"."""
    return [d.body["text"].split("(", 1)[1].split(",", 1)[0] for d in receiver.deliveries]


def test_without_a_process_webhook_only_tenants_with_their_own_are_scanned(
    db: Database,
    world: World,
    hooks: tuple[NotifyReceiver, NotifyReceiver, NotifyReceiver],
    superuser: psycopg.Connection[Any],
) -> None:
    _, acme_hook, _ = hooks
    globex = make_world(db, "globex", "globex/app")
    app = _app(db, None)
    cipher = app.token_cipher()
    assert cipher is not None
    admin.set_webhook(db, cipher, "acme", NotifyFormat.SLACK, acme_hook.url, None, LOOPBACK)
    _propose(db, world, 1)
    _propose(db, globex, 1)

    assert Jobs(app).notify() == {"queued": 1, "sent": 1, "retrying": 0, "failed": 0, "dropped": 0}
    assert len(acme_hook.deliveries) == 1
    # globex, with nowhere to be told, got no rows at all
    rows = superuser.execute("SELECT tenant_id FROM notifications").fetchall()
    assert rows == [(world.tenant.id,)]


def test_a_webhook_copied_to_another_tenant_does_not_decrypt_and_tells_nobody(
    db: Database,
    world: World,
    hooks: tuple[NotifyReceiver, NotifyReceiver, NotifyReceiver],
    superuser: psycopg.Connection[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    process, acme_hook, _ = hooks
    globex = make_world(db, "globex", "globex/app")
    app = _app(db, process.url)
    cipher = app.token_cipher()
    assert cipher is not None
    admin.set_webhook(
        db, cipher, "acme", NotifyFormat.SLACK, f"{acme_hook.url}?k={URL_SECRET}", None, LOOPBACK
    )
    superuser.execute(  # an operator's mistake, or an attack on the table: acme's row for globex
        "INSERT INTO tenant_notify_webhooks (tenant_id, format, url_ciphertext) "
        "SELECT %s, format, url_ciphertext FROM tenant_notify_webhooks WHERE tenant_id = %s",
        (globex.tenant.id, world.tenant.id),
    )
    with db.tenant(globex.tenant.id) as conn, pytest.raises(TokenUnreadable, match="set it again"):
        store.tenant_webhook(conn, cipher, globex.tenant.id)
    _propose(db, globex, 1)

    with caplog.at_level(logging.DEBUG):
        assert Jobs(app).notify()["sent"] == 0
    assert acme_hook.deliveries == [] and process.deliveries == []  # not the process's either
    assert "notifications skipped" in caplog.text and "does not decrypt" in caplog.text
    assert URL_SECRET not in caplog.text
    assert tables_containing(superuser, URL_SECRET) == []  # stored encrypted only


def test_bad_webhooks_are_refused_in_one_line_and_nothing_is_stored(
    db: Database, world: World
) -> None:
    cipher = TokenCipher(KEY)
    cases = [
        ("ftp://hooks.example/x", NotifyFormat.SLACK, None, "start with http:// or https://"),
        ("https://hooks.example/a b", NotifyFormat.SLACK, None, "no spaces"),
        ("", NotifyFormat.SLACK, None, "empty"),
        ("https://hooks.example/x", NotifyFormat.JSON, None, "HMAC key on the second line"),
        ("https://hooks.example/x", NotifyFormat.JSON, "short", "16 to 1024 characters"),
    ]
    for url, fmt, secret, words in cases:
        with pytest.raises(InvalidInput, match=words) as refused:
            admin.set_webhook(db, cipher, "acme", fmt, url, secret, LOOPBACK)
        assert "\n" not in refused.value.message
        assert "hooks.example/x" not in refused.value.message  # never the URL
    with db.tenant(world.tenant.id) as conn:
        assert store.tenant_webhook(conn, cipher, world.tenant.id) is None
    with pytest.raises(ConfigError, match="no notification webhook"):
        admin.send_test(db, cipher, "acme", None, lambda where: pytest.fail("nothing to send"))


def test_cli_sets_shows_tests_and_removes_a_webhook_without_printing_it(
    cli: Cli,
    db: Database,
    tmp_path: Path,
    hooks: tuple[NotifyReceiver, NotifyReceiver, NotifyReceiver],
    superuser: psycopg.Connection[Any],
) -> None:
    process, _, globex_hook = hooks
    make_world(db)
    env = {
        "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY": KEY,
        "RESOLVEFLOW_NOTIFY_URL": process.url,
        "RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS": "127.0.0.1",
    }
    url = f"{globex_hook.url}?key={URL_SECRET}"

    shown = cli.with_stdin("notify", "show", "--json", **env)
    assert shown.returncode == 0, shown.stderr
    assert '"source": "process"' in shown.stdout and "/[redacted]" in shown.stdout

    stored = cli.with_stdin(
        "notify", "set", "--format", "json", "--stdin", stdin=f"{url}\n{HMAC_KEY}\n", **env
    )
    assert stored.returncode == 0, stored.stderr
    assert "stored: tenant acme: its own webhook, http://127.0.0.1:" in stored.stdout
    assert "(json, signed)" in stored.stdout
    for text in (URL_SECRET, HMAC_KEY):
        assert text not in stored.stdout + stored.stderr
        assert tables_containing(superuser, text) == []

    tested = cli.with_stdin("notify", "test", **env)
    assert tested.returncode == 0, tested.stderr
    assert "test message delivered" in tested.stdout
    (delivery,) = globex_hook.deliveries
    assert delivery.body == {"type": "resolveflow.test", "tenant": "acme"}
    assert delivery.verified is True and process.deliveries == []

    removed = cli.with_stdin("notify", "remove", "--json", **env)
    assert removed.returncode == 0 and '"removed": true' in removed.stdout
    tested = cli.with_stdin("notify", "test", **env)
    assert tested.returncode == 0 and "the process's webhook" in tested.stdout
    assert "a test: nothing waits" in process.deliveries[0].body["text"]

    one_line_error(cli.with_stdin("notify", "set", **env), "--stdin")
    one_line_error(
        cli.with_stdin("notify", "set", "--stdin", stdin="https://x.example/h\n"),
        "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY",
    )
    one_line_error(
        cli.with_stdin("notify", "set", "--format", "json", "--stdin", stdin=url + "\n", **env),
        "HMAC key",
    )
    globex_hook.fail_next(1, 503)
    cli.with_stdin(
        "notify", "set", "--format", "json", "--stdin", stdin=f"{url}\n{HMAC_KEY}\n", **env
    )
    one_line_error(cli.with_stdin("notify", "test", **env), "was not delivered")


def test_cli_refuses_inward_webhooks_and_never_tells_what_answered(
    cli: Cli, db: Database, superuser: psycopg.Connection[Any]
) -> None:
    """``notify set`` refuses internal destinations in one line and stores nothing; a webhook
    stored while its host was allowed is refused when sent once it is not; and ``notify test``
    says the same line whatever answered (a 401, another protocol, a closed port), so it scans
    no ports."""
    make_world(db)
    env = {"RESOLVEFLOW_TOKEN_ENCRYPTION_KEY": KEY, "RESOLVEFLOW_NOTIFY_TIMEOUT_SECONDS": "2"}
    for url in ("http://169.254.169.254/latest/", "http://2130706433:6379/", "http://[fd00::1]/"):
        refused = cli.with_stdin("notify", "set", "--stdin", stdin=url + "\n", **env)
        one_line_error(refused, "RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS")
    assert superuser.execute("SELECT count(*) FROM tenant_notify_webhooks").fetchone() == (0,)

    said = set()
    with (
        HostileReceiver(status(401)) as unauthorised,
        HostileReceiver(not_http) as other_protocol,
        HostileReceiver(status(200)) as closed,
    ):
        closed_url = closed.url
    cipher = TokenCipher(KEY)
    with HostileReceiver(status(200)) as stored_earlier:
        admin.set_webhook(
            db, cipher, "acme", NotifyFormat.SLACK, stored_earlier.url, None, LOOPBACK
        )
        one_line_error(cli.with_stdin("notify", "test", **env), "127.0.0.1 is a loopback")
        assert stored_earlier.connections == 0

    allowed = {**env, "RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS": "127.0.0.1"}
    for receiver_url in (unauthorised.url, other_protocol.url, closed_url):
        admin.set_webhook(db, cipher, "acme", NotifyFormat.SLACK, receiver_url, None, LOOPBACK)
        said.add(one_line_error(cli.with_stdin("notify", "test", **allowed), "not delivered"))
    assert said == {"error: the notification was not delivered (no 2xx answer within 2 s)"}

    # A receiver that trickles its status line for a minute holds `notify test` for its deadline
    # only, and is not reported delivered.
    with HostileReceiver(trickle_status(0.2, 60)) as trickling:
        admin.set_webhook(db, cipher, "acme", NotifyFormat.SLACK, trickling.url, None, LOOPBACK)
        started = time.monotonic()
        one_line_error(cli.with_stdin("notify", "test", **allowed), "not delivered")
        held = time.monotonic() - started
    assert held < 40, f"notify test held {held:.0f} s by a receiver that trickles for 60 s"
