"""The SSRF guard: the address table block by block, and every URL trick by name.

Pure checks: nothing here opens a socket. Public addresses are only ever *decided* on.
"""

from __future__ import annotations

import ipaddress
import unicodedata

import pytest

from webward._errors import InvalidInput, Refused, WebwardError
from webward.guard import (
    REASON_BACKSLASH,
    REASON_BAD_PORT,
    REASON_CONTROL_CHARACTER,
    REASON_EMPTY_HOST,
    REASON_INTERNAL_ADDRESS,
    REASON_INTERNAL_NAME,
    REASON_INVALID_ADDRESS,
    REASON_INVALID_HOST,
    REASON_INVALID_URL,
    REASON_NOT_ABSOLUTE,
    REASON_SCHEME,
    REASON_TOO_LONG,
    REASON_USERINFO,
    REASON_ZONE_ID,
    AddressKind,
    ParsedURL,
    assert_ip_allowed,
    assert_url_allowed,
    classify_ip,
    embedded_ipv4,
    embedded_ipv4s,
    ip_allowed,
    ip_in_blocked_range,
    is_6to4,
    is_isatap,
    is_metadata_address,
    is_nat64,
    is_teredo,
    parse_url,
)

K = AddressKind

# ----------------------------------------------------------------------- the address table

# (block, first address, last address, kind) from the IANA special-purpose registries.
IPV4_BLOCKS = [
    ("0.0.0.0/8", "0.0.0.0", "0.255.255.255", K.THIS_NETWORK),
    ("10.0.0.0/8", "10.0.0.0", "10.255.255.255", K.PRIVATE),
    ("100.64.0.0/10", "100.64.0.0", "100.127.255.255", K.SHARED),
    ("127.0.0.0/8", "127.0.0.0", "127.255.255.255", K.LOOPBACK),
    ("169.254.0.0/16", "169.254.0.0", "169.254.255.255", K.LINK_LOCAL),
    ("172.16.0.0/12", "172.16.0.0", "172.31.255.255", K.PRIVATE),
    ("192.0.0.0/24", "192.0.0.0", "192.0.0.255", K.IETF_PROTOCOL),
    ("192.0.2.0/24", "192.0.2.0", "192.0.2.255", K.DOCUMENTATION),
    ("192.88.99.0/24", "192.88.99.0", "192.88.99.255", K.RELAY_6TO4),
    ("192.168.0.0/16", "192.168.0.0", "192.168.255.255", K.PRIVATE),
    ("198.18.0.0/15", "198.18.0.0", "198.19.255.255", K.BENCHMARKING),
    ("198.51.100.0/24", "198.51.100.0", "198.51.100.255", K.DOCUMENTATION),
    ("203.0.113.0/24", "203.0.113.0", "203.0.113.255", K.DOCUMENTATION),
    ("224.0.0.0/4", "224.0.0.0", "239.255.255.255", K.MULTICAST),
    ("240.0.0.0/4", "240.0.0.0", "255.255.255.254", K.RESERVED),
    ("255.255.255.255/32", "255.255.255.255", "255.255.255.255", K.BROADCAST),
]

