"""Credentials out of URLs (pure, no I/O): for the audit log, messages and log lines.

:func:`drop_userinfo` takes what may be credentials out of one URL as a caller spelled it;
:func:`redact_urls` does so for every URL in a free text (an error message);
:func:`redact_secrets` also hides the values of secret query parameters, for what leaves
the process (spans, the call log).
"""

from __future__ import annotations

import itertools
import re
import traceback
from urllib.parse import unquote, urlsplit

__all__ = [
    "drop_userinfo",
    "may_hold_userinfo",
    "redact_message",
    "redact_secrets",
    "redact_traceback",
    "redact_urls",
]

# What comes before a URL's authority: anything leading that is not a letter or slash (URL
# parsers strip C0 controls and spaces; other parsers more), the scheme, then any number of
# slashes or backslashes (``https:user:pw@host`` and ``https:\\\\host`` are URLs to WHATWG);
# or, without a scheme, two or more slashes.
_BEFORE_AUTHORITY_RE = re.compile(
    r"[^A-Za-z/\\]*(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):(?P<slashes>[/\\]*)|[/\\]{2,})"
)
# The schemes WHATWG reads an authority after without slashes. Any other scheme has one only
# after "//"; without it, see _AT_SCHEMES.
_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
# The schemes whose own syntax holds an "@" with no authority (an address, a message id):
# ``mailto:a@b.org`` is kept whole, as a capability's id (``web:page.fetch@1``) is, unless a
# ":" stands before the "@" (a password all the same). Any other "scheme" before ``X@host``
# is taken for a user name, ``X`` for a password: ``user:pw@host/x`` is a URL typed without
# its scheme.
_AT_SCHEMES = frozenset(
    {"mailto", "sip", "sips", "xmpp", "im", "pres", "acct", "mid", "cid", "news", "h323"}
)
# webward's own capability ids (``web:page.fetch@1``), which messages name.
_CAPABILITY_ID_RE = re.compile(r"web:[a-z]+(?:\.[a-z]+)+@[0-9]+(?![0-9.])")
_AUTHORITY_END_RE = re.compile(r"[/?#\\]")
# A name and its ":" at the start of a text (after what URL parsers strip), for a URL typed
# without its scheme whose user name starts with no letter: the characters of a URL's user
# name (RFC 3986's unreserved, sub-delimiters but the quote, the parentheses and the comma,
# and percent escapes), so that a repr (``{'u': ...}``) is no name.
_NAME_FIRST_RE = re.compile(r"[\x00-\x20]*([\w.~%!$&*+;=-]+):")
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")  # WHATWG removes them anywhere in a URL


