"""URLs from pages and providers made safe to hand over: absolute http(s), ASCII only.

A search hit's URL and a page's outbound link are text a site chose. In this form they hold
no space, quote, angle bracket, bidi or other non-ASCII character, so neither delimiter-like
text nor an invisible character can ride in them. What neutralising may still find in them is
the envelope's marker words or webward's own voice spelled with URL characters
(``/posts/untrusted-web-content``): ``_envelope.neutral_url`` percent-encodes a letter of each
such span, so the URL still names the same resource and stays one URL, where the text
neutraliser's ``[marker removed]`` would put a space in it.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

__all__ = [
    "URL_SAFE",
    "ascii_host",
    "check_a_label",
    "clean_url",
    "domain_to_ascii",
    "ip_text",
    "is_clean",
]

# Everything a URL may carry as-is; anything else (spaces, quotes, angle brackets,
# non-ASCII) is percent-encoded so a hit's URL can never hold delimiter-like text.
URL_SAFE = "!#$%&'()*+,/:;=?@[]~-._"
_HOST = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?")


def ip_text(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """``ip`` written as RFC 5952 writes it, the same on every Python: an IPv4-mapped IPv6
    address in its mixed form, ``::ffff:127.0.0.1`` (Python 3.13's ``str``; older ones wrote
    ``::ffff:7f00:1``), so that hosts, records and refusals do not change with the Python."""
    if ip.version == 6 and (mapped := ip.ipv4_mapped) is not None:
        return f"::ffff:{mapped}" + (f"%{ip.scope_id}" if ip.scope_id else "")
    return str(ip)


def clean_url(value: Any, max_chars: int) -> str | None:
    """``value`` as an absolute http(s) URL in ASCII form (an IDN host in its A-labels, the
    rest percent-encoded), or ``None`` when it is none: another scheme, user info, a host
    that is no host name or address, a control character or a lone surrogate, longer than
    ``max_chars``."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    # A lone surrogate (a JSON answer's "\udcff") names no character and has no UTF-8 form to
    # percent-encode: quote() would raise on it, failing the whole search as webward's bug.
    if (
        not value
        or len(value) > max_chars
        or any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value)
    ):
        return None
    try:
        parts = urlsplit(value)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if (
        parts.scheme.lower() not in ("http", "https")
        or not host
        or parts.username
        or parts.password
    ):
        return None
    if not host.isascii():
        # Mapped as the guard maps a host, so that a hit's host is the one a read of its URL
        # would reach.
        try:
            host = domain_to_ascii(host)
        except (UnicodeError, ValueError):  # idna.IDNAError is a UnicodeError
            return None
    if ":" in host:
        try:
            host = f"[{ip_text(ipaddress.IPv6Address(host))}]"
        except ValueError:
            return None
    elif not _HOST.fullmatch(host):
        return None
    netloc = host if port is None else f"{host}:{port}"
    url = urlunsplit(
        (
            parts.scheme.lower(),
            netloc.lower(),
            quote(parts.path, safe=URL_SAFE),
            quote(parts.query, safe=URL_SAFE),
            quote(parts.fragment, safe=URL_SAFE),
        )
    )
    return url if len(url) <= max_chars else None


# A URL clean_url would only lower-case (most links on most pages): a plain host (no user
# info), then only characters it keeps as they are.
_CLEAN_RE = re.compile(
    r"https?://[A-Za-z0-9.:\[\]_-]+(?:[/?#][A-Za-z0-9!#$%&'()*+,/:;=?@\[\]~._-]*)?"
)


def is_clean(url: str) -> bool:
    """Whether ``url`` holds only characters :func:`clean_url` keeps as they are."""
    return _CLEAN_RE.fullmatch(url) is not None


def domain_to_ascii(domain: str) -> str:
    """``domain`` (not ASCII) mapped with UTS #46 (non-transitional, no STD3 rules, as WHATWG
    URL parsing maps a host) and its non-ASCII labels made A-labels; raises
    ``idna.IDNAError`` (a ``UnicodeError``) or ``ValueError`` when it is no valid name."""
    import idna  # its tables cost milliseconds of start-up; most hosts are ASCII

    mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
    return ".".join(label if label.isascii() else _to_a_label(label) for label in mapped.split("."))