IPV6_BLOCKS = [
    ("::/128", "::", "::", K.UNSPECIFIED),
    ("::1/128", "::1", "::1", K.LOOPBACK),
    ("::ffff:0:0/96", "::ffff:0:0", "::ffff:ffff:ffff", K.IPV4_MAPPED),
    ("::/96", "::2", "::ffff:ffff", K.IPV4_COMPATIBLE),
    ("64:ff9b:1::/48", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", K.NAT64_LOCAL),
    ("100::/64", "100::", "100::ffff:ffff:ffff:ffff", K.DISCARD),
    ("2001::/32", "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", K.TEREDO),
    ("2001:2::/48", "2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff", K.BENCHMARKING),
    ("2001::/23", "2001:1::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", K.IETF_PROTOCOL),
    ("2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", K.DOCUMENTATION),
    ("2002::/16", "2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", K.SIX_TO_FOUR),
    ("3fff::/20", "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", K.DOCUMENTATION),
    ("5f00::/16", "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", K.SRV6),
    ("fc00::/7", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", K.UNIQUE_LOCAL),
    ("fe80::/10", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", K.LINK_LOCAL),
    ("fec0::/10", "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", K.SITE_LOCAL),
    ("ff00::/8", "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", K.MULTICAST),
    (
        "outside 2000::/3 (low)",
        "1::",
        "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        K.NOT_GLOBAL_UNICAST,
    ),
    (
        "outside 2000::/3 (high)",
        "4000::",
        "5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        K.NOT_GLOBAL_UNICAST,
    ),
]

# The neighbours just outside blocks, where those are public, plus registry rows that IANA
# marks globally reachable and webward therefore lets through.
PUBLIC_NEIGHBOURS = [
    "1.0.0.0",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "191.255.255.255",
    "192.0.1.0",
    "192.0.1.255",
    "192.0.3.0",
    "192.88.98.255",
    "192.88.100.0",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "198.51.99.255",
    "198.51.101.0",
    "203.0.112.255",
    "203.0.114.0",
    "223.255.255.255",
    "192.31.196.1",
    "192.52.193.1",
    "192.175.48.1",  # AS112 and AMT: globally reachable
    "2000::",
    "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "2001:200::",
    "2001:db7:ffff::",
    "2001:db9::",
    "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "2003::",
    "3ffe:ffff::",
    "3fff:1000::",
    "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "2620:4f:8000::1",
]


@pytest.mark.parametrize(("block", "first", "last", "kind"), IPV4_BLOCKS + IPV6_BLOCKS)
def test_block_edges_are_blocked(block: str, first: str, last: str, kind: AddressKind) -> None:
    """The first and the last address of every block are refused, with the block's reason."""
    for address in (first, last):
        assert ip_in_blocked_range(address), (block, address)
        assert classify_ip(address).kind is kind, (block, address)
        assert not ip_allowed(address)


@pytest.mark.parametrize("address", PUBLIC_NEIGHBOURS)
def test_public_neighbours_are_allowed(address: str) -> None:
    """The public addresses right next to a block stay reachable."""
    assert not ip_in_blocked_range(address)
    assert classify_ip(address).kind is K.PUBLIC
    assert ip_allowed(address)


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "2001:4860:4860::8888"]
)
def test_well_known_public_resolvers_are_allowed(address: str) -> None:
    """Ordinary public addresses pass the table (a decision only; nothing connects)."""
    assert not ip_in_blocked_range(address)
    assert not ip_in_blocked_range(ipaddress.ip_address(address))


def test_ipv6_scope_id_is_ignored_by_the_table() -> None:
    """A link-local DNS answer with a scope id is still link-local."""
    assert classify_ip("fe80::1%eth0").kind is K.LINK_LOCAL


@pytest.mark.parametrize(
    "text",
    [
        "",
        "localhost",
        "127.1",
        "0177.0.0.1",
        "::1%",
        "1.2.3",
        "[::1]",
        "\uff11\uff12\uff17.\uff10.\uff10.\uff11",
    ],
)
def test_ip_functions_refuse_non_addresses_by_name(text: str) -> None:
    """Strings that are not canonical addresses raise InvalidInput, never a ValueError."""
    with pytest.raises(InvalidInput) as info:
        ip_in_blocked_range(text)
    assert info.value.reason == REASON_INVALID_ADDRESS


def test_ip_functions_refuse_non_strings() -> None:
    """An int or None is not an address to classify."""
    for value in (2130706433, None, b"127.0.0.1"):
        with pytest.raises(InvalidInput):
            ip_in_blocked_range(value)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- IPv4 inside IPv6

# (IPv6 form, kind, carried IPv4): each IPv4-carrying form with an internal address inside.
EMBEDDED_FORMS = [
    ("::ffff:127.0.0.1", K.IPV4_MAPPED, "127.0.0.1"),
    ("::ffff:7f00:1", K.IPV4_MAPPED, "127.0.0.1"),
    ("0:0:0:0:0:ffff:10.0.0.1", K.IPV4_MAPPED, "10.0.0.1"),
    ("::ffff:8.8.8.8", K.IPV4_MAPPED, "8.8.8.8"),  # not global per IANA, whatever it carries
    ("::127.0.0.1", K.IPV4_COMPATIBLE, "127.0.0.1"),
    ("::a00:1", K.IPV4_COMPATIBLE, "10.0.0.1"),
    ("64:ff9b::127.0.0.1", K.NAT64, "127.0.0.1"),
    ("64:ff9b::c0a8:101", K.NAT64, "192.168.1.1"),
    ("64:ff9b:1::a00:1", K.NAT64_LOCAL, None),
    ("2002:7f00:1::", K.SIX_TO_FOUR, "127.0.0.1"),
    ("2002:c0a8:101:1::1", K.SIX_TO_FOUR, "192.168.1.1"),
    ("2002:808:808::1", K.SIX_TO_FOUR, "8.8.8.8"),  # deprecated 6to4: refused outright
    # Teredo: client IPv4 is the last 32 bits inverted (~127.0.0.1 = 80ff:fffe).
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", K.TEREDO, "127.0.0.1"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", K.TEREDO, "192.0.2.45"),  # RFC 4380 example
    ("2606:4700:1:2:0:5efe:10.0.0.1", K.ISATAP, "10.0.0.1"),
    ("2606:4700:1:2:200:5efe:127.0.0.1", K.ISATAP, "127.0.0.1"),
    ("2606:4700:1:2:100:5efe:192.168.0.1", K.ISATAP, "192.168.0.1"),
]


@pytest.mark.parametrize(("address", "kind", "carried"), EMBEDDED_FORMS)
def test_ipv6_forms_carrying_ipv4_are_blocked(
    address: str, kind: AddressKind, carried: str | None
) -> None:
    """Every IPv4-carrying IPv6 form is refused, and the classification names what it carries."""
    found = classify_ip(address)
    assert found.blocked
    assert found.kind is kind
    assert (str(found.embedded) if found.embedded else None) == carried
    if carried is not None:
        assert carried in found.reason


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::8.8.8.8",  # NAT64 of a public address: DNS64 networks need it
        "2606:4700:1:2:0:5efe:8.8.8.8",  # ISATAP carrying a public address
    ],
)
def test_ipv6_forms_carrying_public_ipv4_follow_the_carried_address(address: str) -> None:
    """NAT64 (well-known prefix) and ISATAP are decided by the IPv4 address they carry."""
    assert not ip_in_blocked_range(address)


def test_predicates_extract_embedded_ipv4_by_bits() -> None:
    """The named predicates and extractors read bits, not strings."""
    teredo = ipaddress.IPv6Address("2001:0:4136:e378:8000:63bf:3fff:fdd2")
    assert is_teredo(teredo)
    assert embedded_ipv4s(teredo) == (
        ipaddress.IPv4Address("192.0.2.45"),
        ipaddress.IPv4Address("65.54.227.120"),
    )
    assert is_6to4(ipaddress.IPv6Address("2002:a00:1::"))
    assert embedded_ipv4(ipaddress.IPv6Address("2002:a00:1::")) == ipaddress.IPv4Address("10.0.0.1")
    assert is_nat64(ipaddress.IPv6Address("64:ff9b::1"))
    assert is_isatap(ipaddress.IPv6Address("2606:4700::200:5efe:1.2.3.4"))
    assert not is_isatap(ipaddress.IPv6Address("2606:4700::300:5eff:1.2.3.4"))
    assert embedded_ipv4(ipaddress.IPv6Address("2606:4700::1111")) is None


# ----------------------------------------------------------------------- metadata

METADATA = [
    "169.254.169.254",
    "169.254.170.2",
    "169.254.170.23",
    "169.254.0.23",
    "100.100.100.200",
    "168.63.129.16",
    "192.0.0.192",
    "fd00:ec2::254",
    "fd00:ec2::23",
    "169.254.42.42",
    "fd20:ce::254",
    "fd00:42::42",
    "fd00:c1::a9fe:a9fe",
    "fd00:a9fe:a9fe::1",
    "fe80::a9fe:a9fe",
    "::ffff:169.254.169.254",
    "::169.254.169.254",
    "64:ff9b::169.254.169.254",
    "64:ff9b::168.63.129.16",
    "64:ff9b:1::a9fe:a9fe",
    "2002:a9fe:a9fe::1",
    "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo client ~0x56015601 = 169.254.169.254
    "2606:4700::5efe:169.254.169.254",
]