# A URL given as another's query or fragment value (``?next=https://user:pw@host/``), or as
# a segment of its path (a proxy's or an archive's ``/https://user:pw@host/``): its user
# information is a credential as a secret parameter's value is, though the URL around it
# reads no host from it. Only after "=", "?", "#", "&", ";", "," or "/" (or one of them in
# percent escapes, for a URL nested twice) and with its "//": ``?q=a:b@host`` is no URL's
# authority (see _is_host_and_port), and the outer URL's own is drop_userinfo's. The nested
# URL may be spelt as it is, in percent escapes (encodeURIComponent's ``https%3A%2F%2F``,
# Python's quote's ``https%3A//``), or in escapes of escapes (a redirect carried through
# two sign-ins: ``https%253A%252F%252F``). Its authority ends at a "/" in its own spelling
# (spelt as it is, at a "?", "#", "&" or "\" too); an escape of a deeper spelling is the
# password's own (``user:p%2Fw@host``: a "/" in the password), and the last "@" before the
# end, in any spelling, ends the user information, as WHATWG reads it (``user:p@w@host``).
# A special scheme's (http, https, ws, wss, ftp, file) authority starts after its ":" with
# any run of "/" and "\\" (escaped: "%2F", "%5C"), none at all too, as WHATWG reads it
# (``https:\\\\user:pw@host``, ``https:user:pw@host``): a login page's redirect goes there.
# A run with a "\\" is the pattern's (that "\\" ends the authority before it, so each search
# stays short); one with no slash at all, _drop_bare_special_userinfo's.
# A nested URL also starts a value's list or quoted string (``?urls=["https://u:pw@h"]``,
# ``?to='https://u:pw@h'``, ``?q=a|https://u:pw@h``): after "[", a quote, "|", "<" or a
# blank too, escaped or not. Never after a character a scheme may hold ("+", ".", "-", a
# letter or digit): a start there would read the rest of a run of them from each ("a+"
# repeated: quadratic, 100 s for 100 kB).
# One lookbehind for the percent-escaped ones: each one more would be tried at every
# position of a text (a traceback's, a page-long message's).
_NESTED_AFTER = r"""(?:(?<=[=?#&;,/\["'|<\s])|(?<=%3[CDF]|%2[02367F]|%5B|%7C))"""
_NESTED_SCHEME = r"(?:[A-Za-z][A-Za-z0-9+.\-]*(?::|%3A|%253A))?"
_NESTED_AT = r"(?:@|%(?:25)?40)"
_NESTED_SPECIAL = r"(?:https?|wss?|ftp|file)"
_NESTED_USERINFO_RE = re.compile(
    _NESTED_AFTER
    + r"(?:"
    # spelt as it is: any percent escape is the user information's
    + rf"(?P<plain>{_NESTED_SCHEME}//|{_NESTED_SPECIAL}:/*\\[/\\]*)[^/?#&\s\\]*{_NESTED_AT}"
    # in percent escapes: "%2F", "%5C", "%3F" and "%23" end the authority (a "?" in the
    # password would be "%253F" there), "%25.." is the password's
    + rf"|(?P<once>{_NESTED_SCHEME}%2F%2F|{_NESTED_SPECIAL}%3A(?:%2F)*%5C(?:%2F|%5C)*)"
    + r"(?:[^%/?#&=\s\\]|%(?!2F|5C|3F|23)[0-9A-F]{2})*"
    + _NESTED_AT
    # in escapes of escapes: "%252F" and "%255C" end it too
    + rf"|(?P<twice>{_NESTED_SCHEME}%252F%252F|{_NESTED_SPECIAL}%253A(?:%252F)*%255C(?:%252F|%255C)*)"
    + r"(?:[^%/?#&=\s\\]|%(?!2F|5C|3F|23|252F|255C|253F|2523)[0-9A-F]{2})*"
    + _NESTED_AT
    + r")",
    re.IGNORECASE,
)


# A special scheme with no slash or one "/" (``?next=https:user:pw@host``, ``https:/user:...``,
# escaped ``https%3Auser%3Apw%40host``) is found by its start, and its authority's end looked
# for once for all the starts before that end: in a pattern, each start's search for an "@"
# ran to the end of a text of "=https:x" repeated (quadratic).
_BARE_SPECIAL_RE = re.compile(
    _NESTED_AFTER
    + r"(?:https?|wss?|ftp|file)(?:(?P<plain>:/?(?![/\\]))|(?P<once>%3A(?:%2F)?(?!%2F|%5C))"
    + r"|%253A(?:%252F)?(?!%252F|%255C))",
    re.IGNORECASE,
)
# Where the authority ends in each spelling (as in _NESTED_USERINFO_RE), and its "@".
_BARE_AUTHORITY_ENDS = {
    "plain": re.compile(r"[/?#&\s\\]"),
    "once": re.compile(r"[/?#&=\s\\]|%(?:2F|5C|3F|23)", re.IGNORECASE),
    "twice": re.compile(r"[/?#&=\s\\]|%(?:2F|5C|3F|23|252F|255C|253F|2523)", re.IGNORECASE),
}
_ANY_AT_RE = re.compile(_NESTED_AT)


