"""The address table: which IP addresses webward may connect to (pure, no I/O at all).

:func:`classify_ip` sorts an address into one :class:`AddressKind` (public, or one named reason
it is not globally reachable); :func:`ip_in_blocked_range`, :func:`is_metadata_address` and
:func:`ip_allowed` are the yes/no faces of it. The small predicates (:func:`is_ipv4_mapped`,
:func:`is_nat64`, :func:`is_6to4`, :func:`is_teredo`, :func:`is_isatap` ...) and
:func:`embedded_ipv4s` name the IPv6 forms that carry an IPv4 address. The public names are
re-exported by :mod:`webward.guard`, which is where callers import them from.

The check order of :func:`classify_ip`, written out once: cloud metadata (also when carried
inside an IPv6 address), then for IPv6 the forms that carry an IPv4 address, then the table of
special-purpose blocks, then "outside 2000::/3", then ISATAP, else public. The table follows the
IANA IPv4 and IPv6 Special-Purpose Address Registries; it does not use ``ipaddress.is_global``
and friends, whose answers change between Python releases.
"""

from __future__ import annotations

import enum
import ipaddress
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import InvalidInput, Reason
from ._urls import URL_SAFE, ip_text

__all__ = [
    "METADATA_ADDRESSES",
    "REASON_INVALID_ADDRESS",
    "AddressKind",
    "Classification",
    "IPAddress",
    "IPNetwork",
    "classify_ip",
    "embedded_ipv4",
    "embedded_ipv4s",
    "ip_allowed",
    "ip_in_blocked_range",
    "ip_text",
    "is_6to4",
    "is_ipv4_compatible",
    "is_ipv4_mapped",
    "is_isatap",
    "is_loopback",
    "is_metadata_address",
    "is_nat64",
    "is_nat64_local",
    "is_teredo",
    "quoted",
    "shorten",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

REASON_INVALID_ADDRESS = Reason.INVALID_ADDRESS  # Refused: a DNS answer that is not an address


class AddressKind(enum.StrEnum):
    """Why an address is (not) reachable: one value per row of the table.

    Three renderings, as in smokescreen: :attr:`blocked` (the decision), :attr:`reason` (a human
    phrase) and the value itself (a stable metric / audit name).
    """

    PUBLIC = "public"
    METADATA = "metadata"
    THIS_NETWORK = "this_network"
    PRIVATE = "private"
    SHARED = "shared"
    LOOPBACK = "loopback"
    LINK_LOCAL = "link_local"
    IETF_PROTOCOL = "ietf_protocol"
    DOCUMENTATION = "documentation"
    BENCHMARKING = "benchmarking"
    RELAY_6TO4 = "relay_6to4"
    MULTICAST = "multicast"
    RESERVED = "reserved"
    BROADCAST = "broadcast"
    UNSPECIFIED = "unspecified"
    IPV4_MAPPED = "ipv4_mapped"
    IPV4_COMPATIBLE = "ipv4_compatible"
    NAT64 = "nat64"
    NAT64_LOCAL = "nat64_local"
    SIX_TO_FOUR = "6to4"
    TEREDO = "teredo"
    ISATAP = "isatap"
    DISCARD = "discard"
    SRV6 = "srv6"
    UNIQUE_LOCAL = "unique_local"
    SITE_LOCAL = "site_local"
    NOT_GLOBAL_UNICAST = "not_global_unicast"

    @property
    def blocked(self) -> bool:
        """True unless the address is globally reachable."""
        return self is not AddressKind.PUBLIC

    @property
    def reason(self) -> str:
        """A short human phrase naming the block."""
        return _KIND_REASONS[self]


_KIND_REASONS: dict[AddressKind, str] = {
    AddressKind.PUBLIC: "a public address",
    AddressKind.METADATA: "a cloud metadata address",
    AddressKind.THIS_NETWORK: "a 'this network' address (0.0.0.0/8)",
    AddressKind.PRIVATE: "a private address (RFC 1918)",
    AddressKind.SHARED: "a shared carrier-grade NAT address (100.64.0.0/10)",
    AddressKind.LOOPBACK: "a loopback address",
    AddressKind.LINK_LOCAL: "a link-local address",
    AddressKind.IETF_PROTOCOL: "an IETF protocol assignment",
    AddressKind.DOCUMENTATION: "a documentation address",
    AddressKind.BENCHMARKING: "a benchmarking address",
    AddressKind.RELAY_6TO4: "a deprecated 6to4 relay anycast address (192.88.99.0/24)",
    AddressKind.MULTICAST: "a multicast address",
    AddressKind.RESERVED: "a reserved address (240.0.0.0/4)",
    AddressKind.BROADCAST: "the limited broadcast address",
    AddressKind.UNSPECIFIED: "the unspecified address",
    AddressKind.IPV4_MAPPED: "an IPv4-mapped IPv6 address",
    AddressKind.IPV4_COMPATIBLE: "an IPv4-compatible IPv6 address",
    AddressKind.NAT64: "a NAT64 address carrying an internal IPv4 address",
    AddressKind.NAT64_LOCAL: "a local-use NAT64 address (64:ff9b:1::/48)",
    AddressKind.SIX_TO_FOUR: "a 6to4 address (2002::/16)",
    AddressKind.TEREDO: "a Teredo address (2001::/32)",
    AddressKind.ISATAP: "an ISATAP address carrying an internal IPv4 address",
    AddressKind.DISCARD: "a discard-only or dummy address (100::/64, 100:0:0:1::/64)",
    AddressKind.SRV6: "an SRv6 segment identifier (5f00::/16)",
    AddressKind.UNIQUE_LOCAL: "a unique local address (fc00::/7)",
    AddressKind.SITE_LOCAL: "a deprecated site-local address (fec0::/10)",
    AddressKind.NOT_GLOBAL_UNICAST: "outside global unicast (2000::/3)",
}

_N4 = ipaddress.IPv4Network
_N6 = ipaddress.IPv6Network

# First match wins, so narrower rows come before the rows that contain them.
_IPV4_TABLE: tuple[tuple[ipaddress.IPv4Network, AddressKind], ...] = (
    (_N4("0.0.0.0/8"), AddressKind.THIS_NETWORK),
    (_N4("10.0.0.0/8"), AddressKind.PRIVATE),
    (_N4("100.64.0.0/10"), AddressKind.SHARED),
    (_N4("127.0.0.0/8"), AddressKind.LOOPBACK),
    (_N4("169.254.0.0/16"), AddressKind.LINK_LOCAL),
    (_N4("172.16.0.0/12"), AddressKind.PRIVATE),
    # The whole /24, although IANA marks 192.0.0.9/32 (PCP anycast) and 192.0.0.10/32 (TURN
    # anycast) globally reachable: neither serves web pages, and OCI's metadata lives here.
    (_N4("192.0.0.0/24"), AddressKind.IETF_PROTOCOL),
    (_N4("192.0.2.0/24"), AddressKind.DOCUMENTATION),
    (_N4("192.88.99.0/24"), AddressKind.RELAY_6TO4),
    (_N4("192.168.0.0/16"), AddressKind.PRIVATE),
    (_N4("198.18.0.0/15"), AddressKind.BENCHMARKING),
    (_N4("198.51.100.0/24"), AddressKind.DOCUMENTATION),
    (_N4("203.0.113.0/24"), AddressKind.DOCUMENTATION),
    (_N4("224.0.0.0/4"), AddressKind.MULTICAST),
    (_N4("255.255.255.255/32"), AddressKind.BROADCAST),
    (_N4("240.0.0.0/4"), AddressKind.RESERVED),
)

# IPv6 rows checked after the IPv4-carrying forms (see classify_ip). Everything outside
# 2000::/3 is refused anyway; the rows there only give a more precise reason.
_IPV6_TABLE: tuple[tuple[ipaddress.IPv6Network, AddressKind], ...] = (
    (_N6("100::/64"), AddressKind.DISCARD),
    (_N6("100:0:0:1::/64"), AddressKind.DISCARD),
    (_N6("2001:2::/48"), AddressKind.BENCHMARKING),
    # The whole /23, although a few small anycast, AMT and ORCHIDv2 sub-blocks are marked
    # globally reachable: none of them serves web pages.
    (_N6("2001::/23"), AddressKind.IETF_PROTOCOL),
    (_N6("2001:db8::/32"), AddressKind.DOCUMENTATION),
    (_N6("3fff::/20"), AddressKind.DOCUMENTATION),
    (_N6("5f00::/16"), AddressKind.SRV6),
    (_N6("fc00::/7"), AddressKind.UNIQUE_LOCAL),
    (_N6("fe80::/10"), AddressKind.LINK_LOCAL),
    (_N6("fec0::/10"), AddressKind.SITE_LOCAL),
    (_N6("ff00::/8"), AddressKind.MULTICAST),
)

_GLOBAL_UNICAST = _N6("2000::/3")
_MAPPED = _N6("::ffff:0:0/96")
_COMPATIBLE = _N6("::/96")
_NAT64 = _N6("64:ff9b::/96")
_NAT64_LOCAL = _N6("64:ff9b:1::/48")
_SIX_TO_FOUR = _N6("2002::/16")
_TEREDO = _N6("2001::/32")
_UNSPECIFIED = ipaddress.IPv6Address("::")
_LOOPBACK6 = ipaddress.IPv6Address("::1")

#: Cloud metadata services: refused even inside the operator's ``allow_ranges``.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure IMDS, OpenStack, DigitalOcean, OCI...
        "169.254.170.2",  # AWS ECS task metadata and credentials
        "169.254.170.23",  # AWS EKS Pod Identity agent
        "169.254.0.23",  # Tencent Cloud
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer: a *public* address, refused all the same
        "192.0.0.192",  # Oracle Cloud
        "169.254.42.42",  # Scaleway
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS Pod Identity agent over IPv6
        # The IPv6 ones below sit in unique-local or link-local space, which an operator's
        # allow_ranges may open for an intranet (fc00::/7, fe80::/10): named here, they stay
        # refused there, as fd00:ec2::254 does.
        "fd20:ce::254",  # GCP metadata server over IPv6
        "fd00:42::42",  # Scaleway over IPv6
        "fd00:c1::a9fe:a9fe",  # Oracle Cloud IMDS over IPv6
        "fd00:a9fe:a9fe::1",  # Linode (Akamai) metadata over IPv6
        "fe80::a9fe:a9fe",  # OpenStack metadata over IPv6
    )
)
_METADATA_V4 = frozenset(a for a in METADATA_ADDRESSES if a.version == 4)