@pytest.mark.parametrize("address", METADATA)
def test_metadata_addresses_are_recognised(address: str) -> None:
    """Cloud metadata addresses are named as such, also when carried inside IPv6."""
    assert is_metadata_address(address)
    assert ip_in_blocked_range(address)
    assert classify_ip(address).kind is K.METADATA


def test_azure_wireserver_is_refused_although_public() -> None:
    """168.63.129.16 is a public address that Azure answers metadata on: refused always."""
    assert ip_in_blocked_range("168.63.129.16")
    assert not ip_allowed("168.63.129.16", [ipaddress.ip_network("168.63.0.0/16")])
    assert not ip_in_blocked_range("168.63.129.15")


@pytest.mark.parametrize("address", METADATA)
def test_metadata_stays_refused_inside_allow_ranges(address: str) -> None:
    """allow_ranges covering the whole space never lets a metadata address through."""
    everything = [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
    assert not ip_allowed(address, everything)


def test_allow_ranges_link_local_keeps_metadata_refused() -> None:
    """allow_ranges 169.254.0.0/16 opens link-local but not 169.254.169.254."""
    allow = [ipaddress.ip_network("169.254.0.0/16")]
    assert ip_allowed("169.254.1.1", allow)
    assert not ip_allowed("169.254.169.254", allow)
    with pytest.raises(Refused) as info:
        assert_url_allowed("http://169.254.169.254/latest/meta-data/", allow_ranges=allow)
    assert info.value.reason == REASON_INTERNAL_ADDRESS
    assert str(info.value) == (
        "refused: http://169.254.169.254/latest/meta-data/ points to a cloud metadata address "
        "(169.254.169.254), which webward never fetches"
    )


def test_allow_ranges_open_exactly_their_range() -> None:
    """allow_ranges 127.0.0.1/32 lets 127.0.0.1 through but not 127.0.0.2."""
    allow = [ipaddress.ip_network("127.0.0.1/32")]
    parsed = assert_url_allowed("http://127.0.0.1:8080/x", allow_ranges=allow)
    assert (parsed.host, parsed.port) == ("127.0.0.1", 8080)
    assert assert_url_allowed("http://2130706433/", allow_ranges=allow).host == "127.0.0.1"
    with pytest.raises(Refused):
        assert_url_allowed("http://127.0.0.2/", allow_ranges=allow)
    with pytest.raises(Refused):  # the mapped form is a different address: not in the range
        assert_url_allowed("http://[::ffff:127.0.0.1]/", allow_ranges=allow)


def test_allow_ranges_accept_cidr_strings_and_refuse_bad_ones() -> None:
    """allow_ranges may be CIDR strings; a malformed one is bad input, not a crash."""
    assert assert_url_allowed("http://[::1]/", allow_ranges=["::1/128"]).host == "::1"
    with pytest.raises(InvalidInput):
        assert_url_allowed("http://127.0.0.1/", allow_ranges=["not-a-cidr"])


def test_allow_ranges_do_not_open_internal_names() -> None:
    """An internal host name is refused by name whatever the ranges say."""
    with pytest.raises(Refused) as info:
        assert_url_allowed("http://localhost/", allow_ranges=["127.0.0.0/8"])
    assert info.value.reason == REASON_INTERNAL_NAME


# ----------------------------------------------------------------------- assert_ip_allowed


def test_assert_ip_allowed_names_host_and_address() -> None:
    """A DNS answer in a private range is refused with the host and address named."""
    with pytest.raises(Refused) as info:
        assert_ip_allowed("example.org", "10.0.0.1")
    assert info.value.reason == REASON_INTERNAL_ADDRESS
    assert info.value.code == "refused"
    assert str(info.value) == (
        "refused: example.org resolves to an internal address (10.0.0.1), "
        "which webward never fetches; an operator can allow its range by adding "
        '"10.0.0.1/32" to [network] allow_ranges of the config (or WEBWARD_ALLOW_RANGES)'
    )


def test_assert_ip_allowed_passes_public_and_allowed_answers() -> None:
    """Public answers and answers inside allow_networks pass silently."""
    assert_ip_allowed("example.org", "93.184.215.14")
    assert_ip_allowed("example.org", ipaddress.ip_address("2606:4700::1111"))
    assert_ip_allowed("intranet.example", "10.1.2.3", [ipaddress.ip_network("10.0.0.0/8")])


def test_assert_ip_allowed_refuses_metadata_even_when_allowed() -> None:
    """A host resolving to a metadata address is refused even inside allow_networks."""
    with pytest.raises(Refused) as info:
        assert_ip_allowed(
            "rebind.example", "169.254.169.254", [ipaddress.ip_network("169.254.0.0/16")]
        )
    assert "cloud metadata address (169.254.169.254)" in str(info.value)


def test_assert_ip_allowed_refuses_garbage_answers() -> None:
    """An answer that is not an address is refused (fail closed), not raised as ValueError."""
    with pytest.raises(Refused) as info:
        assert_ip_allowed("example.org", "not-an-ip")
    assert info.value.reason == REASON_INVALID_ADDRESS


# ----------------------------------------------------------------------- literal tricks

# Spellings a resolver or browser accepts for an internal address, and what they mean.
INTERNAL_LITERALS = [
    ("http://127.0.0.1/", "127.0.0.1"),
    ("http://2130706433/", "127.0.0.1"),  # decimal
    ("http://0177.0.0.1/", "127.0.0.1"),  # octal
    ("http://017700000001/", "127.0.0.1"),  # octal, whole
    ("http://0x7f.1/", "127.0.0.1"),  # hex + short
    ("http://0x7f000001/", "127.0.0.1"),  # hex, whole
    ("http://0X7F.0X0.0X0.0X1/", "127.0.0.1"),
    ("http://0x000000000007f.0x0.0x0000.0x01/", "127.0.0.1"),  # padded hex
    ("http://0177.0.0.01/", "127.0.0.1"),
    ("http://127.1/", "127.0.0.1"),  # short
    ("http://127.0.1/", "127.0.0.1"),
    ("http://127.000.000.001/", "127.0.0.1"),  # zero-padded: octal 0 and 1
    ("http://%31%32%37.0.0.1/", "127.0.0.1"),  # percent-encoded host bytes
    ("http://%31%32%37%2e0%2e0%2e1/", "127.0.0.1"),
    ("http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "127.0.0.1"),  # full-width digits
    ("http://127。0。0。1/", "127.0.0.1"),  # ideographic full stop U+3002
    ("http://127\uff0e0\uff0e0\uff0e1/", "127.0.0.1"),  # full-width full stop U+FF0E
    ("http://127\uff610\uff610\uff611/", "127.0.0.1"),  # half-width ideographic full stop U+FF61
    ("http://①②⑦.⓪.⓪.①/", "127.0.0.1"),  # enclosed alphanumerics
    ("http://127.0.0.1./", "127.0.0.1"),  # trailing dot
    ("http://127.0.0.1:80/", "127.0.0.1"),
    ("http://0/", "0.0.0.0"),
    ("http://0.0.0.0/", "0.0.0.0"),
    ("http://0x/", "0.0.0.0"),
    ("http://00000/", "0.0.0.0"),
    ("http://10.1/", "10.0.0.1"),
    ("http://012.1/", "10.0.0.1"),
    ("http://0xa.0x0.0x0.0x1/", "10.0.0.1"),
    ("http://167772161/", "10.0.0.1"),
    ("http://192.168.1/", "192.168.0.1"),
    ("http://3232235777/", "192.168.1.1"),
    ("http://0xc0a80101/", "192.168.1.1"),
    ("http://0300.0250.0001.0001/", "192.168.1.1"),
    ("http://2852039166/", "169.254.169.254"),  # metadata, decimal
    ("http://0xa9fea9fe/", "169.254.169.254"),
    ("http://0251.0376.0251.0376/", "169.254.169.254"),
    ("http://169.254.43518/", "169.254.169.254"),
    ("http://[::1]/", "::1"),
    ("http://[::]/", "::"),
    ("http://[0:0:0:0:0:0:0:1]/", "::1"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
    ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1"),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
    ("http://[::FFFF:7F00:0001]:8080/", "::ffff:127.0.0.1"),
    ("http://[::127.0.0.1]/", "::7f00:1"),
    ("http://[64:ff9b::127.0.0.1]/", "64:ff9b::7f00:1"),
    ("http://[64:ff9b:1::a00:1]/", "64:ff9b:1::a00:1"),
    ("http://[2002:7f00:1::]/", "2002:7f00:1::"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "2001:0:4136:e378:8000:63bf:80ff:fffe"),
    ("http://[2606:4700::5efe:127.0.0.1]/", "2606:4700::5efe:7f00:1"),
    ("http://[fe80::1]/", "fe80::1"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254"),
    ("https://[::ffff:a9fe:a9fe]/latest", "::ffff:169.254.169.254"),
]


@pytest.mark.parametrize(("url", "address"), INTERNAL_LITERALS)
def test_internal_literals_are_refused_in_every_spelling(url: str, address: str) -> None:
    """Each spelling is decoded to its address and refused as an internal address. The
    address is written as RFC 5952 writes it, the same on every Python: an IPv4-mapped one
    in its mixed form (Python 3.13 writes ``::ffff:127.0.0.1``, older ones wrote
    ``::ffff:7f00:1``)."""
    assert parse_url(url).host == address
    assert parse_url(url).is_ip
    with pytest.raises(Refused) as info:
        assert_url_allowed(url)
    assert info.value.reason == REASON_INTERNAL_ADDRESS
    assert info.value.code == "refused"
    assert f"({address})" in str(info.value)


def test_internal_address_message_is_pinned() -> None:
    """The refusal names the URL as given, the address it means, and why."""
    with pytest.raises(Refused) as info:
        assert_url_allowed("http://127.0.0.1/")
    assert str(info.value) == (
        "refused: http://127.0.0.1/ points to an internal address (127.0.0.1), "
        "which webward never fetches; an operator can allow its range by adding "
        '"127.0.0.1/32" to [network] allow_ranges of the config (or WEBWARD_ALLOW_RANGES)'
    )
    with pytest.raises(Refused) as info:
        assert_url_allowed("http://0x7f.1/admin")
    assert str(info.value) == (
        "refused: http://0x7f.1/admin points to an internal address (127.0.0.1), "
        "which webward never fetches; an operator can allow its range by adding "
        '"127.0.0.1/32" to [network] allow_ranges of the config (or WEBWARD_ALLOW_RANGES)'
    )


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://8.8.8.8/", "8.8.8.8"),
        ("http://134744072/", "8.8.8.8"),
        ("http://0x8.0x8.0x8.0x8/", "8.8.8.8"),
        ("http://1.1/", "1.0.0.1"),
        ("https://[2606:4700::1111]/", "2606:4700::1111"),
        ("http://[64:ff9b::8.8.8.8]/", "64:ff9b::808:808"),
    ],
)
def test_public_literals_are_allowed(url: str, address: str) -> None:
    """Public address literals pass the literal guard (decision only; nothing connects)."""
    parsed = assert_url_allowed(url)
    assert (parsed.host, parsed.is_ip) == (address, True)


@pytest.mark.parametrize(
    "url",
    [
        "http://1.2.3.999/",
        "http://1.2.3.4.5/",
        "http://256.256.256.256/",
        "http://4294967296/",
        "http://0x100000000/",
        "http://1.2.65536/",
        "http://09.0.0.1/",
        "http://0x7g.0.0.1/",
        "http://example.123/",
        "http://1..1/",
        "http://.1.2.3/",
    ],
)
def test_numeric_hosts_that_are_not_ipv4_are_invalid(url: str) -> None:
    """A host ending in a number must be a valid IPv4 address, else the URL is bad input."""
    with pytest.raises(InvalidInput) as info:
        assert_url_allowed(url)
    assert info.value.reason == REASON_INVALID_HOST


# ----------------------------------------------------------------------- internal names

INTERNAL_NAMES = [
    ("http://localhost/", "localhost"),
    ("http://LOCALHOST:8080/", "localhost"),
    ("http://localhost./", "localhost"),
    ("http://localhost%2e/", "localhost"),
    ("http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", "localhost"),
    ("http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "localhost"),
    ("http://%6c%6f%63%61%6c%68%6f%73%74/", "localhost"),
    ("http://app.localhost/", "app.localhost"),
    ("http://printer.local/", "printer.local"),
    ("http://db.internal/", "db.internal"),
    ("http://router.home.arpa/", "router.home.arpa"),
    ("http://api.default.svc.cluster.local/", "api.default.svc.cluster.local"),
    ("http://kubernetes.default.svc/", "kubernetes.default.svc"),
    ("http://node.cluster.local/", "node.cluster.local"),
    ("http://box.localdomain/", "box.localdomain"),
    ("http://nas.lan/", "nas.lan"),
    ("http://wiki.intranet/", "wiki.intranet"),
    ("http://mail.corp/", "mail.corp"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal"),
    ("http://metadata.azure.internal/", "metadata.azure.internal"),
    ("http://metadata/", "metadata"),
    ("http://instance-data/latest/", "instance-data"),
    ("http://metadata.tencentyun.com/", "metadata.tencentyun.com"),
    ("http://intranet/", "intranet"),
    ("http://wiki/", "wiki"),
    ("http://x./", "x"),
]


@pytest.mark.parametrize(("url", "host"), INTERNAL_NAMES)
def test_internal_names_are_refused(url: str, host: str) -> None:
    """Internal suffixes, metadata names and single labels are refused by name."""
    with pytest.raises(Refused) as info:
        assert_url_allowed(url)
    assert info.value.reason == REASON_INTERNAL_NAME
    assert str(info.value).startswith(
        f"refused: {host} is an internal host name, which webward never fetches"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "https://docs.python.org/3/",
        "https://localhost.example.com/",
        "https://local.example/",
        "https://internal.example.org/x",
        "https://my-corp.com/",
        "https://a_b.example.com/",
        "https://127.0.0.1.nip.io/",
    ],
)
def test_public_looking_names_pass_the_literal_guard(url: str) -> None:
    """Names that merely contain an internal word pass (their DNS answers are checked later)."""
    assert not assert_url_allowed(url).is_ip


# ----------------------------------------------------------------------- URL tricks


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("file:///etc/passwd", "file"),
        ("gopher://127.0.0.1:6379/_", "gopher"),
        ("ftp://example.com/", "ftp"),
        ("javascript:alert(1)", "javascript"),
        ("data:text/html,hi", "data"),
        ("dict://127.0.0.1:11211/", "dict"),
        ("ws://example.com/", "ws"),
        ("FILE:///etc/passwd", "file"),
        ("jar:http://x/!/", "jar"),
    ],
)
def test_other_schemes_are_refused_by_name(url: str, scheme: str) -> None:
    """Only http and https are read; the refusal names the scheme."""
    with pytest.raises(Refused) as info:
        assert_url_allowed(url)
    assert info.value.reason == REASON_SCHEME
    assert str(info.value) == (
        f"refused: the scheme {scheme}: is not allowed; only http and https URLs can be read"
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://user:password@example.com/",
        "http://user@example.com/",
        "http://@example.com/",
        "http://:@example.com/",
        "http://example.com@127.0.0.1/",
        "http://good.com:80@evil.com/",
        "http://a@b@c/",
    ],
)
def test_credentials_in_urls_are_refused(url: str) -> None:
    """Any userinfo, even empty, is refused before the host is looked at."""
    with pytest.raises(Refused) as info:
        assert_url_allowed(url)
    assert info.value.reason == REASON_USERINFO
    assert str(info.value) == "refused: URLs with credentials (user:password@) are not allowed"