def _drop_bare_special_userinfo(text: str) -> str:
    pieces: list[str] = []
    done = pos = 0
    while (scheme := _BARE_SPECIAL_RE.search(text, pos)) is not None:
        start = scheme.end()
        spelling = "plain" if scheme.group("plain") else "once" if scheme.group("once") else "twice"
        end = _BARE_AUTHORITY_ENDS[spelling].search(text, start)
        stop = end.start() if end is not None else len(text)
        last_at = None
        for found in _ANY_AT_RE.finditer(text, start, stop):
            last_at = found
        if last_at is None:
            pos = stop  # (each start before it has the same end, and no "@" either)
            continue
        pieces.append(text[done:start])
        done = pos = last_at.end()
    return "".join(pieces) + text[done:] if pieces else text


def may_hold_userinfo(text: str) -> bool:
    """Whether ``text`` holds an "@", spelt as it is or percent-escaped once or twice: only
    then can a URL in it carry user information (substring tests, quicker than any pattern)."""
    return "@" in text or "%40" in text or "%2540" in text


def _drop_nested_userinfo(text: str) -> str:
    if not may_hold_userinfo(text):
        return text
    text = _NESTED_USERINFO_RE.sub(
        lambda m: m.group("plain") or m.group("once") or m.group("twice"), text
    )
    return _drop_bare_special_userinfo(text)


def drop_userinfo(text: str, *, schemeless: bool = True) -> str:
    """``text`` (a URL as a caller spelled it) without anything that may be credentials:
    its own (:func:`_drop_own_userinfo`), and a URL's given as a query or fragment value
    (``?next=https://user:pw@host/``, percent escapes too)."""
    return _drop_nested_userinfo(_drop_own_userinfo(text, schemeless=schemeless))


def _drop_own_userinfo(text: str, *, schemeless: bool = True) -> str:
    """``text`` (a URL as a caller spelled it) without anything that may be credentials.

    Whatever the password holds: with an ``@`` in the authority, everything up to its last
    ``@`` goes (WHATWG's reading); with no ``@`` there, but a ``:`` before the first ``@``
    later on (a password holding ``/``, ``?``, ``#`` or ``\\``, which parsers read as the
    end of the authority, so that no host and port of digits is left before them), what may
    be the password becomes ``[redacted]``, both names kept. Either way an unusual URL may lose
    more than its credentials; a password is never kept.

    ``schemeless``: a URL typed without its scheme (``user:pw@host/x``, read as the scheme
    ``user:``) loses its password too (:func:`_name_and_password`); False for a search's
    query, free text in which ``nginx:1.25@sha256:...`` or ``Re: lunch@noon`` is no URL.
    """
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_OR_NEWLINE)
    match = _BEFORE_AUTHORITY_RE.match(text)
    # No scheme-like word before a user name that starts with no letter (``10.0.0.1:pw@host``,
    # ``42:pw@host``; the scheme the pattern finds in ``42:Zq:@host`` is the password's
    # start): a URL typed without its scheme too.
    first = _NAME_FIRST_RE.match(text) if schemeless and "@" in text else None
    if first is not None and (
        match is None or first.end() <= match.start("scheme" if match.group("scheme") else 0)
    ):
        return _name_and_password(text, first.start(1), first.end())
    if match is None:
        return text
    start = match.end()
    scheme = match.group("scheme")
    if scheme and scheme.lower() not in _SPECIAL_SCHEMES and len(match.group("slashes")) < 2:
        at = text.rfind("@")
        if at < 0:
            return text
        if ":" not in text[start:at] and (
            not schemeless
            or scheme.lower() in _AT_SCHEMES
            or _CAPABILITY_ID_RE.match(text, match.start("scheme")) is not None
        ):
            return text
        return _name_and_password(text, match.start("scheme"), start)
    end = _AUTHORITY_END_RE.search(text, start)
    authority_end = end.start() if end is not None else len(text)
    at = text.rfind("@", start, authority_end)
    if at < 0:
        # No "@" in the authority: a later "@" ends a password only if what a parser reads
        # as the authority is no host[:port] (``user:pa/ss@host`` has the "port" ``pa``).
        # A real port, or a ":" only after the authority (``host:8080/x@y``, ``host/?q=a:b@y``),
        # is a URL to that host, recorded as it is: the audit must name the host read.
        if text.find("@", authority_end) < 0 or _is_host_and_port(text[start:authority_end]):
            return text
        # Neither plainly a host nor plainly credentials (``intranet:8080/x@evil.example``,
        # ``admin:2024/Winter!@host``): both names kept, what may be a password not.
        at = text.rfind("@")
        name = text[start:authority_end].partition(":")[0]
        return f"{text[:start]}{name}:[redacted]@{text[at + 1 :]}"
    return text[:start] + text[at + 1 :]


