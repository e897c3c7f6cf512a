"""No secrets in the audit (issue 12, item 8): credentials in a URL never reach a record,
whatever their characters and however the URL is spelled."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from localserver import accept_counter, redirect, serve
from test_audit_always import STORES, settings_for, store

from webward import Settings, StaticResolver, Web
from webward._errors import WebwardError
from webward._redact import (
    _SECRET_PARAMS,
    _drop_nested_userinfo,
    _param_name,
    drop_userinfo,
    redact_message,
    redact_secrets,
    redact_urls,
)
from webward.agents import ToolContext, execute_tool
from webward.audit import AuditRecord
from webward.guard import assert_url_allowed
from webward.testing import MemoryAuditSink

# Spellings of a URL with credentials that parsers (WHATWG, urllib, curl) read differently.
LEADS = ["", " ", "  ", "\t", "\n ", "\x00", "\x1f "]
SCHEMES = ["https", "http", "HTTPS", "ftp"]
SLASHES = ["//", "", "/", "///", "\\\\", "/\\"]
PASSWORD_CHARS = "abcXYZ0189@/?#:;&=+$,%!*'()[]\\ ~-_."


def record_text(target: str) -> str:
    r = AuditRecord.create(
        decision="refused",
        reason="userinfo",
        target=target,
        final_url=target,
        redirects=(target,),
    )
    return json.dumps(r.to_wire(), ensure_ascii=False)


@given(
    lead=st.sampled_from(LEADS),
    scheme=st.sampled_from(SCHEMES),
    slashes=st.sampled_from(SLASHES),
    user=st.text("userABC", max_size=6),
    password=st.text(PASSWORD_CHARS, min_size=1, max_size=24),
    host=st.sampled_from(["example.org", "127.0.0.1:8080", "[::1]", "h"]),
    rest=st.sampled_from(["", "/", "/path?q=1#f", "/@me", "?mail=a@b.org", "#x@y"]),
)
def test_no_spelling_of_credentials_reaches_a_record(
    lead: str, scheme: str, slashes: str, user: str, password: str, host: str, rest: str
) -> None:
    """Whatever the password holds (``@ / ? # :``), with or without ``//`` and leading
    whitespace, the record's target, final URL and redirects never carry it."""
    secret = "Zq" + password  # "Zq" appears nowhere else in the URL
    url = f"{lead}{scheme}:{slashes}{user}:{secret}@{host}{rest}"
    assert secret not in record_text(url)


@given(
    lead=st.sampled_from(LEADS),
    scheme=st.sampled_from(SCHEMES),
    slashes=st.sampled_from(SLASHES),
    password=st.text(PASSWORD_CHARS, min_size=1, max_size=24),
    rest=st.sampled_from(["", "/", "/@me", "?mail=a@b.org"]),
)
def test_no_refusal_message_echoes_the_password(
    lead: str, scheme: str, slashes: str, password: str, rest: str
) -> None:
    """The guard's messages (which reach the agent loop's log lines) never carry it either."""
    secret = "Zq" + password
    with pytest.raises(WebwardError) as info:
        assert_url_allowed(f"{lead}{scheme}:{slashes}user:{secret}@example.org{rest}")
    assert secret not in info.value.message


@given(
    digits=st.text("0123456789", min_size=1, max_size=6),
    rest=st.text(PASSWORD_CHARS, min_size=1, max_size=12),
    cut=st.sampled_from(["/", "?", "#", "\\"]),
    slashes=st.sampled_from(["//", "/"]),
)
def test_a_password_that_starts_with_digits_is_no_port(
    digits: str, rest: str, cut: str, slashes: str
) -> None:
    """``admin:2024/Winter!@host`` reads as host "admin" port 2024 to a parser, but a host
    with no dot is no host a read could reach: the text is taken for credentials and never
    recorded (``127.0.0.1:8080/x@elsewhere`` is a host and stays whole)."""
    secret = digits + cut + "Zq" + rest
    text = record_text(f"http:{slashes}admin:{secret}@127.0.0.1:18931/")
    assert "Zq" not in text and "127.0.0.1:18931" in text


def test_a_url_neither_plainly_a_host_nor_plainly_credentials_keeps_both_names() -> None:
    """``intranet:8080/x@evil.example`` could be a host and a path or a user and a password:
    the record names both, and not what may be a password; an address written as a number
    or localhost, with a port, is a host kept whole."""
    r = AuditRecord.create(
        decision="refused", reason="x", target="http://intranet:8080/x@evil.example/"
    )
    assert r.target == "http://intranet:[redacted]@evil.example/"
    for url in ("http://2130706433:19031/r?by=@alice", "http://localhost:19031/r?by=@alice"):
        assert AuditRecord.create(decision="refused", reason="x", target=url).target == url


@given(password=st.text(PASSWORD_CHARS, min_size=1, max_size=24))
def test_a_username_alone_or_a_token_is_dropped_too(password: str) -> None:
    """``https://TOKEN@host`` (a token as user name) leaves no trace either."""
    secret = "Zq" + password.replace("/", "").replace("?", "").replace("#", "").replace("\\", "")
    assert secret not in record_text(f"https://{secret}@example.org/x")


@pytest.mark.parametrize(
    "url",
    [
        "https://example.org/@someone",
        "https://example.org/?mail=a@b.org",
        "https://example.org/#top@x",
        "https://example.org:8443/a",
        # A ":" of a port or a query before a later "@" is no password: recorded otherwise,
        # these would name docs.python.org as the host read (an exfiltration hidden).
        "http://127.0.0.1:18080/x@docs.python.org/3/",
        "http://127.0.0.1:18080/x?q=a:b@docs.python.org/3/",
        "https://attacker.example/c?d=SECRET:1@docs.python.org/3/",
        "http://[::1]:8080/a:b@docs.python.org/",
        "http://127.0.0.2:18999#@127.0.0.1:18080/",
    ],
)
def test_urls_without_credentials_are_recorded_as_they_are(url: str) -> None:
    """An ``@`` in a path, query or fragment is not a credential: the URL stays whole, in the
    record and in a refusal's message."""
    r = AuditRecord.create(decision="allowed", reason="allowed", target=url, final_url=url)
    assert (r.target, r.final_url) == (url, url)
    assert (
        WebwardError(f"refused: {url} points elsewhere").message
        == f"refused: {url} points elsewhere"
    )


def test_a_capability_id_in_a_message_is_not_taken_for_credentials() -> None:
    """Only http(s), ws(s), ftp and file read an authority without "//": a capability's id
    (``web:page.fetch@1``) or a ``mailto:`` in an error message stays whole, while such a
    text with a ":" before its "@" (a password, perhaps) still loses it."""
    for capability in ("web:page.fetch@1", "web:search.query@1"):
        message = f"unknown field 'bogus'; {capability} takes url and offset"
        assert WebwardError(message).message == message
    assert WebwardError("write to mailto:a@b.org").message == "write to mailto:a@b.org"
    assert "Zq" not in WebwardError("read gopher:user:Zq-pw@example.org").message


@given(
    name=st.sampled_from(["user", "alice", "git", "admin", "deploy.bot", "web"]),
    password=st.text(PASSWORD_CHARS, min_size=1, max_size=24),
    host=st.sampled_from(["example.org", "127.0.0.1:8080", "h", "[::1]"]),
    rest=st.sampled_from(["", "/", "/x", "/x@y", "?q=1"]),
)
def test_a_url_typed_without_its_scheme_keeps_no_password(
    name: str, password: str, host: str, rest: str
) -> None:
    """``user:pw@host/x`` (a URL without its scheme, which the guard refuses for the scheme
    ``user:``) reads as scheme ``user`` and path ``pw@host/x``, but the text before the "@"
    may be a password: the record, a span's URL and a message name the user and the host,
    never it."""
    secret = "Zq" + password
    url = f"{name}:{secret}@{host}{rest}"
    assert secret not in record_text(url)
    assert secret not in redact_secrets(url)
    with pytest.raises(WebwardError) as info:
        assert_url_allowed(url)
    assert secret not in info.value.message


def test_a_scheme_that_holds_an_at_of_its_own_is_kept_whole() -> None:
    """The rule for ``user:pw@host``: a scheme whose own syntax has an "@" (``mailto:``,
    ``sip:``, ``xmpp:``; webward's capability ids) keeps it; any other, before text with an
    "@", is a user name before a password; a host with a port stays a host."""
    kept = ["mailto:a@b.org", "sip:alice@example.org", "xmpp:bob@example.org/phone"]
    kept += ["web:page.fetch@1", "example.org:8080/x@y", "localhost:8080/@me"]
    for text in kept:
        assert drop_userinfo(text) == text, text
    assert drop_userinfo("user:pw@example.org/x") == "user:[redacted]@example.org/x"
    assert drop_userinfo("git:pw@example.org") == "git:[redacted]@example.org"


SPELLINGS = [
    "https://user:Zq-p@ss@example.org/",
    "https://user:Zq-p/ss@example.org/",
    "https://user:Zq-p?ss@example.org/",
    "https://user:Zq-p#ss@example.org/",
    "https:user:Zq-pass@example.org/",
    "  https://user:Zq-pass@example.org/",
    "https:\\\\user:Zq-pass@example.org/",
    # Typed without a scheme: the "scheme" is the user name.
    "user:Zq-pass@example.org/x",
    "alice:Zq-p/ss@example.org/x",
]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", STORES)
async def test_no_store_and_no_log_line_holds_the_password(
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Reads of URLs with credentials in every spelling: refused, audited, and no store
    (memory, SQLite, PostgreSQL) nor any log line holds the password."""
    with caplog.at_level(logging.DEBUG):
        async with store(kind, tmp_path, request) as sink:
            async with Web(settings_for(tmp_path), audit=sink) as web:
                for url in SPELLINGS:
                    with pytest.raises(WebwardError) as info:
                        await web.fetch(url)
                    assert "Zq-p" not in info.value.message
            records = await sink.query(limit=100)
    assert len(records) == len(SPELLINGS)
    stored = json.dumps([r.to_wire() for r in records])
    assert "Zq-p" not in stored
    assert "Zq-p" not in caplog.text
    assert "example.org" in stored  # the host stays, for whoever reads the log


@pytest.mark.anyio
async def test_the_agent_tool_log_line_of_a_bug_drops_url_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An unexpected exception whose text holds a URL with credentials is logged without them."""

    class LeakyWeb:
        async def fetch(self, url: str, **kwargs: object) -> None:
            raise RuntimeError(f"could not read {url}")

        async def search(self, query: str, **kwargs: object) -> None:
            raise AssertionError("not called")

    url = "https://user:Zq-p/ss@example.org/x"
    with caplog.at_level(logging.ERROR, logger="webward.agents"):
        result = await execute_tool("web_fetch", {"url": url}, ToolContext(LeakyWeb(), "a"))
    assert result.is_error
    assert "could not read https://" in caplog.text and "Zq-p" not in caplog.text


@pytest.mark.anyio
async def test_a_redirect_s_credentials_reach_no_message_record_or_log_line(
    tmp_path: Path,
) -> None:
    """A Location whose password urllib reads as a path (``http:\\\\user:pw@host``, an
    authority to WHATWG and to the guard, which refuses it) or whose password holds a "/"
    (``http://user:pw/x@host``, no usable URL) is named in the message and recorded without
    it; the refused hop sends nothing."""
    with accept_counter("127.0.0.2") as elsewhere, serve() as site:
        site.routes["/backslashes"] = redirect("http:\\\\user:Zq-10@elsewhere.example/")
        site.routes["/slash"] = redirect("http://user:Zq-7/x@127.0.0.2/")
        resolver = StaticResolver({"elsewhere.example": ["127.0.0.2"]})
        sink = MemoryAuditSink()
        async with Web(settings_for(tmp_path), resolver, audit=sink) as web:
            for path in ("/backslashes", "/slash"):
                with pytest.raises(WebwardError) as info:
                    await web.fetch(site.url(path))
                assert "Zq" not in info.value.message
                assert "Zq" not in info.value.for_model
        records = await sink.query(limit=10)
    assert len(records) == 2
    assert not any("Zq" in r.to_json_line() or "Zq" in str(r.to_wire()) for r in records)
    assert elsewhere.accepts == 0


def test_a_search_query_is_no_url_typed_without_its_scheme() -> None:
    """A query is free text: ``nginx:1.25@sha256:...`` (an image pinned by digest) and
    ``re:lunch@noon`` are recorded as asked, not as a user name before a password; a URL with
    credentials in a query still loses them."""
    for query in ("nginx:1.25@sha256:0f3c", "re:lunch@noon", "mailto:a@b.org"):
        record = AuditRecord.create(
            decision="refused", reason="x", capability="web:search.query@1", target=query
        )
        assert record.target == query
    record = AuditRecord.create(
        decision="refused",
        reason="x",
        capability="web:search.query@1",
        target="who owns https://user:Zq-pw@example.org/x",
    )
    assert "Zq" not in record.target


@pytest.mark.anyio
async def test_a_url_given_as_no_string_leaves_no_password_in_the_record() -> None:
    """A client that sends the URL inside a list or an object is refused (``url must be a
    string``) and the call recorded with what it sent, as its repr: the URL in it loses its
    credentials there as a URL given as a string does."""
    audit = MemoryAuditSink()
    async with Web(Settings(), StaticResolver({}), audit=audit) as web:
        for given in ({"u": "https://user:Zq-1@example.org/"}, ["https://user:Zq-2@example.org/"]):
            with pytest.raises(WebwardError, match="url must be a string"):
                await web.fetch(given)  # type: ignore[arg-type]
    assert len(audit.records) == 2
    assert all("example.org" in r.target and "Zq" not in r.target for r in audit.records)
    assert not any("Zq" in r.to_json_line() for r in audit.records)


@given(
    name=st.sampled_from(["10.0.0.1", "42", "0day", "_svc"]),
    password=st.text(PASSWORD_CHARS.replace(" ", ""), min_size=1, max_size=24),
    rest=st.sampled_from(["", "/", "/x", "?q=1"]),
)
def test_a_user_name_that_starts_with_no_letter_keeps_no_password(
    name: str, password: str, rest: str
) -> None:
    """``10.0.0.1:pw@host`` or ``42:pw@host`` has no scheme-like word at all: still a URL
    typed without its scheme, recorded without the password; a host and a port
    (``127.0.0.1:8080/x@y``) stays whole."""
    secret = "Zq" + password
    assert secret not in record_text(f"{name}:{secret}@example.org{rest}")
    assert drop_userinfo("127.0.0.1:8080/x@y") == "127.0.0.1:8080/x@y"
    # A password with a ":" of its own: what follows the name's ":" reads as a scheme.
    assert drop_userinfo("42:Zq:@example.org/x") == "42:[redacted]@example.org/x"


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        (
            "https://example.org/go?to=https://user:Zq-pw@inner.example/x",
            "https://example.org/go?to=https://inner.example/x",
        ),
        (  # the same in percent escapes, as a login page's ?next= carries it
            "https://example.org/go?a=1&to=https%3A%2F%2Fuser%3AZq-pw%40inner.example%2Fx",
            "https://example.org/go?a=1&to=https%3A%2F%2Finner.example%2Fx",
        ),
        (
            "https://example.org/go#next=//user:Zq-pw@inner.example/",
            "https://example.org/go#next=//inner.example/",
        ),
        (
            "https://user:Zq-pw@example.org/go?to=ftp://Zq-pw@inner.example/",
            "https://example.org/go?to=ftp://inner.example/",
        ),
        (  # escapes of escapes: a redirect carried through two sign-ins
            "https://example.org/go?to=https%253A%252F%252Fuser%253AZq-pw%2540inner.example%252F",
            "https://example.org/go?to=https%253A%252F%252Finner.example%252F",
        ),
        (  # Python's quote() keeps the "/": "https%3A//"
            "https://example.org/go?to=https%3A//user%3AZq-pw%40inner.example/x",
            "https://example.org/go?to=https%3A//inner.example/x",
        ),
        (  # a URL given in a URL given in the query: its own escapes are escaped again
            "https://example.org/go?to=https%3A%2F%2Fa.example%2Fsso%3Fnext%3D"
            "https%253A%252F%252Fuser%253AZq-pw%2540inner.example",
            "https://example.org/go?to=https%3A%2F%2Fa.example%2Fsso%3Fnext%3D"
            "https%253A%252F%252Finner.example",
        ),
        (  # a base64 password, which ends in "="
            "https://example.org/go?to=https://user:Zq-pw==@inner.example/",
            "https://example.org/go?to=https://inner.example/",
        ),
        (  # a password holding "@" (WHATWG reads the last one) or an escaped "/" or "@"
            "https://example.org/go?to=https://user:Zq@pw@inner.example/",
            "https://example.org/go?to=https://inner.example/",
        ),
        (
            "https://example.org/go?to=https://user:Zq%2Fpw%40x@inner.example/",
            "https://example.org/go?to=https://inner.example/",
        ),
        (  # a proxy's or an archive's path, and a path parameter
            "https://example.org/web/2020/https://user:Zq-pw@inner.example/x",
            "https://example.org/web/2020/https://inner.example/x",
        ),
        (
            "https://example.org/go;to=https://user:Zq-pw@inner.example/x",
            "https://example.org/go;to=https://inner.example/x",
        ),
        # A special scheme's authority after backslashes, or no slash at all, as WHATWG and
        # browsers read it (a login page's redirect goes to https://inner.example as user).
        (
            "https://example.org/go?to=https:\\\\user:Zq-pw@inner.example/x",
            "https://example.org/go?to=https:\\\\inner.example/x",
        ),
        (
            "https://example.org/go?to=https:/\\user:Zq-pw@inner.example/x",
            "https://example.org/go?to=https:/\\inner.example/x",
        ),
        (
            "https://example.org/go?to=https:user:Zq-pw@inner.example/x",
            "https://example.org/go?to=https:inner.example/x",
        ),
        (
            "https://example.org/go?to=https:/user:Zq-pw@inner.example/x",
            "https://example.org/go?to=https:/inner.example/x",
        ),
        (
            "https://example.org/go?to=https%3Auser%3AZq-pw%40inner.example%2Fx",
            "https://example.org/go?to=https%3Ainner.example%2Fx",
        ),
        (
            "https://example.org/go?to=https%253A%252Fuser%253AZq-pw%2540inner.example",
            "https://example.org/go?to=https%253A%252Finner.example",
        ),
        (
            "https://example.org/go?to=https%3A%5C%5Cuser%3AZq-pw%40inner.example%2Fx",
            "https://example.org/go?to=https%3A%5C%5Cinner.example%2Fx",
        ),
        (
            "https://example.org/go?to=https%253A%255C%255Cuser%253AZq-pw%2540inner.example",
            "https://example.org/go?to=https%253A%255C%255Cinner.example",
        ),
        # In a value's list or quoted string, or after a word: a JSON list in a query.
        (
            'https://example.org/go?urls=["https://user:Zq-pw@inner.example/"]',
            'https://example.org/go?urls=["https://inner.example/"]',
        ),
        (
            "https://example.org/go?urls=%5B%22https%3A%2F%2Fuser%3AZq-pw%40inner.example%22%5D",
            "https://example.org/go?urls=%5B%22https%3A%2F%2Finner.example%22%5D",
        ),
        (
            "https://example.org/go?q=see%20https://user:Zq-pw@inner.example/x",
            "https://example.org/go?q=see%20https://inner.example/x",
        ),
        (
            "https://example.org/go?q=a|https%3A%2F%2Fuser%3AZq-pw%40inner.example",
            "https://example.org/go?q=a|https%3A%2F%2Finner.example",
        ),
    ],
)
def test_a_url_given_in_a_query_keeps_no_password_anywhere(url: str, kept: str) -> None:
    """A URL given as another's query or fragment value keeps its credentials out of the
    record, the caller's message, spans and the call log (redact_secrets) and log lines
    (redact_message), as the URL's own are: its password was kept in all of them."""
    assert "Zq" not in record_text(url)
    assert AuditRecord.create(decision="allowed", reason="allowed", target=url).target == kept
    message = WebwardError(f"refused: could not read {url}, it timed out").message
    assert message == f"refused: could not read {kept}, it timed out"
    assert redact_secrets(url) == kept
    assert redact_message(f"GET {url} failed") == f"GET {kept} failed"


