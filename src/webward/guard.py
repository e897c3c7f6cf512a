"""The SSRF guard: pure, synchronous checks of URLs and addresses (no I/O at all).

Three layers, each usable alone:

* the **address table**: :func:`classify_ip` sorts an address into one :class:`AddressKind`
  (public, or one named reason it is not globally reachable); :func:`ip_in_blocked_range`,
  :func:`is_metadata_address` and :func:`ip_allowed` are the yes/no faces of it;
* **URL parsing**: :func:`parse_url` parses a URL once, the way WHATWG URL host parsing does
  (percent-decoding, UTS #46 mapping, the IPv4 number parser), into a :class:`ParsedURL` whose
  components are exactly what the fetch core connects to;
* the **literal guard**: :func:`assert_url_allowed` refuses schemes, credentials, internal
  address literals in every spelling and internal host names; :func:`assert_ip_allowed` is the
  check the pinned transport runs on every DNS answer.

This module holds URL parsing, the internal host names and the literal guard. The address table
(and its check order) lives in :mod:`webward._addresses`; its public names are re-exported here,
so callers import everything from ``webward.guard``.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes, urljoin

from ._addresses import (
    METADATA_ADDRESSES,
    REASON_INVALID_ADDRESS,
    AddressKind,
    Classification,
    IPAddress,
    IPNetwork,
    carried_ipv4s,
    classify_ip,
    embedded_ipv4,
    embedded_ipv4s,
    ip_allowed,
    ip_in_blocked_range,
    ip_text,
    is_6to4,
    is_ipv4_compatible,
    is_ipv4_mapped,
    is_isatap,
    is_metadata_address,
    is_nat64,
    is_nat64_local,
    is_teredo,
    quoted,
)
from ._addresses import shorten as _shorten
from ._errors import InvalidInput, Reason, Refused, operator_step
from ._urls import check_a_label, domain_to_ascii

__all__ = [
    "INTERNAL_NAME_SUFFIXES",
    "METADATA_ADDRESSES",
    "METADATA_NAMES",
    "REASON_BACKSLASH",
    "REASON_BAD_PORT",
    "REASON_CONTROL_CHARACTER",
    "REASON_EMPTY_HOST",
    "REASON_INTERNAL_ADDRESS",
    "REASON_INTERNAL_NAME",
    "REASON_INVALID_ADDRESS",
    "REASON_INVALID_HOST",
    "REASON_INVALID_URL",
    "REASON_NOT_ABSOLUTE",
    "REASON_SCHEME",
    "REASON_SPECIAL_USE_NAME",
    "REASON_TOO_LONG",
    "REASON_USERINFO",
    "REASON_ZONE_ID",
    "SPECIAL_USE_SUFFIXES",
    "AddressKind",
    "Classification",
    "ParsedURL",
    "assert_ip_allowed",
    "assert_url_allowed",
    "classify_ip",
    "embedded_ipv4",
    "embedded_ipv4s",
    "ip_allowed",
    "ip_in_blocked_range",
    "is_6to4",
    "is_internal_name",
    "is_ipv4_compatible",
    "is_ipv4_mapped",
    "is_isatap",
    "is_metadata_address",
    "is_nat64",
    "is_nat64_local",
    "is_teredo",
    "parse_url",
]

DEFAULT_MAX_URL_CHARS = 2048

# Reason codes: fixed literals the audit record and the tests key on.
REASON_SCHEME = Reason.SCHEME  # Refused: not http or https
REASON_USERINFO = Reason.USERINFO  # Refused: user:password@ in the URL
REASON_BACKSLASH = Reason.BACKSLASH  # Refused: a backslash where parsers disagree on the host
REASON_INTERNAL_ADDRESS = Reason.INTERNAL_ADDRESS  # Refused: a non-global or metadata address
REASON_INTERNAL_NAME = Reason.INTERNAL_NAME  # Refused: localhost, *.internal, single labels...
REASON_SPECIAL_USE_NAME = Reason.SPECIAL_USE_NAME  # Refused: *.onion, *.invalid, *.alt
# REASON_INVALID_ADDRESS ("invalid_address") belongs to the address table: imported above.
REASON_TOO_LONG = Reason.TOO_LONG  # InvalidInput: over max_chars
REASON_CONTROL_CHARACTER = (
    Reason.CONTROL_CHARACTER
)  # InvalidInput: controls, whitespace, bidi marks
REASON_NOT_ABSOLUTE = Reason.NOT_ABSOLUTE  # InvalidInput: no scheme://
REASON_EMPTY_HOST = Reason.EMPTY_HOST  # InvalidInput
REASON_BAD_PORT = Reason.BAD_PORT  # InvalidInput: 0, over 65535 or not digits
REASON_ZONE_ID = Reason.ZONE_ID  # InvalidInput: [fe80::1%25eth0]
REASON_INVALID_HOST = Reason.INVALID_HOST  # InvalidInput: bad IDNA, bad IPv4 number, bad label
REASON_INVALID_URL = Reason.INVALID_URL  # InvalidInput: anything else malformed


# --------------------------------------------------------------------------- internal names

#: Suffixes (and whole names) that only mean something inside a local network.
INTERNAL_NAME_SUFFIXES: tuple[str, ...] = (
    "localhost",  # RFC 6761
    "local",  # mDNS, RFC 6762
    "internal",  # reserved for private use by ICANN (2024)
    "home.arpa",  # RFC 8375
    "cluster.local",  # Kubernetes
    "svc",  # Kubernetes short forms (kubernetes.default.svc)
    "localdomain",
    "lan",
    "intranet",
    "corp",
    "home",
    "private",
    "test",  # RFC 6761; local development resolvers
)

#: Suffixes of names that are never looked up in the DNS: a query for one would only tell
#: the resolver what an agent asked for (a Tor onion service) or can never answer.
SPECIAL_USE_SUFFIXES: tuple[str, ...] = (
    "onion",  # RFC 7686: Tor onion services
    "invalid",  # RFC 6761: never resolves
    "alt",  # RFC 9476: names of non-DNS systems
)

#: Host names of cloud metadata services (besides the suffixes above).
METADATA_NAMES: frozenset[str] = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
    }
)


def is_internal_name(host: str) -> bool:
    """True for a canonical host name (lower-case ASCII, no trailing dot) that is internal:
    an internal suffix, a metadata name, or a single label."""
    if "." not in host or host in METADATA_NAMES:
        return True
    return any(host == s or host.endswith("." + s) for s in INTERNAL_NAME_SUFFIXES)


# --------------------------------------------------------------------------- URL parsing


@dataclass(frozen=True)
class ParsedURL:
    """A URL parsed once: the exact components the fetch core connects to.

    ``host`` is lower-case ASCII (IDNA-encoded, no trailing dot) or a canonical IP string
    (IPv6 without brackets); ``port`` is the effective port; ``target`` is path and query,
    always starting with ``/``, fragment dropped.
    """

    scheme: str
    host: str
    port: int
    target: str
    is_ip: bool

    # Cached: a parsed URL is remembered by the gate and asked for these on every call
    # (a frozen dataclass still lets functools.cached_property fill in its __dict__).
    @functools.cached_property
    def authority(self) -> str:
        """``host[:port]`` as it goes in the Host header: brackets for IPv6, default port
        omitted."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == _DEFAULT_PORTS[self.scheme]:
            return host
        return f"{host}:{self.port}"

    @functools.cached_property
    def url(self) -> str:
        """The canonical absolute URL."""
        return f"{self.scheme}://{self.authority}{self.target}"

    @property
    def origin(self) -> tuple[str, str, int]:
        """``(scheme, host, port)``."""
        return (self.scheme, self.host, self.port)

    @property
    def path(self) -> str:
        """The target without its query."""
        return self.target.split("?", 1)[0]

    def join(self, location: str, *, max_chars: int = DEFAULT_MAX_URL_CHARS) -> ParsedURL:
        """Resolve a redirect ``Location`` against this URL and parse the result.

        Blanks a Location may carry raw (spaces, other Unicode blanks) are percent-encoded,
        as browsers do; control characters are refused. Raises the same errors as
        :func:`parse_url`; the result still has to pass :func:`assert_url_allowed`.
        """
        if not isinstance(location, str):
            raise InvalidInput("the redirect location must be a string", reason=REASON_INVALID_URL)
        if len(location) > max_chars:
            raise _too_long(max_chars, typed=False)
        # Servers send spaces (and other blanks) raw in a Location, and browsers follow it
        # with them percent-encoded (WHATWG URL parsing): so do we. Encoded, a blank can no
        # longer split or hide anything: in the host it is refused as not valid (as browsers
        # refuse it), and the guard checks whatever the joined URL names.
        location = _BLANK_IN_LOCATION_RE.sub(_percent_encode_match, location)
        # Controls (tab, CR, LF, NUL, DEL, C1) stay refused; checked before urljoin, which
        # silently drops tabs and newlines.
        _refuse_bad_characters(
            location, "the redirect location contains a control character", hint=""
        )
        # Browsers read a backslash before the query as a slash in http(s) URLs, so
        # "/\\evil.example" leads to evil.example; follow them, then guard what they would reach.
        cut = min(
            (i for i in (location.find("?"), location.find("#")) if i >= 0), default=len(location)
        )
        location = location[:cut].replace("\\", "/") + location[cut:]
        location = _slashes_as_browsers_read(location, self.scheme)
        if _NO_HOST_RE.match(location):
            # "//", "///" or "http://" names an authority with no host: no URL to a browser
            # (WHATWG: failure), while urljoin gave back the current URL, which was then
            # refused as a redirect loop.
            raise InvalidInput("the redirect location names no host", reason=REASON_INVALID_URL)
        try:
            joined = urljoin(self.url, location)
        except ValueError:
            raise InvalidInput(
                f"the redirect location {quoted(location)} is not a valid URL",
                reason=REASON_INVALID_URL,
            ) from None
        if len(joined) > max_chars:  # said as the server's, not with the caller's next step
            raise _too_long(max_chars, typed=False)
        return parse_url(joined, max_chars=max_chars)