def _name_and_password(text: str, name_start: int, start: int) -> str:
    """``text`` whose "scheme" (from ``name_start``, up to the ":" before ``start``) may be a
    user name, typed without a scheme (``user:pw@host/x``): what may be the password becomes
    ``[redacted]``, the name and what follows the "@" kept, as for an authority (the "@" is
    the last one before the first ``/ ? # \\``, else the last one, unless what stands before
    that character is a host and a port: ``example.org:8080/x@y`` is kept whole)."""
    end = _AUTHORITY_END_RE.search(text, start)
    authority_end = end.start() if end is not None else len(text)
    at = text.rfind("@", start, authority_end)
    if at < 0:
        if _is_host_and_port(text[name_start:authority_end]):
            return text
        at = text.rfind("@")
    return f"{text[:start]}[redacted]@{text[at + 1 :]}"


def _is_host_and_port(authority: str) -> bool:
    """Whether ``authority`` (no "@" in it) reads as a host a read could reach, with at most a
    port of digits: an IPv6 literal, or a name or address with a dot in it. ``admin:2024``
    (before ``/Winter!@host``) is a user and a password of digits more likely than a host
    named ``admin``: it is no host kept whole."""
    if authority.startswith("["):  # an IPv6 literal holds colons of its own
        authority = authority[authority.find("]") + 1 :] if "]" in authority else ":"
        host = "[::]"
    else:
        host = authority.partition(":")[0]
    _, colon, port = authority.partition(":")
    if colon and not (port.isascii() and port.isdigit()):
        return False
    return (
        not colon
        or host.startswith("[")
        or "." in host.strip(".")
        or host.lower() == "localhost"
        or _NUMBER_HOST.fullmatch(host) is not None  # 2130706433, 0x7f000001: addresses
    )


_NUMBER_HOST = re.compile(r"0x[0-9a-fA-F]+|[0-9]+")


# A word (after a space, a quote or "<", or at the start) that starts like a URL and holds an
# @; or one after a bracket, "=" or ",", with a host after its @: a library's exception text
# names a URL in parentheses or as ``url=...`` as often as after a space (a traceback's last
# line, see redact_traceback), and "(user:password@)" is a message's words, no URL.
# Each such word runs to the end of its run of non-blanks. They are found run by run, not by
# one pattern: a pattern tried each start in a run anew, each search for its "@" reading to
# the run's end ("=https:x" repeated: 0.45 s for 64 kB, quadratic), where one reading of the
# run tells every start whether an "@" (or an "@" before a host) follows its scheme.
_BLANK_FREE_RUN_RE = re.compile(r"\S+")
_URL_WORD_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_URL_WORD_AFTER_RE = re.compile(r"[(\[{=,'\"<]")  # where a word may start inside a run
_AT_HOST_RE = re.compile(r"@[\w\[]")