@pytest.mark.parametrize(
    "url",
    [
        "https://example.org/a?next=https://inner.example/?email=a@b.example",
        "https://example.org/users/@bob?x=//y",
        "https://example.org:8443/p@v?to=https%3A%2F%2Finner.example%2Fp%40v",
        "https://example.org/web/2020/https://inner.example/@bob",
        # An escaped "?" or "#" ends the nested URL's authority as "/" does: its query's "@"
        # made it read "https://b.example", a host the URL does not name.
        "https://example.org/l?next=https%3A%2F%2Fh2.example%3Femail%3Da%40b.example",
        "https://example.org/l?next=https%3A%2F%2Fh2.example%23a%40b.example",
        "https://example.org/l?next=https%253A%252F%252Fh2.example%253Fe%253Da%2540b.example",
        # the same after backslashes or no slash at all
        "https://example.org/l?next=https:h2.example/?email=a@b.example",
        "https://example.org/l?next=https:\\\\h2.example\\a@b.example",
        "https://example.org/l?next=https%3A%5C%5Ch2.example%3Femail%3Da%40b.example",
        "https://example.org/l?next=https%3Ah2.example%3Femail%3Da%40b.example",
        "https://example.org/l?next=https:/h2.example/a@b.example",
        "https://example.org/l?next=https%253Ah2.example%252Fa%2540b.example",
    ],
)
def test_a_url_given_in_a_query_without_credentials_is_kept(url: str) -> None:
    """Only a nested URL's user information goes: the host read, and a nested URL's path or
    query holding an "@", are recorded as they are."""
    assert drop_userinfo(url) == url
    assert redact_secrets(url) == url
    assert redact_message(f"GET {url} failed") == f"GET {url} failed"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "connection failed: host=db user=webward password=Zq-pw sslmode=require",
            "connection failed: host=db user=webward password=REDACTED sslmode=require",
        ),
        ("conninfo('host=db PASSWORD = Zq-pw')", "conninfo('host=db PASSWORD = REDACTED')"),
        ("dsn: password='Zq pw\\' pw' port=5432", "dsn: password=REDACTED port=5432"),
        ("sslpassword=Zq-pw", "sslpassword=REDACTED"),
        # unquoted, a quote or an escaped blank is the password's own, as libpq reads it
        ("host=db password=Zq'pw dbname=audit", "host=db password=REDACTED dbname=audit"),
        ('host=db password=Zq"pw dbname=audit', "host=db password=REDACTED dbname=audit"),
        ("host=db password=Zq\\ pw dbname=audit", "host=db password=REDACTED dbname=audit"),
        ('connect(password="Zq pw", host="db")', 'connect(password=REDACTED, host="db")'),
        ("(password=Zq-pw)", "(password=REDACTED)"),
        # a query's pair is the query's: its value ends at the "&"
        ("GET /x?password=Zq-pw&page=2 failed", "GET /x?password=REDACTED&page=2 failed"),
    ],
)
def test_a_keyword_dsns_password_is_redacted_from_messages(text: str, kept: str) -> None:
    """A driver's error or a traceback that echoes libpq's keyword DSN keeps no password in a
    log line or a span."""
    assert redact_message(text) == kept