_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def _slashes_as_browsers_read(location: str, base_scheme: str) -> str:
    """A redirect ``location`` with the slashes before its host as browsers count them
    (WHATWG URL parsing, http and https): any run of two or more slashes starts the
    authority (``///evil.example/p`` and ``http:///evil.example/p`` lead to evil.example),
    and so does an http(s) scheme other than the base's with or without slashes
    (``https:evil.example/p``). ``urljoin`` read the first two as a path on the current host
    and the last as no URL, so a read went elsewhere than the browser, the renderer included,
    goes; the guard checks what the joined URL names either way."""
    match = _SCHEME_RE.match(location)
    if match is not None:
        scheme, rest = match.group()[:-1].lower(), location[match.end() :]
        if scheme in _DEFAULT_PORTS and (scheme != base_scheme or rest.startswith("//")):
            return f"{scheme}://{rest.lstrip('/')}"
        return location
    if location.startswith("//"):
        return "//" + location.lstrip("/")
    return location


# A Location that starts an authority (after _slashes_as_browsers_read) and ends it at once.
_NO_HOST_RE = re.compile(r"(?:https?:)?//(?:[/?#]|$)", re.IGNORECASE)
_AUTHORITY_END_RE = re.compile(r"[/?#\\]")
# Controls (C0, DEL, C1), every Unicode space and line/paragraph separator, bidi controls and
# the BOM: invisible in logs and prompts, stripped differently by different parsers.
_BAD_CHAR_RE = re.compile(
    "[\x00-\x20\x7f-\x9f\u00a0\u1680\u2000-\u200a\u200e\u200f\u2028\u2029\u202a-\u202f"
    "\u205f\u2066-\u2069\u3000\ufeff]"
)
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# What a redirect Location may carry raw and is percent-encoded: the space and every character
# of _BAD_CHAR_RE past the C1 controls (Unicode spaces, separators, bidi controls, the BOM).
_BLANK_IN_LOCATION_RE = re.compile(
    "[ \u00a0\u1680\u2000-\u200a\u200e\u200f\u2028\u2029\u202a-\u202f\u205f"
    "\u2066-\u2069\u3000\ufeff]"
)
_IPV6_CHARS_RE = re.compile(r"[0-9A-Fa-f:.]+")
_LABEL_RE = re.compile(r"[a-z0-9_\-]{1,63}")
_PORT_RE = re.compile(r"[0-9]+")
_HEX_RE = re.compile(r"0[xX][0-9A-Fa-f]*")
# WHATWG percent-encode sets (C0 controls and space are refused before we get here).
_PATH_ENCODE = frozenset('"#<>?`{}^')
_QUERY_ENCODE = frozenset("\"#<>'")
_SINGLE_DOT = frozenset({".", "%2e"})
_DOUBLE_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})


