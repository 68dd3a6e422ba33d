"""Which hosts a notification may be sent to (pure): never this machine, its private network, a
link-local or cloud-metadata address, whatever the spelling, unless the operator named the host
in ``RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS``.

A webhook URL is set by whoever runs ``notify set``, and the worker POSTs to it: without this
policy it reaches the instance-metadata service, a database on loopback or any port of the
private network, and the answers tell what listens there. Two checks share these rules: the URL's
host when it is stored (``destination.py``), and every address its name resolves to when it is
sent (``adapters/notify_webhook.py``), so a name that later resolves inwards is refused too.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from resolveflow.errors import InvalidInput

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Names that mean this machine or a cloud's metadata service before any DNS is asked.
_INTERNAL_NAMES = frozenset(
    {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "metadata"}
)
_INTERNAL_SUFFIXES = (".localhost", ".internal")  # metadata.google.internal, *.ec2.internal
# IPv6 ranges that carry an IPv4 address inside: NAT64 and 6to4 reach the embedded one.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIXTOFOUR = ipaddress.IPv6Network("2002::/16")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _ipv4_part(text: str) -> int | None:
    """One part of an IPv4 address as the C library reads it: decimal, 0x hex or 0 octal."""
    try:
        if text[:2].lower() == "0x":
            return int(text[2:], 16) if text[2:] else 0
        if len(text) > 1 and text.startswith("0"):
            return int(text[1:], 8)
        return int(text, 10) if text.isdigit() else None
    except ValueError:
        return None


def _legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``127.1``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``: the spellings ``inet_aton``
    (and so every resolver) accepts, which ``ipaddress`` alone does not."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or any(not part for part in parts):
        return None
    values = [_ipv4_part(part) for part in parts]
    if any(value is None for value in values):
        return None
    numbers = [value for value in values if value is not None]
    *head, last = numbers
    if any(value > 255 for value in head) or last >= 256 ** (5 - len(numbers)):
        return None
    number = 0
    for value in head:
        number = number * 256 + value
    number = number * 256 ** (5 - len(numbers)) + last
    return ipaddress.IPv4Address(number)


def host_address(host: str) -> Address | None:
    """The address a URL's host spells, in any form a resolver reads; None for a name."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(bare.split("%", 1)[0])  # a zone id names no other host
    except ValueError:
        return _legacy_ipv4(bare)


def is_public(address: Address) -> bool:
    """Reachable on the public internet: not loopback, private, link-local (the metadata
    service), shared, reserved, unspecified or multicast, also when inside an IPv6 address."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped
        if inner is None and (address in _NAT64 or address in _SIXTOFOUR):
            packed = address.packed
            inner = ipaddress.IPv4Address(packed[12:] if address in _NAT64 else packed[2:6])
        if inner is not None:
            return is_public(inner)
    return address.is_global and not address.is_multicast


def _is_internal_name(name: str) -> bool:
    return name in _INTERNAL_NAMES or name.endswith(_INTERNAL_SUFFIXES)


def _normal_host(host: str) -> str:
    """A host as compared: lower case, no trailing dot, an address in its canonical form."""
    address = host_address(host)
    return str(address) if address is not None else host.lower().rstrip(".")


@dataclass(frozen=True)
class AllowedHost:
    host: str  # normalised (``_normal_host``)
    port: int | None  # None: any port

    def admits(self, host: str, port: int) -> bool:
        return self.host == _normal_host(host) and self.port in (None, port)


@dataclass(frozen=True)
class AddressPolicy:
    """The operator's exceptions: hosts (or host:port) a webhook may reach though internal."""

    allowed: tuple[AllowedHost, ...] = ()

    @classmethod
    def parse(cls, entries: str) -> AddressPolicy:
        """``host`` or ``host:port`` (``[v6]:port``), comma-separated; ``ValueError`` names a bad
        entry."""
        return cls(
            tuple(_allowed_host(entry.strip()) for entry in entries.split(",") if entry.strip())
        )

    def admits_host(self, host: str, port: int) -> bool:
        return any(entry.admits(host, port) for entry in self.allowed)

    def check_host(self, host: str, port: int) -> None:
        """Refuse a URL's host that is internal by its spelling alone (before any DNS)."""
        if self.admits_host(host, port):
            return
        address = host_address(host)
        internal = (
            not is_public(address)
            if address is not None
            else _is_internal_name(host.lower().rstrip("."))
        )
        if internal:
            raise DestinationRefused(host)

    def check_resolved(self, host: str, port: int, addresses: list[Address]) -> None:
        """Refuse a host any of whose addresses is internal: one inward answer among public
        ones is how a rebinding name would get through."""
        if self.admits_host(host, port):
            return
        self.check_host(host, port)
        if not addresses or not all(is_public(address) for address in addresses):
            raise DestinationRefused(host)


class DestinationRefused(InvalidInput):
    """A webhook aimed at this machine, a private network or a metadata service."""

    def __init__(self, host: str) -> None:
        super().__init__(
            f"the webhook's host {host} is a loopback, private, link-local or metadata address: "
            "refused (name it in RESOLVEFLOW_NOTIFY_ALLOWED_HOSTS to allow it)"
        )


def _allowed_host(entry: str) -> AllowedHost:
    host, port = entry, None
    if entry.startswith("["):
        close = entry.find("]")
        if close < 0:
            raise ValueError(f"{entry!r} is not host or host:port")
        host, rest = entry[: close + 1], entry[close + 1 :]
        if rest:
            port = _port(entry, rest.removeprefix(":") if rest.startswith(":") else "x")
    elif entry.count(":") == 1:
        host, text = entry.split(":")
        port = _port(entry, text)
    elif ":" in entry:
        host = f"[{entry}]"  # a bare IPv6 address
    if not host or any(ch in host for ch in "/?#@ "):
        raise ValueError(f"{entry!r} is not host or host:port")
    return AllowedHost(_normal_host(host), port)


def _port(entry: str, text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{entry!r} is not host or host:port (a port is 1 to 65535)")
    return int(text)


def url_port(scheme: str, port: str | None) -> int:
    """The port a URL reaches: its own, else its scheme's."""
    return int(port) if port else _DEFAULT_PORTS[scheme]