@dataclass(frozen=True)
class Classification:
    """The table's answer for one address: its kind and any IPv4 address it carries."""

    address: IPAddress
    kind: AddressKind
    embedded: ipaddress.IPv4Address | None = None

    @property
    def blocked(self) -> bool:
        """True unless the address is globally reachable."""
        return self.kind.blocked

    @property
    def reason(self) -> str:
        """A human phrase, e.g. ``an IPv4-mapped IPv6 address carrying 127.0.0.1``."""
        if self.embedded is not None and self.kind is not AddressKind.PUBLIC:
            return f"{self.kind.reason} carrying {self.embedded}"
        return self.kind.reason


def is_ipv4_mapped(ip: ipaddress.IPv6Address) -> bool:
    """``::ffff:a.b.c.d`` (::ffff:0:0/96): a dual-stack socket connects to a.b.c.d."""
    return ip in _MAPPED


def is_ipv4_compatible(ip: ipaddress.IPv6Address) -> bool:
    """``::a.b.c.d`` (::/96, deprecated by RFC 4291): some stacks still route it to a.b.c.d."""
    return ip in _COMPATIBLE


def is_nat64(ip: ipaddress.IPv6Address) -> bool:
    """The NAT64 well-known prefix 64:ff9b::/96 (RFC 6052): a NAT64 gateway dials the last
    32 bits."""
    return ip in _NAT64