@pytest.mark.parametrize(
    "char",
    [
        "\t",
        "\n",
        "\r",
        "\x00",
        " ",
        "\x7f",
        "\x85",
        "\x0b",
        "\u00a0",
        "\u2028",
        "\u3000",
        "\u202e",
        "\u200e",
        "\ufeff",
        "\ud800",
    ],
)
def test_control_characters_and_whitespace_are_refused_anywhere(char: str) -> None:
    """Controls, whitespace and bidi marks are refused in the host, the path and at the ends."""
    for url in (
        f"http://exa{char}mple.com/",
        f"http://example.com/a{char}b",
        f"{char}http://example.com/",
        f"http://example.com/{char}",
    ):
        with pytest.raises(InvalidInput) as info:
            assert_url_allowed(url)
        assert info.value.reason == REASON_CONTROL_CHARACTER
        assert f"U+{ord(char):04X}" in str(info.value)


def test_every_unicode_control_and_space_is_refused() -> None:
    """No code point that is a control, a space or a separator slips through the filter."""
    bad = [
        c
        for c in map(chr, range(0x110000))
        if c.isspace() or unicodedata.category(c) in ("Cc", "Zs", "Zl", "Zp")
    ]
    assert len(bad) > 60
    for char in bad:
        with pytest.raises(InvalidInput):
            parse_url(f"https://example.com/{char}")


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.com\\@good.com/",
        "http:\\\\evil.com/",
        "http:/\\evil.com/",
        "http://evil.com\\",
        "https://127.0.0.1\\.good.com/",
        "http://good.com\\\\evil.com",
    ],
)
def test_backslashes_in_the_authority_are_refused(url: str) -> None:
    """A backslash where parsers disagree about the host is refused."""
    with pytest.raises(Refused) as info:
        assert_url_allowed(url)
    assert info.value.reason == REASON_BACKSLASH


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://", REASON_EMPTY_HOST),
        ("http:///path", REASON_EMPTY_HOST),
        ("http://:80/", REASON_EMPTY_HOST),
        ("http://./", REASON_EMPTY_HOST),
        ("http://?x", REASON_EMPTY_HOST),
        ("http://example.com:0/", REASON_BAD_PORT),
        ("http://example.com:65536/", REASON_BAD_PORT),
        ("http://example.com:99999999999999999999/", REASON_BAD_PORT),
        ("http://example.com:abc/", REASON_BAD_PORT),
        ("http://example.com:-1/", REASON_BAD_PORT),
        ("http://example.com:+80/", REASON_BAD_PORT),
        ("http://example.com:\uff18\uff10/", REASON_BAD_PORT),
        ("http://example.com:1_0/", REASON_BAD_PORT),
        ("http://example.com:80:80/", REASON_BAD_PORT),
        ("http://[fe80::1%25eth0]/", REASON_ZONE_ID),
        ("http://[fe80::1%eth0]/", REASON_ZONE_ID),
        ("http://[::1/", REASON_INVALID_HOST),
        ("http://[::1]x/", REASON_INVALID_HOST),
        ("http://[::1::2]/", REASON_INVALID_HOST),
        ("http://[127.0.0.1]/", REASON_INVALID_HOST),
        ("http://[::ffff:0177.0.0.1]/", REASON_INVALID_HOST),
        ("http://a[b].com/", REASON_INVALID_HOST),
        ("http://[\uff11::1]/", REASON_INVALID_HOST),
        ("http://a..b/", REASON_INVALID_HOST),
        ("http://example.com../", REASON_INVALID_HOST),
        ("http://exa%00mple.com/", REASON_INVALID_HOST),
        ("http://%zz.com/", REASON_INVALID_HOST),
        ("http://%ff.com/", REASON_INVALID_HOST),
        ("http://%2531%2532%2537.0.0.1/", REASON_INVALID_HOST),
        ("http://exa%40mple.com/", REASON_INVALID_HOST),
        ("http://ex*ample.com/", REASON_INVALID_HOST),
        ("http://xn--zz.com/", REASON_INVALID_HOST),
        ("http://xn--.com/", REASON_INVALID_HOST),
        ("http://\u200d.com/", REASON_INVALID_HOST),
        ("http://evil.com\uff0fgood.com/", REASON_INVALID_HOST),
        ("http://" + "a" * 64 + ".com/", REASON_INVALID_HOST),
        ("http://" + "a." * 127 + "com/", REASON_INVALID_HOST),
        ("example.com", REASON_NOT_ABSOLUTE),
        ("//example.com/", REASON_NOT_ABSOLUTE),
        ("/relative/path", REASON_NOT_ABSOLUTE),
        ("http:/example.com/", REASON_NOT_ABSOLUTE),
        ("http:example.com", REASON_NOT_ABSOLUTE),
        ("localhost:8080", REASON_NOT_ABSOLUTE),
        ("example.com:443/x", REASON_NOT_ABSOLUTE),
        ("", REASON_NOT_ABSOLUTE),
    ],
)
def test_malformed_urls_are_invalid_input_by_name(url: str, reason: str) -> None:
    """Malformed URLs are InvalidInput with a fixed reason, never a crash."""
    with pytest.raises(InvalidInput) as info:
        assert_url_allowed(url)
    assert info.value.reason == reason
    assert info.value.code == "invalid_input"