def parse_url(url: str, *, max_chars: int = DEFAULT_MAX_URL_CHARS) -> ParsedURL:
    """Parse an absolute http(s) URL once, the way WHATWG URL host parsing does.

    Raises :class:`InvalidInput` for malformed URLs and :class:`Refused` for a scheme other
    than http/https, credentials in the URL and a backslash in the authority. It does not
    classify the host: that is :func:`assert_url_allowed`.
    """
    if not isinstance(url, str):
        raise InvalidInput("the URL must be a string", reason=REASON_INVALID_URL)
    if len(url) > max_chars:  # before anything else, so a huge string costs nothing
        raise _too_long(max_chars)
    _refuse_bad_characters(url)
    match = _SCHEME_RE.match(url)
    if match is None:
        raise _not_absolute(url)
    scheme = match.group()[:-1].lower()
    after = url[match.end() : match.end() + 1]
    if scheme not in _DEFAULT_PORTS and ("." in scheme or after.isdigit()):
        raise _not_absolute(url)  # "example.com:8080/x" is a host and port, not a scheme
    if scheme not in _DEFAULT_PORTS:
        raise Refused(
            f"refused: the scheme {_shorten(scheme)}: is not allowed; only http and https URLs "
            "can be read",
            reason=REASON_SCHEME,
        )
    rest = url[match.end() :]
    if rest[:2] != "//":
        if "\\" in rest[:2]:
            raise _backslash()
        raise _not_absolute(url)
    rest = rest[2:]
    end = _AUTHORITY_END_RE.search(rest)
    split = end.start() if end else len(rest)
    authority, tail = rest[:split], rest[split:]
    if tail.startswith("\\"):
        raise _backslash()
    if "@" in authority:
        raise Refused(
            "refused: URLs with credentials (user:password@) are not allowed",
            reason=REASON_USERINFO,
        )
    host_text, port_text = _split_host_port(authority)
    host, is_ip = _parse_host(host_text)
    port = _parse_port(port_text, scheme)
    return ParsedURL(scheme, host, port, _normalise_target(tail), is_ip)