# The pattern redact_urls took each word with, kept as the property test's oracle: the words
# it finds are the same, found without its quadratic retries.
_URL_WORD_PATTERN = re.compile(
    r"(?:(?<=[\s'\"<])|^)[A-Za-z][A-Za-z0-9+.\-]*:\S*@\S*"
    r"|(?<=[(\[{=,])[A-Za-z][A-Za-z0-9+.\-]*:\S*@[\w\[]\S*"
)


@given(
    st.lists(
        st.sampled_from(
            [
                "https:",
                "h",
                "x:",
                "//",
                "u:pw",
                "@",
                "@h.example",
                "@[::1]",
                "@ ",
                "=",
                ",",
                "(",
                "[",
                "{",
                "'",
                '"',
                "<",
                " ",
                "\n",
                "\u00a0",
                "/",
                "?q=",
                "é",
                "9",
                "+.-",
                ":",
            ]
        ),
        max_size=24,
    ).map("".join)
)
def test_redact_urls_finds_the_words_its_pattern_found(text: str) -> None:
    """redact_urls finds its words run by run (a pattern retried every start of a long run:
    quadratic); it drops the user information of the same words as that pattern."""
    expected = _drop_nested_userinfo(
        _URL_WORD_PATTERN.sub(lambda m: drop_userinfo(m.group()), text)
    )
    assert redact_urls(text) == expected