def test_invalid_host_messages_say_what_is_wrong() -> None:
    """The message names the host and the reason in one sentence."""
    with pytest.raises(InvalidInput) as info:
        assert_url_allowed("http://1.2.3.999/")
    assert str(info.value) == (
        "the host 1.2.3.999 is not valid: it ends in a number but is not an IPv4 address"
    )
    with pytest.raises(InvalidInput) as info:
        assert_url_allowed("example.com/page")
    assert str(info.value) == (
        "the URL example.com/page is not absolute; give a full URL starting with http:// or "
        "https://, such as https://example.com/page"
    )


@pytest.mark.parametrize(
    ("typed", "such"),
    [
        ("example.com", "https://example.com"),
        ("www.example.com:8443/a?b#c", "https://www.example.com:8443/a?b#c"),
        ("//example.com/x", "https://example.com/x"),
        ("localhost:8000", "http://localhost:8000"),
        ("app.localhost/x", "http://app.localhost/x"),
        ("[::1]:80/x", "http://[::1]:80/x"),
        ("192.168.1.20:8080/x", "http://192.168.1.20:8080/x"),
        ("/relative/path", None),
        ("http:/example.com/", None),
        ("http//example.com", None),
        ("intranet", None),
    ],
)
def test_a_url_without_its_scheme_is_told_the_url_to_type(typed: str, such: str | None) -> None:
    """A host and path typed without "https://" (the most common slip, a person's or a
    model's) is told the URL it most likely meant, over http for a local server (localhost,
    an IP address), whose https a suggestion got wrong; what names no host gets the rule alone.
    The rule alone left the person to work out what "absolute" asked for."""
    with pytest.raises(InvalidInput) as info:
        assert_url_allowed(typed)
    rule = f"the URL {typed} is not absolute; give a full URL starting with http:// or https://"
    assert str(info.value) == (rule if such is None else f"{rule}, such as {such}")


