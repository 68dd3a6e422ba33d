"""The notification sender against hostile receivers over real sockets (``tests/hostile_http.py``):
a body of 1.5 GB costs no memory, a status line trickled a byte at a time is cut at the
delivery's one deadline, a 2xx followed by a trickled body is delivered at once, and what answered
(a status, a protocol, a closed port) is never told. A name that resolves inward, or an address
spelled as a number, reaches nothing unless the operator allowed the host."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from hostile_http import (
    Behaviour,
    HostileReceiver,
    flood,
    not_http,
    silent,
    status,
    trickle_body,
    trickle_status,
)
from process_memory import rss_bytes
from resolveflow.adapters.notify_webhook import (
    NotDelivered,
    Resolver,
    WebhookSender,
    refuse_inward,
)
from resolveflow.domain.network_addresses import Address, AddressPolicy, DestinationRefused
from resolveflow.domain.network_addresses import host_address as parse

LOOPBACK = AddressPolicy.parse("127.0.0.1")
PUBLIC_ONLY = AddressPolicy()
GIB = 1 << 30


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[HostileReceiver]:
    behaviour: Behaviour = request.param
    with HostileReceiver(behaviour) as running:
        yield running


def _sender(url: str, timeout: float = 1.0, policy: AddressPolicy = LOOPBACK) -> WebhookSender:
    return WebhookSender(url, timeout_seconds=timeout, policy=policy)


@pytest.mark.parametrize("receiver", [flood(3 * GIB // 2)], indirect=True)
def test_a_flood_of_1_5_gb_after_200_is_delivered_without_reading_it(
    receiver: HostileReceiver,
) -> None:
    before = rss_bytes()
    sender = _sender(receiver.url, timeout=10)
    sender.send(b'{"text": "waiting"}')
    sender.close()
    time.sleep(0.5)  # the receiver notices the closed connection
    grown = rss_bytes() - before
    assert grown < 64 * 1024 * 1024, f"the sender grew by {grown / 1e6:.0f} MB"
    # the connection was closed, not drained: what was sent is what the socket buffers held
    assert receiver.bytes_sent < 256 * 1024 * 1024
    assert len(receiver.requests) == 1


@pytest.mark.parametrize("receiver", [trickle_status(0.1, 60)], indirect=True)
def test_a_status_line_trickled_a_byte_at_a_time_is_cut_at_the_deadline(
    receiver: HostileReceiver,
) -> None:
    # Each byte comes ten times within the 1 s timeout: a per-read timeout never fires, and
    # the receiver would hold the sender for its whole minute.
    started = time.monotonic()
    with pytest.raises(NotDelivered, match=r"^the notification was not delivered"):
        _sender(receiver.url, timeout=1).send(b"{}")
    held = time.monotonic() - started
    assert held < 20, f"held {held:.0f} s by a receiver that trickles for 60 s"


@pytest.mark.parametrize("receiver", [trickle_body(0.1, 30)], indirect=True)
def test_a_2xx_with_a_trickled_body_is_delivered_without_waiting_for_it(
    receiver: HostileReceiver,
) -> None:
    started = time.monotonic()
    _sender(receiver.url, timeout=1).send(b"{}")
    assert time.monotonic() - started < 15  # the body, 30 s of trickle, is never read


@pytest.mark.parametrize(
    "behaviour",
    [status(401), status(405), status(302), status(500), not_http, silent(10)],
    ids=["401", "405", "redirect", "500", "not-http", "silent"],
)
def test_what_answered_is_never_told(behaviour: Behaviour) -> None:
    with HostileReceiver(behaviour) as receiver:
        with pytest.raises(NotDelivered) as refused:
            _sender(receiver.url, timeout=1).send(b"{}")
        assert len(receiver.requests) == 1  # it was reached: the words still do not say how
    assert refused.value.message == (
        "the notification was not delivered (no 2xx answer within 1 s)"
    )


def test_a_closed_port_reads_the_same_as_any_other_failure() -> None:
    with HostileReceiver(status(200)) as receiver:
        url = receiver.url
    with pytest.raises(NotDelivered) as refused:
        _sender(url, timeout=1).send(b"{}")
    assert refused.value.message == (
        "the notification was not delivered (no 2xx answer within 1 s)"
    )


def _resolving_to(*addresses: str) -> Resolver:
    def resolve(host: str, port: int) -> list[Address]:
        found = [parse(address) for address in addresses]
        return [address for address in found if address is not None]

    return resolve


@pytest.mark.parametrize(
    "answers",
    [("127.0.0.1",), ("93.184.216.34", "127.0.0.1"), ("::ffff:127.0.0.1",), ("169.254.169.254",)],
    ids=["loopback", "public-and-loopback", "mapped", "metadata"],
)
def test_a_name_that_resolves_inward_at_send_time_reaches_nothing(
    answers: tuple[str, ...],
) -> None:
    with HostileReceiver(status(200)) as receiver:
        sender = WebhookSender(
            f"http://hooks.example:{receiver.port}/hook",
            timeout_seconds=2,
            policy=PUBLIC_ONLY,
            resolver=_resolving_to(*answers),
        )
        with pytest.raises(DestinationRefused, match=r"hooks\.example is a loopback, private"):
            sender.send(b"{}")
    assert receiver.connections == 0


def test_an_allowed_name_is_reached_at_the_address_it_resolved_to() -> None:
    with HostileReceiver(status(204)) as receiver:
        WebhookSender(
            f"http://chat.corp.example:{receiver.port}/hook",
            timeout_seconds=2,
            policy=AddressPolicy.parse(f"chat.corp.example:{receiver.port}"),
            resolver=_resolving_to("127.0.0.1"),
        ).send(b"{}")
        assert receiver.connections == 1
        [request] = receiver.requests
    assert f"Host: chat.corp.example:{receiver.port}".encode() in request


@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "127.1", "0177.0.0.1", "[::1]"])
def test_a_stored_url_spelling_loopback_as_a_number_is_refused_at_send_time(host: str) -> None:
    """A row stored before the policy existed (or written around it) is checked again when
    sent: the system resolver reads these spellings as 127.0.0.1, and nothing is reached."""
    # httpx itself refuses the octal spelling as a URL: not delivered either way, nothing reached
    with (
        HostileReceiver(status(200)) as receiver,
        pytest.raises((DestinationRefused, NotDelivered)),
    ):
        _sender(f"http://{host}:{receiver.port}/hook", policy=PUBLIC_ONLY).send(b"{}")
    assert receiver.connections == 0


def test_a_name_resolving_inward_is_refused_when_set_and_one_not_resolving_is_let_through() -> None:
    with pytest.raises(DestinationRefused):
        refuse_inward(
            "https://rebind.example/x",
            PUBLIC_ONLY,
            2,
            _resolving_to("10.0.0.7"),
        )

    def unresolvable(host: str, port: int) -> list[Address]:
        raise OSError("no such name")

    refuse_inward("https://later.example/x", PUBLIC_ONLY, 2, unresolvable)
    refuse_inward(
        "https://hooks.slack.com/services/x",
        PUBLIC_ONLY,
        2,
        _resolving_to("52.1.2.3"),
    )