def _url_word_start(text: str, start: int, end: int) -> int:
    """Where the first word of the run ``text[start:end]`` that looks like a URL with an
    ``@`` starts (see above), or -1."""
    last_at = text.rfind("@", start, end)
    if last_at < 0:
        return -1
    last_at_host = -1
    for at in _AT_HOST_RE.finditer(text, start, end):
        last_at_host = at.start()
    after = _URL_WORD_AFTER_RE.finditer(text, start, end)
    for candidate, after_bracket in itertools.chain(
        [(start, False)], ((m.end(), m.group() in "([{=,") for m in after)
    ):
        if candidate >= last_at:
            return -1  # (no "@" after any later start either)
        scheme = _URL_WORD_SCHEME_RE.match(text, candidate, end)
        if scheme is not None and (last_at_host if after_bracket else last_at) >= scheme.end():
            return candidate
    return -1


def redact_urls(text: str, *, schemeless: bool = True) -> str:
    """``text`` with :func:`drop_userinfo` applied to every word that looks like a URL with
    an ``@`` (URLs in webward's messages hold no whitespace: the guard refuses it)."""
    if "@" in text:
        pieces: list[str] = []
        done = 0
        for run in _BLANK_FREE_RUN_RE.finditer(text):
            start, end = run.span()
            word = _url_word_start(text, start, end) if "@" in run.group() else -1
            if word >= 0:
                word_text = _drop_own_userinfo(text[word:end], schemeless=schemeless)
                pieces += (text[done:word], word_text)
                done = end
        text = "".join(pieces) + text[done:] if pieces else text
    # Nested URLs in the whole text once, the words' included (and one in percent escapes,
    # whose word has no "@").
    return _drop_nested_userinfo(text)


# Query parameters whose values are credentials (OpenTelemetry's list for url.full, and the
# usual API-key names): spans and the call log leave the process (a tracing backend, a log
# pipeline), so their values are REDACTED there. The audit record keeps the URL as read.
# Names are compared folded (:func:`_param_name`): in lower case, without "-", "_" or ".",
# so that accessToken, access-token and ACCESS_TOKEN are access_token.
_SECRET_PARAMS = frozenset(
    (
        "awsaccesskeyid", "signature", "sig", "xgoogsignature", "xgoogcredential",
        "xamzsignature", "xamzcredential", "xamzsecuritytoken", "apikey", "key",
        "token", "accesstoken", "auth", "password", "passwd", "pwd", "secret", "clientsecret",
        # Tokens that travel in URLs too: GitLab's API key, OpenID Connect's implicit-flow
        # callback (#id_token=), OAuth's refresh token and client assertion, and the like.
        "privatetoken", "idtoken", "refreshtoken", "authtoken", "sessiontoken",
        "clientassertion", "jwt", "accesskey", "secretkey",
        # API keys and tokens under the names many services give them (api_token, the
        # x-api-key header's name, Azure API Management's subscription-key), and a session
        # id in the URL (PHP's, Java's, Django's), which logs in whoever holds it.
        "apitoken", "xapikey", "apisecret", "subscriptionkey", "sessionid", "phpsessid",
        "jsessionid",
    )
)  # fmt: skip
# A pair's name starts after a "?", "&", "#" or "=": a search from every position of a run
# with no "=" read to the run's end from each (quadratic: 1.2 s for a query of 20,000 such
# characters), though a start inside the run finds no "=" its first did not.
_QUERY_PAIR = re.compile(r"(?<=[&=#?])([^&=#?]++)=([^&#]*+)")
_NAME_JOINS = str.maketrans("", "", "-_.")


def _param_name(name: str) -> str:
    """A query parameter's name as :data:`_SECRET_PARAMS` holds it: percent-decoded, in
    lower case, without "-", "_" or "." (``X-Amz-Signature``, ``accessToken``)."""
    return unquote(name).lower().translate(_NAME_JOINS)