def _refuse_bad_characters(
    text: str,
    what: str = "the URL contains a control character or whitespace",
    hint: str = "; percent-encode it or remove it",
) -> None:
    bad = _BAD_CHAR_RE.search(text)
    if bad is None and (bad := _SURROGATE_RE.search(text)) is not None:
        # A lone surrogate is what Python makes of a byte that is not UTF-8 (a command line's
        # argument, a file name): no character at all, and never one that prints as space.
        what = "the URL holds a byte that is not UTF-8 text"
        hint = "; give the URL as UTF-8, or percent-encode the byte"
    if bad is not None:
        raise InvalidInput(
            f"{what} (U+{ord(bad.group()):04X}), which is not allowed{hint}",
            reason=REASON_CONTROL_CHARACTER,
        )


def _split_host_port(authority: str) -> tuple[str, str | None]:
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise _invalid_host(authority, "its IPv6 literal has no closing bracket")
        host, after = authority[: close + 1], authority[close + 1 :]
        if not after:
            return host, None
        if not after.startswith(":"):
            raise _invalid_host(authority, "text follows its IPv6 literal")
        return host, after[1:]
    host, sep, port = authority.partition(":")
    return host, (port if sep else None)


def _parse_port(text: str | None, scheme: str) -> int:
    if not text:  # "http://host:/" is the default port, as in WHATWG
        return _DEFAULT_PORTS[scheme]
    if _PORT_RE.fullmatch(text) and len(text.lstrip("0")) <= 5:
        port = int(text)
        if 1 <= port <= 65535:
            return port
    # Only a number is echoed: other text may be the start of a password ("user:pa/ss@host").
    shown = f"the port {_shorten(text)}" if _PORT_RE.fullmatch(text) else "the URL's port"
    raise InvalidInput(
        f"{shown} is not valid; a port is a number from 1 to 65535", reason=REASON_BAD_PORT
    )