@pytest.mark.parametrize("unit", ["a+", "a.", "a-", "a|", "a ", "[a", "'a", "%7Ca", "a%20"])
def test_a_run_of_scheme_characters_after_separators_is_read_once(unit: str) -> None:
    """A nested URL is looked for after "[", a quote, "|", "<" or a blank, never after a
    character a scheme may hold: with "+" among them, each "+" of "a+a+a+..." started a
    scheme that read the rest of the run (100 s for 100 kB; a guard for the time, which no
    assertion measures)."""
    text = unit * 50_000 + "@"
    assert redact_message(text) == text and drop_userinfo(text) == text


def test_a_long_run_of_would_be_urls_is_read_once() -> None:
    """A run of "(https:x" with an "@" only at its end, which no host follows: no word is a
    URL with credentials, and no start is read to the run's end again (the pattern took
    about 3 s for this text, quadratic in it: a guard for the time, which no assertion
    measures)."""
    text = "(https:x" * 20_000 + "@"
    assert redact_message(text) == text


# The pattern redact_secrets read a query's pairs with, kept as the property test's oracle.
_QUERY_PAIR_PATTERN = re.compile(r"([^&=#?]+)=([^&#]*)")


@given(
    st.lists(
        st.sampled_from(
            ["?", "#", "&", "=", "==", "a", "token", "sig", "Zq", ";", " ", "%3D", "é"]
        ),
        max_size=16,
    ).map("".join)
)
def test_redact_secrets_reads_the_pairs_its_pattern_read(query: str) -> None:
    """redact_secrets starts a pair's name only after "?", "&", "#" or "=" (a search from
    every position was quadratic in a run without "="): the same pairs redacted."""
    url = f"https://example.org/p?{query}"

    def redact(pair: re.Match[str]) -> str:
        secret = _param_name(pair.group(1)) in _SECRET_PARAMS
        return f"{pair.group(1)}=REDACTED" if secret else pair.group()

    assert redact_secrets(url) == "https://example.org/p" + _QUERY_PAIR_PATTERN.sub(
        redact, url[len("https://example.org/p") :]
    )


def test_a_long_query_without_pairs_is_read_once() -> None:
    """A query of 20,000 characters with no "=": kept as it is, each start not read to its
    end again (the pattern took about 1.2 s, quadratic in it: a guard for the time, which no
    assertion measures)."""
    url = "https://example.org/p?" + "x" * 20_000
    assert redact_secrets(url) == url
