"""Where a model endpoint may point (no Django inside).

A researcher names an endpoint's base URL, and the web process (the launch check) and the workers (the run) send
requests there: without a limit, the app would reach for them whatever its own network reaches (its database,
Redis, a cloud's metadata service at 169.254.169.254, other internal services) and tell, by its messages, an open
internal port from a closed one. So, when the policy is restricted (settings: EVALUATION_ENDPOINT_RESTRICTED, on
unless DEBUG), a host that is, or resolves to, anything but a public address (loopback, private, link-local,
carrier-grade NAT, unspecified, multicast, reserved) is refused unless the address is in one of the allowed
networks (EVALUATION_ENDPOINT_ALLOWED_NETWORKS: a local llama.cpp or vLLM is one line, 127.0.0.0/8).

The launch check says the same of a refused endpoint as of one that does not answer (`UNREACHABLE`).
"""
from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from foundation.words import gettext_noop

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Carrier-grade NAT (RFC 6598): neither private nor global for Python, never a public server.
SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")
#: What the launch check says of an endpoint it may not ask and of one that does not answer: the same words, so
#: that its messages never tell an open internal port from a closed one.
UNREACHABLE = gettext_noop("no server answered there (connection refused, closed or not reachable from here, or an "
                           "address endpoints may not reach: see EVALUATION_ENDPOINT_ALLOWED_NETWORKS)")
#: Host names that are this machine whatever the resolver says.
LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def address_kind(address: str | Address) -> str:
    """What kind of address this is: "public", or why it is not: "loopback", "private", "link_local",
    "shared" (carrier-grade NAT), "unspecified", "multicast" or "reserved". An IPv4 address inside IPv6
    (::ffff:127.0.0.1, 64:ff9b::/96 NAT64, 6to4) is judged as the IPv4 address it carries."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if ip.version == 6:
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in ipaddress.ip_network("64:ff9b::/96"):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return address_kind(embedded)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link_local"
    if ip.is_multicast:
        return "multicast"
    if ip.version == 4 and ip in SHARED_ADDRESS_SPACE:
        return "shared"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return "public"


def parse_networks(networks: Iterable[str]) -> tuple[Network, ...]:
    """Comma-separated CIDRs as networks (ValueError naming a bad one); a bare address is its /32 or /128."""
    return tuple(ipaddress.ip_network(n.strip(), strict=False) for n in networks if n and n.strip())


@dataclass(frozen=True)
class DestinationPolicy:
    """``restricted``: only public addresses, and those in ``allowed`` networks; else anything (DEBUG)."""

    restricted: bool = True
    allowed: tuple[Network, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, *, restricted: bool, allowed: Iterable[str] = ()) -> DestinationPolicy:
        return cls(restricted=restricted, allowed=parse_networks(allowed))

    def allows(self, address: str | Address) -> bool:
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if not self.restricted:
            return True
        if any(ip.version == n.version and ip in n for n in self.allowed):
            return True
        mapped = ip.ipv4_mapped if ip.version == 6 else None
        if mapped is not None and any(n.version == 4 and mapped in n for n in self.allowed):
            return True
        return address_kind(ip) == "public"


def literal_address(host: str) -> Address | None:
    """The host as an IP address when it is written as one (``[::1]`` too, and the legacy IPv4 forms a client's
    resolver takes: ``2130706433``, ``0x7f.1``, ``127.1``), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError, UnicodeError):
        return None


def resolve(host: str, port: int | None = None) -> list[Address]:
    """Every address ``host`` resolves to (getaddrinfo, as a client connecting to it would)."""
    infos = socket.getaddrinfo(host, port or 0, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]


class DestinationRefused(Exception):
    """The URL's host is, or resolves to, an address the policy refuses (``kind`` says which kind)."""

    def __init__(self, host: str, address: Address, kind: str):
        super().__init__(f"{host} ({address}) is a {kind.replace('_', '-')} address")
        self.host, self.address, self.kind = host, address, kind


def check_url(url: str, policy: DestinationPolicy, *,
              resolver: Callable[[str, int | None], Sequence[Address]] = resolve) -> None:
    """Raise DestinationRefused when ``url`` may not be asked. A host that does not resolve passes (the
    connection fails by itself, as a DNS failure); every address it resolves to must be allowed."""
    if not policy.restricted:
        return
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return  # not a URL: its own validation says so
    if not host:
        return
    literal = literal_address(host)
    if literal is not None:
        addresses: Sequence[Address] = [literal]
    else:
        try:
            addresses = resolver(host, port)
        except (OSError, UnicodeError, ValueError):
            return
    for address in addresses:
        if not policy.allows(address):
            raise DestinationRefused(host, address, address_kind(address))


def check_url_without_lookup(url: str, policy: DestinationPolicy) -> None:
    """As `check_url`, for a host written as an address or named like this machine (``localhost``), without
    asking a resolver (when an endpoint is saved: the launch check and the workers resolve the name)."""
    def local_names_only(host: str, port: int | None) -> Sequence[Address]:
        name = host.lower().rstrip(".")
        if name in LOCAL_NAMES or name.endswith(".localhost"):
            return [ipaddress.ip_address("127.0.0.1")]
        return []

    check_url(url, policy, resolver=local_names_only)


__all__ = ["DestinationPolicy", "DestinationRefused", "UNREACHABLE", "address_kind", "check_url",
           "check_url_without_lookup", "literal_address", "parse_networks", "resolve"]