_NO_HOST = "the URL has no host; give one after the scheme, as in https://example.org/page"


def _parse_host(text: str) -> tuple[str, bool]:
    """The canonical host and whether it is an IP address (WHATWG host parsing)."""
    if not text:
        raise InvalidInput(_NO_HOST, reason=REASON_EMPTY_HOST)
    if text.startswith("["):
        inner = text[1:-1]
        if "%" in inner:
            raise InvalidInput(
                f"the host {_shorten(text)} carries a percent sign (an IPv6 zone id), which "
                "is not allowed",
                reason=REASON_ZONE_ID,
            )
        if _IPV6_CHARS_RE.fullmatch(inner):
            try:
                return ip_text(ipaddress.IPv6Address(inner)), True
            except ValueError:
                pass
        raise _invalid_host(text, "it is not an IPv6 address")
    if "[" in text or "]" in text:
        raise _invalid_host(text, "it has a bracket outside an IPv6 literal")
    try:
        decoded = unquote_to_bytes(text).decode("utf-8")
    except UnicodeError:
        raise _invalid_host(text, "its percent-encoded bytes are not UTF-8") from None
    ascii_host = _domain_to_ascii(decoded, text)
    if ascii_host.endswith("."):
        ascii_host = ascii_host[:-1]
    if not ascii_host:
        raise InvalidInput(_NO_HOST, reason=REASON_EMPTY_HOST)
    labels = ascii_host.split(".")
    if "" in labels:
        raise _invalid_host(text, "it has an empty label")
    if _ends_in_number(labels[-1]):
        return str(_parse_ipv4(labels, text)), True
    for label in labels:
        if not _LABEL_RE.fullmatch(label):
            raise _invalid_host(text, "it has a character or label length no host name has")
        if label.startswith("xn--"):
            try:
                check_a_label(label)
            except (UnicodeError, ValueError):  # idna.IDNAError is a UnicodeError
                raise _invalid_host(text, "it has an invalid IDNA label") from None
    if len(ascii_host) > 253:
        raise _invalid_host(text, "it is longer than 253 characters")
    return ascii_host, False


def _domain_to_ascii(domain: str, shown: str) -> str:
    """UTS #46 mapping (full-width forms, ideographic full stops, case folding) then
    punycode for the labels that are not ASCII (:func:`_urls.domain_to_ascii`)."""
    if domain.isascii():
        return domain.lower()
    try:
        return domain_to_ascii(domain)
    except (UnicodeError, ValueError):  # idna.IDNAError is a UnicodeError
        raise _invalid_host(shown, "it is not a valid internationalised domain name") from None


def _ends_in_number(last: str) -> bool:
    return (last.isascii() and last.isdigit()) or _HEX_RE.fullmatch(last) is not None


_DOTTED_QUAD_RE = re.compile(
    r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
)


def _parse_ipv4(parts: list[str], shown: str) -> ipaddress.IPv4Address:
    """The WHATWG IPv4 parser: 1 to 4 parts, each decimal, 0x-hex or 0-octal; the last part
    fills the remaining bytes (so 127.1 is 127.0.0.1 and 2130706433 is too)."""
    dotted = ".".join(parts)
    if _DOTTED_QUAD_RE.fullmatch(dotted):  # the common spelling: no leading zeros, no hex
        return ipaddress.IPv4Address(dotted)
    numbers = [_ipv4_number(p) for p in parts]
    if len(parts) > 4 or None in numbers:
        raise _invalid_host(shown, "it ends in a number but is not an IPv4 address")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise _invalid_host(shown, "it ends in a number but is not an IPv4 address")
    address = values[-1]
    for i, n in enumerate(values[:-1]):
        address += n * 256 ** (3 - i)
    return ipaddress.IPv4Address(address)


def _ipv4_number(part: str) -> int | None:
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        part, radix = part[1:], 8
    if not part:
        return 0
    digits = "0123456789abcdefABCDEF"[: 10 if radix == 10 else 8 if radix == 8 else 22]
    if any(c not in digits for c in part):
        return None
    return int(part, radix)