def ascii_host(url: str) -> str:
    """``url`` as text to show a person: its host, when not ASCII, in the ASCII form a read
    resolves and names (``https://xn--ggle-55da.com/``), or with each character that is
    not ASCII escaped (``\\u043e``) when it is no valid name; the rest of ``url`` as it is.
    A host spelled with letters of another script (a Cyrillic "o", U+043E, for the Latin
    one) reads as the host it imitates: an audit log showed a read of another site as one
    of google.com."""
    if url.isascii():
        return url
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return url
    host = _NETLOC_HOST.fullmatch(netloc)
    if host is None or host.group(2).isascii():
        return url
    try:
        name = domain_to_ascii(host.group(2))
    except (UnicodeError, ValueError):  # idna.IDNAError is a UnicodeError
        name = host.group(2).encode("ascii", "backslashreplace").decode("ascii")
    at = url.find(netloc)  # the first: what precedes it (a scheme, "//") is ASCII
    if at < 0:
        # urlsplit drops tabs and line breaks wherever they are (a refused target keeps
        # them: 'http://g\u043e\togle.com/'), so its netloc is not in the text: every
        # letter that is not ASCII escaped, the host too. (url.index raised, and one such
        # refused read made `webward audit` and the console's audit view fail.)
        return url.encode("ascii", "backslashreplace").decode("ascii")
    shown = (host.group(1) or "") + name + (host.group(3) or "")
    return url[:at] + shown + url[at + len(netloc) :]


# A URL's netloc: user info (the audit drops it), the host, a port.
_NETLOC_HOST = re.compile(r"(.*@)?([^@\[\]]*?)(:[0-9]*)?", re.DOTALL)


# IDNA2008 (the ``idna`` package's alabel and ulabel) refuses code points UTS #46 keeps
# valid, emoji and other symbols among them (xn--vi8h.ws, a pizza slice): browsers read such
# hosts (WHATWG URL parsing is UTS #46, non-transitional, without STD3 rules), and they were
# refused as invalid. A label IDNA2008 refuses is taken when UTS #46 keeps it as it is (every
# code point valid and already mapped) and it passes the checks WHATWG keeps: NFC, no leading
# combining mark, no leading xn--, joiners in their context, the Bidi rule. Its ASCII form is
# what the guard checks, the resolver looks up and the request names.


def _to_a_label(label: str) -> str:
    """The A-label of a mapped non-ASCII ``label`` (raises ``idna.IDNAError`` if none)."""
    import idna

    try:
        return idna.alabel(label).decode("ascii")
    except idna.IDNAError:
        _check_uts46_label(label)
        return "xn--" + label.encode("punycode").decode("ascii")


def check_a_label(label: str) -> None:
    """Raise unless the ``xn--`` ``label`` is the A-label of a valid U-label."""
    import idna

    try:
        idna.ulabel(label)
    except idna.IDNAError:
        decoded = label[4:].encode("ascii").decode("punycode")
        if "xn--" + decoded.encode("punycode").decode("ascii") != label:
            raise idna.IDNAError("not the punycode of its own decoding") from None
        _check_uts46_label(decoded)


def _check_uts46_label(label: str) -> None:
    import idna
    import idna.core

    if not label or label.isascii():
        raise idna.IDNAError("an A-label encodes a label that is not ASCII")
    if label[:4].lower() == "xn--":
        # UTS #46 (4.1, without CheckHyphens) and browsers refuse it: "xn--🍕" is no
        # A-label, and made one of (xn--xn---ei53c) it named a host nobody wrote.
        raise idna.IDNAError("a label that is not ASCII begins with xn--")
    if idna.uts46_remap(label, std3_rules=False, transitional=False) != label:
        raise idna.IDNAError("not a mapped UTS #46 label")
    idna.core.check_nfc(label)
    idna.core.check_initial_combiner(label)
    for pos, char in enumerate(label):
        if char in "\u200c\u200d" and not idna.core.valid_contextj(label, pos):
            raise idna.IDNAError("a joiner out of its context")
    idna.core.check_bidi(label)
