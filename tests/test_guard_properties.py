"""Property tests for the SSRF guard: it never crashes, and no spelling of an internal
address gets through.

Pure checks: nothing here opens a socket; public addresses are only decided on.
"""

from __future__ import annotations

import ipaddress

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webward._addresses import carried_ipv4s
from webward._errors import InvalidInput, Refused, WebwardError
from webward.guard import (
    REASON_INTERNAL_ADDRESS,
    ParsedURL,
    assert_url_allowed,
    classify_ip,
    ip_allowed,
    ip_in_blocked_range,
    is_isatap,
    is_metadata_address,
    parse_url,
)

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# The test's own copy of the IANA registries (not the module's table), so a slip in one
# shows up against the other.
BLOCKED_V4 = [
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]
BLOCKED_V6_IN_GLOBAL_UNICAST = [
    ipaddress.IPv6Network(n)
    for n in (
        "2001::/23",
        "2001:db8::/32",
        "2002::/16",
        "3fff::/20",
    )
]
METADATA_V4 = ["169.254.169.254", "168.63.129.16", "100.100.100.200", "192.0.0.192"]
PUBLIC_V4 = [
    ipaddress.IPv4Network(n)
    for n in (
        "1.0.0.0/8",
        "8.0.0.0/7",
        "11.0.0.0/8",
        "45.0.0.0/8",
        "93.184.0.0/16",
        "104.16.0.0/12",
    )
]
PUBLIC_V6 = [
    ipaddress.IPv6Network(n)
    for n in (
        "2600::/12",
        "2a00::/12",
        "2606:4700::/32",
        "2001:4860::/32",
    )
]


def _in_network(
    networks: list[ipaddress.IPv4Network] | list[ipaddress.IPv6Network],
) -> st.SearchStrategy[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    def pick(
        net: ipaddress.IPv4Network | ipaddress.IPv6Network,
    ) -> st.SearchStrategy[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        base = int(net.network_address)
        return st.integers(0, net.num_addresses - 1).map(
            lambda offset: ipaddress.ip_address(base + offset)
        )

    return st.sampled_from(networks).flatmap(pick)


internal_v4 = st.one_of(
    _in_network(BLOCKED_V4),
    st.sampled_from(METADATA_V4).map(ipaddress.IPv4Address),
).map(lambda a: ipaddress.IPv4Address(int(a)))
public_v4 = _in_network(PUBLIC_V4)
public_v6 = _in_network(PUBLIC_V6)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFF_FFFF)


# ----------------------------------------------------------------------- never crashes

# Pieces of URLs with the characters parsers disagree about.
TRICKY = (
    "abcxyz019.-_%:@[]/\\?#~!$&'()*+,;=\"<>^`{|}"
    "\u3002\uff0e\uff61\uff11\uff10\u24db\u2460\u00ad\u200d\u00df\u00fc\u0131\u212a"
)
tricky_text = st.text(alphabet=TRICKY, max_size=30)
hosts = st.one_of(
    tricky_text,
    st.ip_addresses().map(lambda a: f"[{a}]" if a.version == 6 else str(a)),
    st.from_regex(
        r"(0x?[0-9a-fA-F]{0,9}|[0-9]{1,11})(\.(0x?[0-9a-fA-F]{0,4}|[0-9]{1,5})){0,4}\.?",
        fullmatch=True,
    ),
    st.text(max_size=20),
)
urls = st.builds(
    lambda scheme, sep, user, host, port, path: f"{scheme}{sep}{user}{host}{port}{path}",
    st.sampled_from(["http", "https", "HTTP", "hTtPs", "file", "gopher", "", "javascript"]),
    st.sampled_from(["://", ":/", ":", ":\\\\", ":/\\", ":///"]),
    st.sampled_from(["", "user:pw@", "@", "a\\@"]),
    hosts,
    st.one_of(
        st.just(""),
        st.integers(-5, 70000).map(lambda p: f":{p}"),
        tricky_text.map(lambda t: ":" + t),
    ),
    st.one_of(st.just(""), tricky_text.map(lambda t: "/" + t), st.text(max_size=20)),
)

# URLs that mostly parse: real-looking hosts (names, IDNs, numbers, IPv6) and hostile paths.
labels = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)
idn_labels = st.text(
    alphabet=st.characters(categories=["Ll", "Lu", "Lo", "Nd", "Mn"]), min_size=1, max_size=8
)
plausible_hosts = st.one_of(
    st.lists(st.one_of(labels, idn_labels), min_size=1, max_size=3).map(
        lambda parts: ".".join([*parts, "com"])
    ),
    st.ip_addresses().map(lambda a: f"[{a}]" if a.version == 6 else str(a)),
    st.integers(0, 0xFFFF_FFFF).map(str),
)
visible = st.characters(exclude_categories=["Cc", "Cs", "Zs", "Zl", "Zp", "Cf"])
plausible_urls = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
    st.sampled_from(["http", "https", "HTTPS"]),
    plausible_hosts,
    st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
    st.one_of(
        st.just(""),
        st.text(alphabet=st.one_of(visible, st.sampled_from(TRICKY)), max_size=40).map(
            lambda t: "/" + t
        ),
    ),
)