def _normalise_target(tail: str) -> str:
    """Path and query: backslashes in the path become slashes and dot segments go (as in
    WHATWG, so robots.txt matching sees the path the server sees); characters a request
    line cannot carry are percent-encoded; the fragment is dropped."""
    tail = tail.split("#", 1)[0]
    path, sep, query = tail.partition("?")
    path = path.replace("\\", "/")
    segments = path[1:].split("/") if path else [""]
    out: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            if out:
                out.pop()
            if last:
                out.append("")
        elif lowered in _SINGLE_DOT:
            if last:
                out.append("")
        else:
            out.append(_percent_encode(segment, _PATH_ENCODE))
    target = "/" + "/".join(out)
    if sep:
        target += "?" + _percent_encode(query, _QUERY_ENCODE)
    return target


def _percent_encode_match(match: re.Match[str]) -> str:
    return "".join(f"%{b:02X}" for b in match.group().encode("utf-8"))


def _percent_encode(text: str, encode: frozenset[str]) -> str:
    if text.isascii() and not any(c in encode for c in text):
        return text
    return "".join(
        "".join(f"%{b:02X}" for b in c.encode("utf-8")) if c in encode or ord(c) > 0x7E else c
        for c in text
    )


# --------------------------------------------------------------------------- the literal guard


def assert_url_allowed(
    url: str | ParsedURL,
    *,
    allow_ranges: Sequence[IPNetwork | str] = (),
    max_chars: int = DEFAULT_MAX_URL_CHARS,
) -> ParsedURL:
    """Parse ``url`` and refuse it if it can only reach an internal target.

    Refuses (``Refused``) non-http(s) schemes, credentials, backslashes in the authority,
    literal internal addresses in every spelling (unless inside ``allow_ranges``; metadata
    addresses never) and internal host names; malformed URLs raise ``InvalidInput``. Returns
    the parsed URL. Host names still have to pass :func:`assert_ip_allowed` for every address
    they resolve to.
    """
    if isinstance(url, ParsedURL):
        # Re-parse the canonical form: a hand-built ParsedURL gets no trust.
        shown = url.url
        parsed = parse_url(shown, max_chars=max(max_chars, len(shown)))
    else:
        shown = url
        parsed = parse_url(url, max_chars=max_chars)
    if parsed.is_ip:
        found = classify_ip(parsed.host)
        if found.blocked and not ip_allowed(found.address, allow_ranges):
            what = _address_phrase(found)
            raise Refused(
                f"refused: {_shorten(shown, 200)} points to {what} ({parsed.host}), "
                f"which webward never fetches{_allow_hint(found)}",
                reason=REASON_INTERNAL_ADDRESS,
            )
    elif any(parsed.host == s or parsed.host.endswith("." + s) for s in SPECIAL_USE_SUFFIXES):
        suffix = parsed.host.rpartition(".")[2]
        raise Refused(
            f"refused: {_shorten(parsed.host)} is a special-use name (.{suffix}), which is "
            "never looked up in the DNS, so webward does not read it",
            reason=REASON_SPECIAL_USE_NAME,
        )
    elif is_internal_name(parsed.host):
        raise Refused(
            f"refused: {_shorten(parsed.host)} is an internal host name, which webward never "
            f"fetches{_name_hint(parsed.host)}",
            reason=REASON_INTERNAL_NAME,
        )
    return parsed


def assert_ip_allowed(
    host: str, ip: str | IPAddress, allow_networks: Sequence[IPNetwork | str] = ()
) -> None:
    """Refuse a DNS answer: raise ``Refused`` unless ``ip`` is allowed (see :func:`ip_allowed`).

    The pinned transport calls this for every address ``host`` resolves to.
    """
    try:
        found = classify_ip(ip)
    except InvalidInput:
        raise Refused(
            f"refused: {_shorten(host)} resolves to {_shorten(str(ip))}, which is not an IP "
            "address webward can check",
            reason=REASON_INVALID_ADDRESS,
        ) from None
    if found.blocked and not ip_allowed(found.address, allow_networks):
        raise Refused(
            f"refused: {_shorten(host)} resolves to {_address_phrase(found)} "
            f"({ip_text(found.address)}), which webward never fetches{_allow_hint(found)}",
            reason=REASON_INTERNAL_ADDRESS,
        )


# --------------------------------------------------------------------------- messages


