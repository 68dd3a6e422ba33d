"""Where a notification webhook may point (pure): never this machine, a private network, a
link-local or metadata address, in any spelling a resolver reads, unless the operator allowed
the host (``RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS``)."""

from __future__ import annotations

import ipaddress

import pytest

from resolveflow.domain.network_addresses import (
    AddressPolicy,
    DestinationRefused,
    host_address,
    is_public,
)
from resolveflow.errors import InvalidInput
from resolveflow.notify.domain.destination import destination
from resolveflow.notify.domain.message import NotifyFormat

SLACK = NotifyFormat.SLACK
PUBLIC_ONLY = AddressPolicy()

# Every form an attack on `notify set` stored, and their kin.
INWARD = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://10.0.0.1/hook",
    "http://0.0.0.0:8080/",
    "http://localhost:6379/",
    "http://127.0.0.1:5432/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://0177.0.0.1/",
    "http://[::1]:9000/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:7f00:1::]/",
    "http://[fe80::1]/",
    "http://100.64.0.1/",
    "http://192.168.1.10/",
    "http://172.16.5.4/",
    "http://224.0.0.1/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://db.corp.internal/",
    "http://metadata/",
    "https://user:pw@127.0.0.1/hook",
]


@pytest.mark.parametrize("url", INWARD)
def test_every_spelling_of_an_inward_address_is_refused_when_set(url: str) -> None:
    with pytest.raises(DestinationRefused, match="RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS") as refused:
        destination(url, SLACK, None, PUBLIC_ONLY)
    assert "\n" not in refused.value.message
    assert "/latest" not in refused.value.message and "computeMetadata" not in refused.value.message


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.slack.com/services/T0/B0/XYZ",
        "https://8.8.8.8/hook",
        "https://[2606:4700:4700::1111]/hook",
        "https://chat.example.com:8443/hook",
    ],
)
def test_public_destinations_are_stored(url: str) -> None:
    assert destination(url, SLACK, None, PUBLIC_ONLY).url == url


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("192.168.257", "192.168.1.1"),
        ("[::1]", "::1"),
        ("[fe80::1%25eth0]", "fe80::1"),  # a zone names no other host
        ("fe80::1%eth0", "fe80::1"),
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("256.1.1.1", None),
        ("4294967296", None),
        ("0x", "0.0.0.0"),
    ],
)
def test_a_host_is_read_as_a_resolver_reads_it(text: str, address: str | None) -> None:
    found = host_address(text)
    assert (str(found) if found is not None else None) == address


def test_an_ipv6_address_carrying_an_ipv4_one_is_judged_by_it() -> None:
    assert not is_public(ipaddress.IPv6Address("::ffff:10.0.0.1"))
    assert not is_public(ipaddress.IPv6Address("64:ff9b::7f00:1"))
    assert not is_public(ipaddress.IPv6Address("2002:a9fe:a9fe::"))
    assert is_public(ipaddress.IPv6Address("64:ff9b::808:808"))
    assert is_public(ipaddress.IPv4Address("8.8.8.8"))


def test_the_operator_allows_a_host_or_one_port_of_it() -> None:
    policy = AddressPolicy.parse(" 127.0.0.1:8080 , chat.corp.internal,[::1]:9000,10.0.0.5 ")
    destination("http://127.0.0.1:8080/hook", SLACK, None, policy)
    destination("http://127.1:8080/hook", SLACK, None, policy)  # the same address, spelled short
    destination("https://chat.corp.internal/hook", SLACK, None, policy)
    destination("https://CHAT.corp.internal./hook", SLACK, None, policy)
    destination("http://[::1]:9000/", SLACK, None, policy)
    destination("http://10.0.0.5:1234/", SLACK, None, policy)
    for url in ("http://127.0.0.1:5432/", "http://[::1]:9001/", "http://10.0.0.6/"):
        with pytest.raises(DestinationRefused):
            destination(url, SLACK, None, policy)


def test_a_name_is_checked_on_every_address_it_resolves_to() -> None:
    public, inward = ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.0.0.7")
    PUBLIC_ONLY.check_resolved("hooks.example", 443, [public])
    for answers in ([inward], [public, inward], []):
        with pytest.raises(DestinationRefused):
            PUBLIC_ONLY.check_resolved("hooks.example", 443, answers)
    AddressPolicy.parse("hooks.example").check_resolved("hooks.example", 443, [inward])


@pytest.mark.parametrize(
    "entry", ["127.0.0.1:", "127.0.0.1:99999", "host:port", "http://x", "[::1", "a@b", "x:0"]
)
def test_a_bad_allowed_host_is_named(entry: str) -> None:
    with pytest.raises(ValueError, match=r"is not host or host:port"):
        AddressPolicy.parse(f"ok.example,{entry}")


def test_the_refusal_is_an_invalid_input_for_the_edges() -> None:
    assert issubclass(DestinationRefused, InvalidInput)


def test_the_process_webhook_is_held_to_the_policy_when_the_settings_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from resolveflow.config import load_settings
    from resolveflow.errors import ConfigError

    monkeypatch.setenv("RESOLVEFLOW_NOTIFY_URL", "http://169.254.169.254/latest/")
    with pytest.raises(ConfigError, match="RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS") as refused:
        load_settings()
    assert "\n" not in refused.value.message and "/latest" not in refused.value.message
    monkeypatch.setenv("RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS", "169.254.169.254")
    assert load_settings().notify.url is not None