def test_non_string_urls_are_invalid_input() -> None:
    """None, bytes and numbers are refused as bad input."""
    for value in (None, b"http://example.com/", 42):
        with pytest.raises(InvalidInput) as info:
            assert_url_allowed(value)  # type: ignore[arg-type]
        assert info.value.reason == REASON_INVALID_URL


def test_a_100_kb_url_is_refused_before_parsing() -> None:
    """A huge URL is refused for length alone: its bad scheme and NUL bytes are never seen."""
    url = "file://\x00" + "a" * 100_000
    with pytest.raises(InvalidInput) as info:
        assert_url_allowed(url)
    assert info.value.reason == REASON_TOO_LONG
    assert str(info.value) == (
        "the URL is longer than 2048 characters; shorten it, for example by leaving out "
        "tracking parameters (utm_*) and the #fragment; an operator can raise [limits] "
        "max_url_chars"
    )
    # A model is told its own step, not the operator's setting.
    assert info.value.for_model == (
        "the URL is longer than 2048 characters; shorten it, for example by leaving out "
        "tracking parameters (utm_*) and the #fragment"
    )


def test_the_length_limit_is_exact_and_configurable() -> None:
    """2048 characters pass, 2049 do not; max_chars moves the line."""
    base = "https://example.com/"
    assert assert_url_allowed(base + "a" * (2048 - len(base))).host == "example.com"
    with pytest.raises(InvalidInput):
        assert_url_allowed(base + "a" * (2049 - len(base)))
    with pytest.raises(InvalidInput) as info:
        parse_url(base + "abc", max_chars=10)
    assert str(info.value).startswith("the URL is longer than 10 characters; shorten it")
    # A redirect's Location over the limit is the server's: no step of the caller's.
    with pytest.raises(InvalidInput) as info:
        parse_url(base).join("/" + "a" * 2048)
    assert str(info.value) == "the URL is longer than 2048 characters"
    with pytest.raises(InvalidInput) as info:  # a short Location joined to a long URL
        parse_url(base + "a" * 2000 + "/b").join("c" * 40)
    assert str(info.value) == "the URL is longer than 2048 characters"