def is_nat64_local(ip: ipaddress.IPv6Address) -> bool:
    """The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215); where the IPv4 sits depends on
    the operator's prefix length, so it is refused outright."""
    return ip in _NAT64_LOCAL


def is_6to4(ip: ipaddress.IPv6Address) -> bool:
    """6to4, 2002::/16 (RFC 3056): bits 16-47 are an IPv4 address."""
    return ip in _SIX_TO_FOUR


def is_teredo(ip: ipaddress.IPv6Address) -> bool:
    """Teredo, 2001::/32 (RFC 4380): server IPv4 in bits 32-63, client IPv4 inverted in the
    last 32 bits."""
    return ip in _TEREDO


def is_isatap(ip: ipaddress.IPv6Address) -> bool:
    """An ISATAP interface id (RFC 5214): ``0000:5efe:a.b.c.d`` or ``0200:5efe:a.b.c.d``.

    The u/g bits of the first octet are ignored, so the group variants count as well.
    """
    return (int(ip) >> 32) & 0xFCFF_FFFF == 0x0000_5EFE


def embedded_ipv4s(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """Every IPv4 address an IPv6 address carries: mapped, compatible, NAT64 (both prefixes;
    the local one read as a /96), 6to4, Teredo (client, then server), ISATAP."""
    value = int(ip)
    low = ipaddress.IPv4Address(value & 0xFFFF_FFFF)
    if is_ipv4_mapped(ip) or is_ipv4_compatible(ip) or is_nat64(ip) or is_nat64_local(ip):
        return (low,)
    if is_6to4(ip):
        return (ipaddress.IPv4Address((value >> 80) & 0xFFFF_FFFF),)
    if is_teredo(ip):
        client = ipaddress.IPv4Address(~value & 0xFFFF_FFFF)
        server = ipaddress.IPv4Address((value >> 64) & 0xFFFF_FFFF)
        return (client, server)
    if is_isatap(ip):
        return (low,)
    return ()


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (for Teredo, the client), or None."""
    carried = embedded_ipv4s(ip)
    return carried[0] if carried else None


def classify_ip(ip: str | IPAddress) -> Classification:
    """Sort ``ip`` into one :class:`AddressKind`; raises :class:`InvalidInput` for non-addresses."""
    addr = _to_address(ip)
    if addr in METADATA_ADDRESSES:
        return Classification(addr, AddressKind.METADATA)
    if isinstance(addr, ipaddress.IPv4Address):
        for network, kind in _IPV4_TABLE:
            if addr in network:
                return Classification(addr, kind)
        return Classification(addr, AddressKind.PUBLIC)
    return _classify_ipv6(addr)


def _classify_ipv6(addr: ipaddress.IPv6Address) -> Classification:
    carried = embedded_ipv4s(addr)
    for v4 in carried:
        if v4 in _METADATA_V4:
            return Classification(addr, AddressKind.METADATA, v4)
    embedded = carried[0] if carried else None
    if addr == _UNSPECIFIED:
        return Classification(addr, AddressKind.UNSPECIFIED)
    if addr == _LOOPBACK6:
        return Classification(addr, AddressKind.LOOPBACK)
    if is_ipv4_mapped(addr):
        return Classification(addr, AddressKind.IPV4_MAPPED, embedded)
    if is_ipv4_compatible(addr):
        return Classification(addr, AddressKind.IPV4_COMPATIBLE, embedded)
    if is_nat64(addr):
        # IANA marks 64:ff9b::/96 globally reachable, and DNS64 networks (AWS IPv6-only
        # subnets among them) hand these out for every IPv4-only site: the gateway dials the
        # embedded address, so that address decides.
        if embedded is not None and classify_ip(embedded).blocked:
            return Classification(addr, AddressKind.NAT64, embedded)
        return Classification(addr, AddressKind.PUBLIC, embedded)
    if is_nat64_local(addr):
        return Classification(addr, AddressKind.NAT64_LOCAL)
    if is_6to4(addr):
        return Classification(addr, AddressKind.SIX_TO_FOUR, embedded)
    if is_teredo(addr):
        return Classification(addr, AddressKind.TEREDO, embedded)
    for network, kind in _IPV6_TABLE:
        if addr in network:
            return Classification(addr, kind)
    if addr not in _GLOBAL_UNICAST:
        return Classification(addr, AddressKind.NOT_GLOBAL_UNICAST)
    if is_isatap(addr) and embedded is not None and classify_ip(embedded).blocked:
        return Classification(addr, AddressKind.ISATAP, embedded)
    return Classification(addr, AddressKind.PUBLIC)


def ip_in_blocked_range(ip: str | IPAddress) -> bool:
    """True for every address that is not globally reachable (and for metadata addresses).

    Raises :class:`InvalidInput` when ``ip`` is not an IP address.
    """
    return classify_ip(ip).blocked


def is_metadata_address(ip: str | IPAddress) -> bool:
    """True for a cloud metadata address, also when carried inside an IPv6 address."""
    return classify_ip(ip).kind is AddressKind.METADATA


def ip_allowed(ip: str | IPAddress, allow_networks: Sequence[IPNetwork | str] = ()) -> bool:
    """True if ``ip`` is public, or inside one of ``allow_networks`` and not a metadata address;
    an IPv6 address that carries an IPv4 one only if that IPv4 address is allowed as well."""
    found = classify_ip(ip)
    if not found.blocked:
        return True
    if found.kind is AddressKind.METADATA:
        return False
    nets = _networks(allow_networks)
    if not any(found.address in net for net in nets):
        return False
    # A socket, a NAT64 gateway or a tunnel connects to the IPv4 address an IPv6 one carries:
    # the IPv4 rules decide it, so that a range opened for IPv6 (::/0, ::ffff:0:0/96,
    # 64:ff9b::/96, 2002::/16) opens no IPv4 loopback or private address the operator did not
    # allow as IPv4 ("::ffff:127.0.0.1/128" and "127.0.0.1/32" together open that one).
    return all(
        not classify_ip(v4).blocked or any(v4 in net for net in nets) for v4 in carried_ipv4s(found)
    )


def carried_ipv4s(found: Classification) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses a connection to ``found`` may reach (:func:`embedded_ipv4s`), none
    for ``::1`` and ``::``, which carry no IPv4 address although they lie in ::/96."""
    addr = found.address
    if isinstance(addr, ipaddress.IPv4Address) or found.kind in _NO_CARRY:
        return ()
    return embedded_ipv4s(addr)


_NO_CARRY = frozenset({AddressKind.LOOPBACK, AddressKind.UNSPECIFIED})


def _to_address(ip: object) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address):
        # getaddrinfo reports link-local answers with a scope id; the table ignores it.
        return ipaddress.IPv6Address(int(ip)) if ip.scope_id else ip
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if isinstance(ip, str) and ip.isascii():
        try:
            return _to_address(ipaddress.ip_address(ip))
        except ValueError:
            pass
    raise InvalidInput(f"{shorten(repr(ip))} is not an IP address", reason=REASON_INVALID_ADDRESS)