# A pair of a URL given percent-encoded inside another's query or path (a viewer's
# ``?url=https%3A%2F%2Fbucket%2Fa.pdf%3FX-Amz-Signature%3D...``, a search provider's ``?q=``
# of a query naming a pre-signed URL), once or twice encoded: after an encoded "?", "&" or
# "#", its name, an encoded "=", and its value up to the next encoded "&" or "#" (or a plain
# one, a blank, the end). The name holds no "%", so each start is a short look.
_ENCODED_PAIR_RE = re.compile(
    r"(?<=%3F|%26|%23)([^&#%=\s]++)(%3D)([^&#\s]*?)(?=%26|%23|[&#\s]|$)"
    r"|(?<=%253F|%2526|%2523)([^&#%=\s]++)(%253D)([^&#\s]*?)(?=%2526|%2523|%26|%23|[&#\s]|$)",
    re.IGNORECASE,
)


def _redact_encoded_pairs(text: str) -> str:
    """``text`` with the secret values of percent-encoded pairs (:data:`_ENCODED_PAIR_RE`)
    REDACTED, in their spelling."""
    low = text.lower()
    if "%3d" not in low and "%253d" not in low:  # no encoded "=": no such pair
        return text

    def redact(pair: re.Match[str]) -> str:
        name, equals = pair.group(1, 2) if pair.group(1) is not None else pair.group(4, 5)
        if _param_name(unquote(name)) not in _SECRET_PARAMS:
            return pair.group()
        return f"{name}{equals}REDACTED"

    return _ENCODED_PAIR_RE.sub(redact, text)


# A path parameter whose name may be a secret's: ``/cart;jsessionid=...``, the session id a
# servlet container writes into every link for a client without cookies (the form it takes
# in a URL far more often than a query's ?jsessionid=). Its value ends at the next ";", "/",
# "?" or "#" (or what ends a URL in a message).
_PATH_PARAM_RE = re.compile(r";([^;=/?#&\s'\"<>]+)=([^;/?#&\s'\"<>]*)")


def _redact_path_params(text: str) -> str:
    """``text`` with the values of ``;name=value`` path parameters REDACTED where the name
    is a secret's (:data:`_SECRET_PARAMS`), the others kept."""
    if ";" not in text:  # nearly every URL: one look
        return text

    def redact(param: re.Match[str]) -> str:
        if _param_name(param.group(1)) not in _SECRET_PARAMS:
            return param.group()
        value = param.group(2)  # a sentence's punctuation after it stays (", then")
        return f";{param.group(1)}=REDACTED{value[len(value.rstrip(_TRAILING)) :]}"

    return _PATH_PARAM_RE.sub(redact, text)


def redact_secrets(url: str) -> str:
    """``url`` with no ``user:password@`` and secret query values REDACTED (a pre-signed
    URL a redirect led to: ``?X-Amz-Credential=...&X-Amz-Signature=...``), in the fragment
    too (an OAuth callback's ``#access_token=...``, which no server sees but a log shows)."""
    if "@" in url:
        try:
            parts = urlsplit(url)
            if parts.username is not None or parts.password is not None:
                url = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
            elif not parts.netloc:  # no authority to urllib (``user:pw@host/x``): by the text
                url = _drop_own_userinfo(url)
        except ValueError:  # no URL urlsplit reads (a bad port, a bracket): by the text
            url = _drop_own_userinfo(url)
    url = _drop_nested_userinfo(url)  # a URL in its path too (a proxy's /https://u:pw@host/)
    starts = [at for at in (url.find("?"), url.find("#")) if at >= 0]
    if not starts:
        # A proxy's /https%3A%2F%2Fhost%2Fx%3Ftoken%3D..., a servlet's /cart;jsessionid=...
        return _redact_encoded_pairs(_redact_path_params(url))
    # The path's "=" are no query pairs; its ";name=" parameters may be a session's.
    head, rest = _redact_path_params(url[: min(starts)]), url[min(starts) :]

    def redact(pair: re.Match[str]) -> str:
        name = _param_name(pair.group(1))
        return f"{pair.group(1)}=REDACTED" if name in _SECRET_PARAMS else pair.group()

    return _redact_encoded_pairs(head + _QUERY_PAIR.sub(redact, rest))