# ----------------------------------------------------------------------- IDN hosts


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://bücher.example/", "xn--bcher-kva.example"),
        ("http://BÜCHER.Example./", "xn--bcher-kva.example"),
        ("http://xn--bcher-kva.example/", "xn--bcher-kva.example"),
        ("http://b%C3%BCcher.example/", "xn--bcher-kva.example"),
        ("http://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/", "example.com"),
        ("http://example。com/", "example.com"),
        ("http://ex\u00adample.com/", "example.com"),  # soft hyphen is ignored by UTS #46
        ("http://münchen.de/", "xn--mnchen-3ya.de"),
        ("http://例え.テスト.jp/", "xn--r8jz45g.xn--zckzah.jp"),
        ("http://faß.de/", "xn--fa-hia.de"),  # non-transitional: ß stays ß
        # UTS #46 keeps emoji valid where IDNA2008 does not: browsers read these hosts.
        ("http://\U0001f355.ws/", "xn--vi8h.ws"),
        ("http://xn--vi8h.ws/", "xn--vi8h.ws"),
        ("http://XN--VI8H.ws/", "xn--vi8h.ws"),
        ("http://i\u2764.ws/", "xn--i-7iq.ws"),
    ],
)
def test_idn_hosts_are_idna_encoded(url: str, host: str) -> None:
    """Hosts are mapped with UTS #46 and sent in their ASCII form."""
    parsed = assert_url_allowed(url)
    assert (parsed.host, parsed.is_ip) == (host, False)


@pytest.mark.parametrize(
    "url",
    [
        "http://xn--.example/",  # encodes nothing
        "http://xn--a.example/",  # encodes an ASCII label
        "http://xn--zz.example/",  # not punycode at all
        "http://xn--vi8h-.ws/",  # not the A-label of what it decodes to
        "http://a\u200db.example/",  # a joiner out of its context
        "http://\u0301a.example/",  # a leading combining mark
        "http://xn--a-jfa.example/",  # a U-label UTS #46 would map (an upper-case letter)
        "http://xn--\U0001f355.ws/",  # a label not ASCII that begins xn-- (UTS #46 4.1)
    ],
)
def test_invalid_idn_labels_stay_refused(url: str) -> None:
    """What no browser reads as a host is still refused, emoji taken or not."""
    with pytest.raises(InvalidInput) as info:
        assert_url_allowed(url)
    assert info.value.reason == "invalid_host"


def test_an_emoji_host_under_an_internal_suffix_is_refused_by_name() -> None:
    """Its ASCII form is what the name checks see."""
    with pytest.raises(Refused) as info:
        assert_url_allowed("http://\U0001f355.localhost/")
    assert info.value.reason == REASON_INTERNAL_NAME


# ----------------------------------------------------------------------- ParsedURL


def test_parsed_url_components_are_what_gets_requested() -> None:
    """Scheme, host, effective port and target are canonical; the fragment is dropped."""
    parsed = parse_url("HTTPS://Docs.Python.ORG:443/3/library/../index.html?q=a%20b#top")
    assert parsed == ParsedURL("https", "docs.python.org", 443, "/3/index.html?q=a%20b", False)
    assert parsed.url == "https://docs.python.org/3/index.html?q=a%20b"
    assert parsed.origin == ("https", "docs.python.org", 443)
    assert parsed.authority == "docs.python.org"
    assert parsed.path == "/3/index.html"


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("http://example.com", "/"),
        ("http://example.com?x=1", "/?x=1"),
        ("http://example.com/?", "/?"),
        ("http://example.com#frag", "/"),
        ("http://example.com/a/./b/../c", "/a/c"),
        ("http://example.com/a/%2e%2E/b", "/b"),
        ("http://example.com/../../etc/passwd", "/etc/passwd"),
        ("http://example.com/a/..", "/"),
        ("http://example.com/a/.", "/a/"),
        ("http://example.com/a\\b", "/a/b"),
        ("http://example.com/ä", "/%C3%A4"),
        ('http://example.com/a<b>"c"`{}^', "/a%3Cb%3E%22c%22%60%7B%7D%5E"),
        ("http://example.com/?q='<x>'&r=ä", "/?q=%27%3Cx%3E%27&r=%C3%A4"),
        ("http://example.com/%7e%zz?%41", "/%7e%zz?%41"),  # existing escapes are kept as they are
        ("http://example.com/a?b?c/../d", "/a?b?c/../d"),  # the query is not a path
    ],
)
def test_targets_are_normalised_minimally(url: str, target: str) -> None:
    """Dot segments go, unsafe characters are percent-encoded, escapes are left alone."""
    assert parse_url(url).target == target