def _networks(allow: Iterable[IPNetwork | str]) -> tuple[IPNetwork, ...]:
    out: list[IPNetwork] = []
    for net in allow:
        if isinstance(net, ipaddress.IPv4Network | ipaddress.IPv6Network):
            out.append(net)
            continue
        try:
            out.append(ipaddress.ip_network(str(net), strict=False))
        except ValueError:
            raise InvalidInput(
                f"allow_ranges holds {shorten(repr(net))}, which is not a CIDR",
                reason=REASON_INVALID_ADDRESS,
            ) from None
    return tuple(out)


def shorten(text: str, limit: int = 100) -> str:
    """``text`` cut to ``limit`` characters (an ellipsis marks the cut), for messages."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quoted(text: str, limit: int = 100) -> str:
    """Text a server chose (a redirect's Location, a header's value), for a message:
    percent-encoded but for URL punctuation, so that it reads as one token and never as
    webward's own sentence ("x) [webward] system: ..." becomes "x)%20[webward]%20system:..."),
    then cut to ``limit`` characters."""
    return shorten(urllib.parse.quote(text, safe=URL_SAFE), limit)


def names_this_machine(scope: Any) -> bool:
    """Whether an ASGI request's Host is an address or ``localhost``: a web page the
    operator's browser opens can reach loopback under a name of its own that resolves there
    (DNS rebinding), and must not read what a loopback-only endpoint holds."""
    host = b""
    for name, value in scope.get("headers") or ():
        if name == b"host":
            host = value
            break
    text = host.decode("latin-1").strip().lower()
    name = text[1:].partition("]")[0] if text.startswith("[") else text.partition(":")[0]
    if name in ("localhost", "localhost."):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def plain_http_warning(command: str, host: str, port: int, crossing: str) -> str | None:
    """The warning for a server of ``command`` listening on ``host`` where other machines
    may reach it: it speaks plain HTTP, so ``crossing`` (what its clients send: bearer
    tokens, console logins) would cross the network readable by anyone on the path. None on
    loopback, where the docs have it, behind a TLS reverse proxy."""
    if is_loopback(host):
        return None
    where = f"[{host}]" if ":" in host else host
    return (
        f"{command}: warning: http://{where}:{port} is plain HTTP on an address other "
        f"machines may reach, so {crossing} cross the network unencrypted; listen on 127.0.0.1 "
        'behind a TLS reverse proxy (docs/servers.md, "Behind a reverse proxy")'
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a server's bind address, a client's address) is this machine's
    loopback: ``localhost``, or an address parsed, not matched by prefix ("::1234:5678" starts
    with "::1" and is none), in 127.0.0.0/8 or ::1, IPv4-mapped included. A name other than
    localhost could resolve anywhere: no."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback
