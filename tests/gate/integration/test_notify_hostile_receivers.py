"""One tenant's hostile webhook never costs another tenant anything (docs/notifications.md,
"Bounded in time, memory and destination"): through Postgres, the worker's round and hostile
receivers on real sockets (``tests/hostile_http.py``). A receiver that floods its answer costs
the worker no memory; one that trickles holds a round for one deadline, then the tenant's turn
ends while the other tenants' messages go out; every notification is sent exactly once, also
when two workers run rounds side by side."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from conftest import World, make_world
from hostile_http import Behaviour, HostileReceiver, flood, status, trickle_status
from process_memory import rss_bytes
from resolveflow.bootstrap.app import App
from resolveflow.config import ApprovalSettings, NotifySettings, Settings, WebSettings
from resolveflow.domain.network_addresses import AddressPolicy
from resolveflow.domain.records import Proposal
from resolveflow.domain.vocabulary import NotificationState as S
from resolveflow.gate import proposals
from resolveflow.notify import admin
from resolveflow.notify.domain.message import NotifyFormat
from resolveflow.notify.notifier import Notifier
from resolveflow.notify.store import notifications as store
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.worker.jobs import Jobs

KEY = TokenCipher.generate_key()
LOOPBACK = AddressPolicy.parse("127.0.0.1")
GIB = 1 << 30


def _app(db: Database, **notify: Any) -> App:
    settings = Settings(
        notify=NotifySettings(
            **{"allowed_hosts": "127.0.0.1", "retry_base_seconds": 3600, "timeout_seconds": 1}
            | notify
        ),
        approval=ApprovalSettings(ttl_seconds=3600),
        web=WebSettings(public_url="https://rf.example", token_encryption_key=KEY),
    )
    return App(settings=settings, db=db)


def _hook(app: App, tenant: str, url: str) -> None:
    cipher = app.token_cipher()
    assert cipher is not None
    admin.set_webhook(app.db, cipher, tenant, NotifyFormat.SLACK, url, None, LOOPBACK)


def _propose(db: Database, world: World, issue: int) -> Proposal:
    return proposals.create_proposal(
        db, world.requester(db), repository=world.repository, issue=issue, comment="Hi", labels=[]
    )


def _rows(db: Database, world: World) -> list[store.NotificationRow]:
    with db.tenant(world.tenant.id) as conn:
        return store.notifications_of(conn, world.tenant.id)


@pytest.fixture
def receivers() -> Iterator[dict[str, HostileReceiver]]:
    """acme's webhook trickles its status line (a byte every 0.1 s for a minute); globex's and
    initech's answer at once."""
    with (
        HostileReceiver(trickle_status(0.1, 60)) as acme,
        HostileReceiver(status(200)) as globex,
        HostileReceiver(status(204)) as initech,
    ):
        yield {"acme": acme, "globex": globex, "initech": initech}


def test_a_trickling_webhook_costs_one_deadline_and_delays_no_other_tenant(
    db: Database, world: World, receivers: dict[str, HostileReceiver]
) -> None:
    globex = make_world(db, "globex", "globex/app")
    initech = make_world(db, "initech", "initech/api")
    app = _app(db)
    for name, receiver in receivers.items():
        _hook(app, name, receiver.url)
    for issue in (1, 2, 3):
        _propose(db, world, issue)
    others = {w.tenant.name: [_propose(db, w, i).id for i in (1, 2)] for w in (globex, initech)}

    started = time.monotonic()
    done = Jobs(app).notify()
    took = time.monotonic() - started

    # acme's first message met the trickle and was cut at the 1 s deadline; its turn ended
    # there: the two others were not claimed (no attempt spent), and wait for the next round.
    assert sorted(r.attempts for r in _rows(db, world)) == [0, 0, 1]
    assert len(receivers["acme"].requests) == 1
    assert took < 20, f"one round took {took:.0f} s behind a webhook that trickles for a minute"
    assert done["sent"] == 4 and done["retrying"] == 1
    for tenant, told in others.items():
        assert len(receivers[tenant].requests) == 2
        assert {r.proposal_id for r in _rows(db, globex if tenant == "globex" else initech)} == set(
            told
        )

    # The next round puts the tenant whose webhook failed last, after the others.
    notifier = app.notifier()
    assert notifier is not None
    assert world.tenant.id in notifier._failing


def test_a_1_5_gb_answer_costs_the_worker_no_memory_and_each_message_goes_once(
    db: Database, world: World
) -> None:
    with HostileReceiver(flood(3 * GIB // 2)) as receiver:
        app = _app(db)
        _hook(app, "acme", receiver.url)
        told = [_propose(db, world, issue).id for issue in (1, 2, 3)]
        before = rss_bytes()
        jobs = Jobs(app)
        assert jobs.notify()["sent"] == 3
        assert jobs.notify()["sent"] == 0  # the next round: nothing again
        grown = rss_bytes() - before
        requests = list(receiver.requests)
    assert grown < 96 * 1024 * 1024, f"the worker grew by {grown / 1e6:.0f} MB"
    assert len(requests) == 3  # exactly once each
    assert sorted(str(p) for p in told) == sorted(
        str(p) for p in told if sum(str(p).encode() in r for r in requests) == 1
    )
    assert {r.state for r in _rows(db, world)} == {S.SENT}


def test_two_workers_side_by_side_send_each_message_exactly_once(
    db: Database, world: World
) -> None:
    """Two workers' rounds at once, against a receiver slow enough that they overlap: each
    message is claimed by one of them only."""
    slow: Behaviour = status(200, delay_seconds=0.3)
    with HostileReceiver(slow) as receiver:
        first, second = _app(db, timeout_seconds=5), _app(db, timeout_seconds=5)
        _hook(first, "acme", receiver.url)
        told = [_propose(db, world, issue).id for issue in range(1, 7)]
        rounds = [threading.Thread(target=Jobs(app).notify) for app in (first, second)]
        for thread in rounds:
            thread.start()
        for thread in rounds:
            thread.join(timeout=60)
        requests = list(receiver.requests)
    assert len(requests) == 6
    for proposal in told:
        assert sum(str(proposal).encode() in request for request in requests) == 1
    assert {(r.state, r.attempts) for r in _rows(db, world)} == {(S.SENT, 1)}


def test_a_round_out_of_time_leaves_the_rest_for_the_next_and_puts_failing_tenants_last(
    db: Database, world: World
) -> None:
    """acme's webhook failed last round; globex's takes longer than the whole round (6 s of a
    5 s round): globex goes first, and acme waits for the next round, nothing of its spent."""
    globex = make_world(db, "globex", "globex/app")
    with (
        HostileReceiver(status(500)) as failing,
        HostileReceiver(status(200, delay_seconds=6)) as slow,
    ):
        app = _app(db, timeout_seconds=30)
        _hook(app, "acme", failing.url)
        _hook(app, "globex", slow.url)
        _propose(db, world, 1)
        _propose(db, globex, 1)
        _propose(db, globex, 2)
        base = app.notifier()
        assert base is not None
        notifier = Notifier(
            db,
            replace(base.config, round_seconds=5),
            base.make_sender,
            cipher=app.token_cipher(),
        )
        notifier._failing.add(world.tenant.id)
        done = notifier.run()
        acme_requests, globex_requests = len(failing.requests), len(slow.requests)
    assert (globex_requests, acme_requests) == (1, 0)
    assert done.deferred_tenants == 1 and done.sent == 1
    assert _rows(db, world) == []  # acme was not reached: nothing of its queued or spent
    assert sorted(r.attempts for r in _rows(db, globex)) == [0, 1]