@FAST
@given(st.one_of(st.text(max_size=200), urls, plausible_urls))
def test_the_guard_raises_only_webward_errors(url: str) -> None:
    """On any text, assert_url_allowed returns or raises a WebwardError, nothing else."""
    try:
        parsed = assert_url_allowed(url)
    except WebwardError:
        return
    assert isinstance(parsed, ParsedURL)


@FAST
@given(st.one_of(plausible_urls, urls))
def test_parsed_urls_are_canonical_and_requestable(url: str) -> None:
    """A URL that parses has an ASCII host, a visible-ASCII target, and re-parses to itself."""
    try:
        parsed = parse_url(url)
    except WebwardError:
        return
    assert parsed.scheme in ("http", "https")
    assert parsed.host.isascii() and parsed.host == parsed.host.lower()
    assert not parsed.host.endswith(".")
    assert 1 <= parsed.port <= 65535
    assert parsed.target.startswith("/")
    assert all(0x21 <= ord(c) <= 0x7E for c in parsed.target)
    assert parse_url(parsed.url) == parsed


@FAST
@given(st.one_of(st.text(max_size=100), urls, plausible_urls, tricky_text))
def test_redirect_joins_raise_only_webward_errors(location: str) -> None:
    """Resolving any Location either parses or raises a WebwardError."""
    base = parse_url("https://example.com/dir/page?x=1")
    try:
        joined = base.join(location)
    except WebwardError:
        return
    assert parse_url(joined.url) == joined


@FAST
@given(st.one_of(st.text(max_size=60), st.ip_addresses().map(str)))
def test_address_functions_raise_only_invalid_input(text: str) -> None:
    """The address functions answer a bool or raise InvalidInput, on any text."""
    try:
        result = ip_in_blocked_range(text)
    except InvalidInput:
        return
    assert result is ip_in_blocked_range(ipaddress.ip_address(text))


# ----------------------------------------------------------------------- the table


@FAST
@given(st.ip_addresses(v=4))
def test_ipv4_decisions_match_the_registry(address: ipaddress.IPv4Address) -> None:
    """A random IPv4 address is blocked exactly when a registry block or metadata holds it."""
    expected = any(address in net for net in BLOCKED_V4) or str(address) in METADATA_V4
    assert ip_in_blocked_range(address) is expected


@FAST
@given(st.one_of(st.ip_addresses(v=6), public_v6))
def test_ipv6_decisions_match_the_registry(address: ipaddress.IPv6Address) -> None:
    """A random IPv6 address outside 2000::/3 is blocked (NAT64 aside), inside it by the
    registry's blocks."""
    assert isinstance(address, ipaddress.IPv6Address)
    found = classify_ip(address)
    if address in ipaddress.IPv6Network("64:ff9b::/96"):
        carried = ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
        assert found.blocked is ip_in_blocked_range(carried)
    elif address not in ipaddress.IPv6Network("2000::/3") or any(
        address in net for net in BLOCKED_V6_IN_GLOBAL_UNICAST
    ):
        assert found.blocked
    elif not is_isatap(address):
        assert not found.blocked


def _embeddings(
    v4: ipaddress.IPv4Address, prefix: int, server: int, flags: int, port: int, isatap_u: int
) -> dict[str, ipaddress.IPv6Address]:
    n = int(v4)
    return {
        "mapped": ipaddress.IPv6Address(0xFFFF_0000_0000 | n),
        "compatible": ipaddress.IPv6Address(n),
        "nat64": ipaddress.IPv6Address((0x64_FF9B << 96) | n),
        "nat64-local": ipaddress.IPv6Address((0x64_FF9B_0001 << 80) | n),
        "6to4": ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | (prefix & 0xFFFF_FFFF_FFFF)),
        "teredo": ipaddress.IPv6Address(
            (0x2001_0000 << 96) | (server << 64) | (flags << 48) | (port << 32) | (~n & 0xFFFF_FFFF)
        ),
        # A random /64 inside 2600::/12 (public), then the ISATAP interface id.
        "isatap": ipaddress.IPv6Address(
            (((0x260 << 52) | prefix) << 64) | (isatap_u << 56) | (0x5EFE << 32) | n
        ),
    }


