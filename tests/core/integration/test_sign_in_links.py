"""One-time sign-in links on a real Postgres, as the runtime role: a link signs its principal in
once, never twice, never after it expired, never in another tenant; only its hash is stored; the
database itself refuses a second use; issuing, using and refusing are audited."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import psycopg
import pytest

from conftest import World, make_world
from resolveflow.accounts import sessions
from resolveflow.accounts import sign_in_links as links
from resolveflow.errors import InvalidInput, InvalidTransition, NotAuthorized, NotFound
from resolveflow.store import sign_in_links as link_store
from resolveflow.store.database import Database

SESSION_TTL = 3600


def _events(superuser: psycopg.Connection[Any]) -> list[tuple[str, str, Any]]:
    return superuser.execute(
        "SELECT event, actor, details FROM audit_events WHERE subject_type = 'sign_in_link' "
        "ORDER BY id"
    ).fetchall()


def _sessions(superuser: psycopg.Connection[Any]) -> int:
    row = superuser.execute("SELECT count(*) FROM web_sessions").fetchone()
    assert row is not None
    return int(row[0])


def test_a_link_signs_its_principal_in_once_and_not_twice(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    issued = links.issue(db, "acme", "alex", 15)
    assert links.look(db, issued.token).subject == "alex"  # looking uses nothing
    session = links.sign_in(db, issued.token, SESSION_TTL)
    assert session.principal.subject == "alex"
    # The same cookie a GitHub sign-in sets: it opens a session of that principal.
    assert sessions.session_for(db, session.cookie).principal.id == world.approver(db).id
    with pytest.raises(links.LinkRefused) as refused:
        links.sign_in(db, issued.token, SESSION_TTL)
    assert refused.value.why is links.Refusal.USED
    assert "used already" in refused.value.message
    with pytest.raises(links.LinkRefused):
        links.look(db, issued.token)
    assert _sessions(superuser) == 1
    events = [(event, actor) for event, actor, _ in _events(superuser)]
    assert [event for event, _ in events] == [
        "sign_in_link.issued",
        "sign_in_link.used",
        "sign_in_link.refused",
    ]
    assert events[1][1] == "principal:alex" and events[2][1] == "web"
    started = superuser.execute(
        "SELECT details FROM audit_events WHERE event = 'session.started'"
    ).fetchall()
    assert started == [({"via": "sign-in link"},)]


def test_an_expired_link_signs_nobody_in(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    issued = links.issue(db, "acme", "alex", 1)
    superuser.execute(
        "UPDATE sign_in_links SET created_at = clock_timestamp() - interval '10 minutes', "
        "expires_at = clock_timestamp() - interval '1 second'"
    )
    with pytest.raises(links.LinkRefused) as refused:
        links.sign_in(db, issued.token, SESSION_TTL)
    assert refused.value.why is links.Refusal.EXPIRED
    with pytest.raises(links.LinkRefused, match="expired"):
        links.look(db, issued.token)
    assert _sessions(superuser) == 0
    (row,) = superuser.execute("SELECT used_at FROM sign_in_links").fetchall()
    assert row == (None,)  # refused, not used
    assert _events(superuser)[-1][2] == {"reason": "expired"}


def test_a_link_of_one_tenant_signs_nobody_in_in_another(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    other = make_world(db, "globex", "globex/app")  # also has an "alex"
    issued = links.issue(db, "acme", "alex", 15)
    secret = issued.token.split("_", 2)[2]
    moved = f"rfl_{other.tenant.id.hex}_{secret}"
    with pytest.raises(links.LinkRefused) as refused:
        links.sign_in(db, moved, SESSION_TTL)
    assert refused.value.why is links.Refusal.UNKNOWN
    # Inside the other tenant, the link's row is not there at all (row-level security), even
    # when asked for by its own hash.
    token_hash = hashlib.sha256(issued.token.encode()).hexdigest()
    with db.tenant(other.tenant.id) as conn:
        assert link_store.use_link(conn, other.tenant.id, token_hash) is None
        assert link_store.use_link(conn, world.tenant.id, token_hash) is None
        assert conn.execute("SELECT count(*) AS n FROM sign_in_links").fetchone()["n"] == 0
    assert _sessions(superuser) == 0
    # The refusal is in the other tenant's trail; the link itself still works where it belongs.
    assert links.sign_in(db, issued.token, SESSION_TTL).principal.tenant_id == world.tenant.id


def test_only_the_hash_of_the_token_is_stored(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    issued = links.issue(db, "acme", "alex", 15)
    secret = issued.token.split("_", 2)[2]
    (row,) = superuser.execute("SELECT row_to_json(l)::text, token_hash FROM sign_in_links l")
    assert secret not in row[0] and issued.token not in row[0]
    assert row[1] == hashlib.sha256(issued.token.encode()).hexdigest()
    links.sign_in(db, issued.token, SESSION_TTL)
    dump = superuser.execute(
        "SELECT string_agg(row_to_json(a)::text, '') FROM audit_events a"
    ).fetchone()
    assert dump is not None and secret not in dump[0]


def test_the_database_refuses_a_second_use_and_any_other_change(db: Database, world: World) -> None:
    issued = links.issue(db, "acme", "alex", 15)
    links.sign_in(db, issued.token, SESSION_TTL)
    with pytest.raises(InvalidTransition, match="used already"), db.tenant(world.tenant.id) as c:
        c.execute("UPDATE sign_in_links SET used_at = NULL")
    with pytest.raises(NotAuthorized), db.tenant(world.tenant.id) as conn:
        conn.execute("UPDATE sign_in_links SET expires_at = clock_timestamp() + interval '1 hour'")
    with pytest.raises(NotAuthorized), db.tenant(world.tenant.id) as conn:
        conn.execute("DELETE FROM sign_in_links")


def test_racing_uses_of_one_link_sign_in_exactly_once(
    database_url: str, world: World, superuser: psycopg.Connection[Any]
) -> None:
    with Database(database_url, max_size=8) as db:
        issued = links.issue(db, "acme", "alex", 15)
        start = threading.Barrier(6)
        outcomes: list[str] = []

        def use() -> None:
            start.wait()
            try:
                links.sign_in(db, issued.token, SESSION_TTL)
                outcomes.append("signed in")
            except links.LinkRefused as refused:
                outcomes.append(refused.why.value)

        threads = [threading.Thread(target=use) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert sorted(outcomes) == ["signed in"] + ["used"] * 5
    assert _sessions(superuser) == 1


def test_lifetimes_are_bounded_and_the_principal_must_exist(
    db: Database, world: World, superuser: psycopg.Connection[Any]
) -> None:
    for minutes in (0, 61):
        with pytest.raises(InvalidInput, match="1 to 60 minutes"):
            links.issue(db, "acme", "alex", minutes)
    with pytest.raises(NotFound, match="principals add --subject nobody"):
        links.issue(db, "acme", "nobody", 15)
    with pytest.raises(NotFound):
        links.issue(db, "no-such-tenant", "alex", 15)
    approver = world.approver(db)
    # The database's own bound: at most an hour.
    with pytest.raises(InvalidInput), db.tenant(world.tenant.id) as conn:
        link_store.insert_link(
            conn,
            tenant_id=world.tenant.id,
            principal_id=approver.id,
            token_hash="0" * 64,
            issued_by="test",
            ttl_seconds=3601,
        )
    assert superuser.execute("SELECT count(*) FROM sign_in_links").fetchone() == (0,)


@pytest.mark.parametrize(
    "token", ["", "rfl_", "rf_x", "rfl_" + "0" * 32 + "_" + "a" * 43, "ü" * 50]
)
def test_malformed_or_unknown_tokens_are_refused_with_words(db: Database, token: str) -> None:
    with pytest.raises(links.LinkRefused, match="not known here"):
        links.sign_in(db, token, SESSION_TTL)
    with pytest.raises(links.LinkRefused, match="not known here"):
        links.look(db, token)