def _address_phrase(found: Classification) -> str:
    if found.kind is AddressKind.METADATA:
        return "a cloud metadata address"
    return "an internal address"


# The next step, for the person at the terminal: only the operator's allow_ranges lets an
# internal range through (metadata addresses never), and only for addresses, never for names.
_ALLOW_SETTING = "[network] allow_ranges of the config (or WEBWARD_ALLOW_RANGES)"


def _allow_hint(found: Classification) -> str:
    if found.kind is AddressKind.METADATA:
        return ""
    bits = 32 if found.address.version == 4 else 128
    ranges = [f'"{ip_text(found.address)}/{bits}"']
    # An IPv6 address that carries an internal IPv4 one needs that one allowed too.
    ranges += [f'"{v4}/32"' for v4 in carried_ipv4s(found) if classify_ip(v4).blocked]
    return operator_step(
        "",
        f"an operator can allow its range by adding {' and '.join(ranges)} to {_ALLOW_SETTING}",
    )


def _name_hint(host: str) -> str:
    if host in METADATA_NAMES:
        return ""
    if host == "localhost" or host.endswith(".localhost"):
        return operator_step(
            "",
            "for a server on this machine use 127.0.0.1 instead, and allow it by adding "
            f'"127.0.0.1/32" to {_ALLOW_SETTING}',
        )
    return operator_step(
        "", f"name the server by its IP address instead, and allow its range in {_ALLOW_SETTING}"
    )


def _too_long(max_chars: int, *, typed: bool = True) -> InvalidInput:
    """The refusal of a URL over ``max_chars``. One the caller typed (``typed``) comes with
    the next step, theirs (a URL that long is mostly tracking parameters or a fragment) and
    the operator's; a redirect's Location (not typed) is the server's, told as such."""
    if not typed:
        return InvalidInput(
            f"the URL is longer than {max_chars} characters", reason=REASON_TOO_LONG
        )
    return InvalidInput(
        operator_step(
            f"the URL is longer than {max_chars} characters; shorten it, for example by "
            "leaving out tracking parameters (utm_*) and the #fragment",
            "an operator can raise [limits] max_url_chars",
            model="",
        ),
        reason=REASON_TOO_LONG,
    )


# What a person or a model types when it leaves the scheme out: a host with a dot in it (or
# localhost, or a bracketed IPv6 address), a port, then a path, a query or a fragment, with
# or without the "//" of a scheme-relative URL. The first label holds no dot, so that the
# match is linear in the URL's length (two runs that could share dots backtracked).
_SCHEMELESS_RE = re.compile(
    r"(?://)?(?:localhost|\[[0-9A-Fa-f:.]+\]|[^\s/?#:@\\\[\].]+\.[^\s/?#:@\\\[\]]+)"
    r"(?::[0-9]{1,5})?(?:[/?#]\S*)?"
)


def _not_absolute(url: str) -> InvalidInput:
    # "example.com/page" is most often that page over https, a local server's (localhost, an
    # IP address) over http: say the URL to type, not only the rule (a URL that is not a
    # host's, "/page" or "http:/x", gets the rule alone).
    such = ""
    if _SCHEMELESS_RE.fullmatch(url):
        typed = url.removeprefix("//")
        if typed.startswith("["):  # an IPv6 address
            host = typed[1 : typed.index("]")]
        else:
            host = re.split(r"[:/?#]", typed, maxsplit=1)[0].lower().rstrip(".")
        local = host == "localhost" or host.endswith(".localhost")
        with contextlib.suppress(ValueError):
            local = local or ipaddress.ip_address(host) is not None
        such = f", such as {'http' if local else 'https'}://{_shorten(typed)}"
    return InvalidInput(
        f"the URL {_shorten(url)} is not absolute; give a full URL starting with http:// or "
        f"https://{such}",
        reason=REASON_NOT_ABSOLUTE,
    )


def _backslash() -> Refused:
    return Refused(
        "refused: the URL has a backslash in its host part, which parsers read differently",
        reason=REASON_BACKSLASH,
    )


def _invalid_host(host: str, why: str) -> InvalidInput:
    return InvalidInput(
        f"the host {_shorten(host)} is not valid: {why}", reason=REASON_INVALID_HOST
    )