@FAST
@given(internal_v4, st.integers(0, (1 << 52) - 1), u32, u16, u16, st.sampled_from([0, 2]))
def test_internal_ipv4_is_refused_in_every_ipv6_embedding(
    v4: ipaddress.IPv4Address, prefix: int, server: int, flags: int, port: int, isatap_u: int
) -> None:
    """Every internal IPv4 address, in every IPv6 form that carries one, is refused as an
    address and as a bracketed URL literal."""
    assert ip_in_blocked_range(v4)
    for form, v6 in _embeddings(v4, prefix, server, flags, port, isatap_u).items():
        assert ip_in_blocked_range(v6), (form, v6)
        assert not ip_allowed(v6), (form, v6)
        for literal in (v6.exploded, str(v6)):
            try:
                assert_url_allowed(f"http://[{literal}]/")
            except Refused as exc:
                assert exc.reason == REASON_INTERNAL_ADDRESS, (form, literal)
            else:
                raise AssertionError(f"{form} {literal} was allowed")


@FAST
@given(
    st.sampled_from(METADATA_V4).map(ipaddress.IPv4Address),
    st.integers(0, (1 << 52) - 1),
    u32,
    u16,
    u16,
    st.sampled_from([0, 2]),
)
def test_metadata_is_recognised_in_every_ipv6_embedding(
    v4: ipaddress.IPv4Address, prefix: int, server: int, flags: int, port: int, isatap_u: int
) -> None:
    """Metadata addresses stay metadata inside every IPv6 form, so allow_ranges cannot open them."""
    everything = [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
    for form, v6 in _embeddings(v4, prefix, server, flags, port, isatap_u).items():
        assert is_metadata_address(v6), (form, v6)
        assert not ip_allowed(v6, everything), (form, v6)


@FAST
@given(st.one_of(_in_network(BLOCKED_V4), st.ip_addresses(v=6).filter(ip_in_blocked_range)))
def test_allow_ranges_open_blocked_addresses_except_metadata(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    """A blocked address inside allow_networks is allowed, unless it is a metadata address; one
    that carries an internal IPv4 address only with that address allowed too."""
    single = [ipaddress.ip_network(address)]
    internal_v4 = [
        ipaddress.ip_network(v4)
        for v4 in carried_ipv4s(classify_ip(address))
        if ip_in_blocked_range(v4)
    ]
    metadata = is_metadata_address(address)
    assert ip_allowed(address, single) is not (metadata or bool(internal_v4))
    assert ip_allowed(address, single + internal_v4) is not metadata


# ----------------------------------------------------------------------- numeric spellings


def _radix(value: int, style: str, pad: int) -> str:
    if style == "hex":
        return "0x" + "0" * pad + format(value, "x")
    if style == "HEX":
        return "0X" + "0" * pad + format(value, "X")
    if style == "oct":
        return "0" + "0" * pad + format(value, "o")
    return str(value)


styles = st.sampled_from(["dec", "hex", "HEX", "oct"])


@st.composite
def spellings(draw: st.DrawFn) -> tuple[int, str]:
    """A random IPv4 address and one of the ways a resolver or browser spells it."""
    n = draw(u32)
    octets = [(n >> s) & 0xFF for s in (24, 16, 8, 0)]
    shape = draw(st.sampled_from(["whole", "dotted", "short3", "short2", "fullwidth", "percent"]))
    pads = draw(st.lists(st.integers(0, 3), min_size=4, max_size=4))
    if shape == "whole":
        parts = [(n, draw(styles))]
    elif shape == "short3":
        parts = [(octets[0], draw(styles)), (octets[1], draw(styles)), (n & 0xFFFF, draw(styles))]
    elif shape == "short2":
        parts = [(octets[0], draw(styles)), (n & 0xFF_FFFF, draw(styles))]
    else:
        parts = [(o, draw(styles) if shape == "dotted" else "dec") for o in octets]
    text = ".".join(_radix(v, s, p) for (v, s), p in zip(parts, pads, strict=False))
    if shape == "fullwidth":
        text = "".join(chr(0xFF10 + int(c)) if c.isdigit() else "\u3002" for c in text)
    elif shape == "percent":
        text = "".join(f"%{ord(c):02X}" for c in text)
    if draw(st.booleans()):
        text += "."
    return n, text


def _decision(url: str) -> str:
    try:
        assert_url_allowed(url)
    except WebwardError as exc:
        return exc.reason
    return "allowed"


@FAST
@given(spellings())
def test_every_ipv4_spelling_gets_the_dotted_quad_decision(case: tuple[int, str]) -> None:
    """Decimal, octal, hex, short, full-width and percent-encoded spellings mean the same
    address and get the same decision as its dotted quad."""
    n, text = case
    dotted = str(ipaddress.IPv4Address(n))
    parsed = parse_url(f"http://{text}/")
    assert (parsed.host, parsed.is_ip) == (dotted, True)
    assert _decision(f"http://{text}/") == _decision(f"http://{dotted}/")


@FAST
@given(st.one_of(public_v4, public_v6.filter(lambda a: not is_isatap(a))))
def test_public_addresses_are_allowed(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    """Addresses in public ranges pass the table and the literal guard (decision only)."""
    assert not ip_in_blocked_range(address)
    literal = f"[{address}]" if address.version == 6 else str(address)
    assert assert_url_allowed(f"https://{literal}/").host == str(address)