# A query or fragment pair in a message, wherever it stands: after a URL's "?", "&" or "#"
# (a URL with its scheme, or a path alone, as urllib3's "Max retries exceeded with url:
# /v1/traces?api_key=..." has it). Punctuation that ends the sentence after the value
# (``...?token=x, and``) is the message's, not the value's.
_MESSAGE_PAIR_RE = re.compile(r"([?&#])([^&=#?\s'\"<>]+)=([^&#\s'\"<>]*)")
_TRAILING = ",;.)"
# A libpq keyword DSN's password (``host=db user=webward password=... dbname=audit``, the
# value perhaps quoted: ``password='a b'``), as a driver's error or a traceback may echo a
# connection string: after a blank, a bracket, a quote, "," or ";" (never a URL's "?" or
# "&", whose pairs are the query's, above), its value whole, up to the blank that ends it.
# Unquoted, libpq reads a quote inside it and a backslash's escape as the password's own
# (password=ab'cd, password=a\\ b): only a blank ends it, quotes, brackets, "," and ";"
# just before that blank left to what it stood in (dsn='... password=pw', password=pw,).
_KEYWORD_PASSWORD_RE = re.compile(
    r"(?:^|(?<=[\s(\[{,;'\"]))((?:ssl)?password\s*=\s*)"
    r"(?:'(?:[^'\\]|\\.)*+'?|\"(?:[^\"\\]|\\.)*+\"?|(?P<bare>(?:\\.?|[^\s\\])++))",
    re.IGNORECASE,
)
_AFTER_BARE_VALUE = "'\")]},;"


def _redact_keyword_password(match: re.Match[str]) -> str:
    bare = match.group("bare")
    # (What closes the text around it stays: taken off after the match, as a lookahead for it
    # at each character of the value was quadratic in a run of them.)
    after = bare[len(bare.rstrip(_AFTER_BARE_VALUE)) :] if bare else ""
    return f"{match.group(1)}REDACTED{after}"


def redact_message(text: str, *, schemeless: bool = True) -> str:
    """``text`` (an error message, a library's log line) without credentials: no
    ``user:password@`` in a URL (:func:`redact_urls`), and the values of a keyword DSN's
    ``password=`` and of secret query and fragment parameters ``REDACTED`` as
    :func:`redact_secrets` has them, for what leaves the process (a span's status, a log
    line). A refusal's message names the URL asked and where it redirected, query tokens
    and all. ``schemeless`` as for :func:`drop_userinfo`."""
    text = redact_urls(text, schemeless=schemeless)
    if "=" not in text:
        # A URL given only percent-encoded (a proxy's path, a query an agent pasted) has no
        # plain "=", and its secret values were kept whole here.
        return _redact_encoded_pairs(text)
    if "password" in text.lower():
        text = _KEYWORD_PASSWORD_RE.sub(_redact_keyword_password, text)

    def redact(pair: re.Match[str]) -> str:
        if _param_name(pair.group(2)) not in _SECRET_PARAMS:
            return pair.group()
        value = pair.group(3)
        kept = value.rstrip(_TRAILING)
        return f"{pair.group(1)}{pair.group(2)}=REDACTED{value[len(kept) :]}"

    return _redact_encoded_pairs(_redact_path_params(_MESSAGE_PAIR_RE.sub(redact, text)))


def redact_traceback(exc: BaseException) -> str:
    """``exc``'s traceback as :func:`redact_message` has a message, for the log line of a bug
    at a face (MCP, the gateway, the agent tools): its text may name the URL being read,
    a redirect's credentials or a pre-signed query's signature included, and the server's log
    goes wherever the operator ships it."""
    return redact_message("".join(traceback.format_exception(exc)))