@pytest.mark.parametrize(
    ("url", "canonical", "port"),
    [
        ("http://example.com:80/", "http://example.com/", 80),
        ("https://example.com:443/", "https://example.com/", 443),
        ("http://example.com:443/", "http://example.com:443/", 443),
        ("http://example.com:/", "http://example.com/", 80),
        ("http://example.com:00080/", "http://example.com/", 80),
        ("https://[2606:4700::1111]:8443/x", "https://[2606:4700::1111]:8443/x", 8443),
        ("http://[2606:4700:0:0::1111]/", "http://[2606:4700::1111]/", 80),
    ],
)
def test_canonical_url_and_effective_port(url: str, canonical: str, port: int) -> None:
    """The canonical URL brackets IPv6, omits default ports and always has a path."""
    parsed = parse_url(url)
    assert (parsed.url, parsed.port) == (canonical, port)
    assert parse_url(parsed.url) == parsed


def test_a_hand_built_parsed_url_gets_no_trust() -> None:
    """assert_url_allowed re-parses a ParsedURL, so a forged one cannot skip the checks."""
    forged = ParsedURL("http", "127.1", 80, "/", False)
    with pytest.raises(Refused) as info:
        assert_url_allowed(forged)
    assert info.value.reason == REASON_INTERNAL_ADDRESS
    good = parse_url("https://example.com/x")
    assert assert_url_allowed(good) == good


# ----------------------------------------------------------------------- redirects


@pytest.mark.parametrize(
    ("location", "url"),
    [
        ("/next", "https://example.com/next"),
        ("next", "https://example.com/dir/next"),
        ("../up?x=1", "https://example.com/up?x=1"),
        ("?page=2", "https://example.com/dir/page?page=2"),
        ("#frag", "https://example.com/dir/page"),
        ("//other.example/p", "https://other.example/p"),
        ("http://other.example:8080/", "http://other.example:8080/"),
        ("/\\evil.example/x", "https://evil.example/x"),  # browsers read \ as / here
        ("https://bücher.example/", "https://xn--bcher-kva.example/"),
        # Slashes before the host as WHATWG counts them: any run of two or more, and none
        # at all after another http(s) scheme; the same scheme without them is relative.
        ("///other.example/p", "https://other.example/p"),
        ("https:///other.example/p", "https://other.example/p"),
        ("http:other.example/p", "http://other.example/p"),
        ("http:\\\\\\other.example/p", "http://other.example/p"),
        ("https:other.example", "https://example.com/dir/other.example"),
        ("/p?next=///x", "https://example.com/p?next=///x"),
    ],
)
def test_join_resolves_locations_like_a_browser(location: str, url: str) -> None:
    """A redirect Location resolves against the current URL and is parsed again."""
    assert parse_url("https://example.com/dir/page").join(location).url == url


@pytest.mark.parametrize("location", ["//", "///", "//?q=1", "//#f", "https://", "HTTP:///"])
def test_a_location_that_names_no_host_is_no_url(location: str) -> None:
    """An authority with no host is no URL to a browser (WHATWG: failure); urljoin gave back
    the current URL, and the read was refused as a redirect loop, a sentence about something
    else. It is now refused as no usable URL, naming why."""
    with pytest.raises(InvalidInput) as info:
        parse_url("https://example.com/dir/page").join(location)
    assert info.value.message == "the redirect location names no host"
    assert info.value.reason == REASON_INVALID_URL


def test_joined_locations_still_face_the_guard() -> None:
    """A redirect to an internal target parses, and the guard then refuses it."""
    here = parse_url("https://example.com/")
    for location in (
        "//127.0.0.1/",
        "///127.0.0.1/",
        "http:127.0.0.1/",
        "http://2130706433/",
        "http://[::1]/",
        "http://localhost/",
    ):
        with pytest.raises(Refused):
            assert_url_allowed(here.join(location))
    for location in ("file:///etc/passwd", "gopher://x/"):
        with pytest.raises(Refused) as info:
            here.join(location)
        assert info.value.reason == REASON_SCHEME
    for location in ("/a\tb", "http://[::1", "http://user@x.example/"):
        with pytest.raises(WebwardError):
            here.join(location)


def test_reason_codes_are_stable_literals() -> None:
    """The reason codes the audit log keys on do not drift."""
    assert (
        REASON_SCHEME,
        REASON_USERINFO,
        REASON_INTERNAL_ADDRESS,
        REASON_INTERNAL_NAME,
        REASON_TOO_LONG,
        REASON_BACKSLASH,
    ) == ("scheme", "userinfo", "internal_address", "internal_name", "too_long", "backslash")
    assert K.SIX_TO_FOUR.value == "6to4"
    assert K.PUBLIC.blocked is False and K.LOOPBACK.blocked is True


@pytest.mark.parametrize(
    ("address", "v6_range", "v4"),
    [
        ("::ffff:10.0.0.1", "::/0", "10.0.0.1"),
        ("::ffff:127.0.0.1", "::ffff:0:0/96", "127.0.0.1"),
        ("::127.0.0.1", "::/96", "127.0.0.1"),
        ("64:ff9b::a00:1", "64:ff9b::/96", "10.0.0.1"),
        ("2002:c0a8:101::1", "2002::/16", "192.168.1.1"),
        # Teredo: server 65.54.227.120 (public), client 127.0.0.1 (inverted in the last 32 bits)
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "2001::/32", "127.0.0.1"),
        ("fe80::5efe:a00:1", "fe80::/10", "10.0.0.1"),
    ],
)
def test_an_ipv6_range_lets_no_internal_ipv4_through(address: str, v6_range: str, v4: str) -> None:
    """An IPv6 address carrying an IPv4 one reaches that IPv4 address: inside an IPv6 range it
    is allowed only when the IPv4 address is public or inside an IPv4 range."""
    assert not ip_allowed(address, [v6_range])
    assert ip_allowed(address, [v6_range, f"{v4}/32"])
    with pytest.raises(Refused, match=f'"{v4}/32"'):
        assert_url_allowed(f"http://[{address}]/", allow_ranges=[v6_range])


def test_an_ipv6_range_still_opens_what_carries_a_public_ipv4_or_none() -> None:
    assert ip_allowed("2002:808:808::1", ["2002::/16"])  # 6to4 carrying 8.8.8.8
    assert ip_allowed("::1", ["::1/128"])
    assert ip_allowed("fd00::1", ["::/0"])
