"""The HTTP gateway, driven over real HTTP against uvicorn on loopback."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import logging
import socket
import struct
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import uvicorn
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from localserver import accept_counter, drip, held, respond, serve

import webward._serving
from webward import Settings, StaticResolver, Web
from webward._credentials import EnvironmentStore
from webward._errors import InvalidInput
from webward._gateway import (
    FETCH_PATH,
    SEARCH_PATH,
    STATUS_FOR_CODE,
    TokenTable,
    _parse_json,
    address_url,
    bind_socket,
    create_app,
    hash_token,
    openapi_document,
)
from webward._serving import Stack, fastest_stack, http_protocol
from webward.audit import SQLiteAuditSink
from webward.cli import main
from webward.testing import MemoryAuditSink

TOKENS = {"alice": "alice-secret-token", "bob": "bob-secret-token", "dave": "dave-secret-token"}
TIERS = {"alice": "connected", "bob": "as-owner", "dave": "full"}


def write_config(
    tmp_path: Path, *, limits: dict[str, Any] | None = None, agents: bool = True
) -> Path:
    """A config for loopback tests: 127.0.0.1 allowed, robots off, three agents with tokens."""
    lines = [
        "[network]",
        'allow_ranges = ["127.0.0.1/32"]',
        "[policy]",
        'default_tier = "as-owner"',
        "robots = false",
        "[state]",
        f"dir = {json.dumps(str(tmp_path / 'state'))}",
        "[limits]",
        "per_host_rate = 1000.0",
        "per_host_burst = 1000",
    ]
    for key, value in (limits or {}).items():
        lines = [line for line in lines if not line.startswith(f"{key} =")]
        lines.append(f"{key} = {json.dumps(value)}")
    if agents:
        for name, token in TOKENS.items():
            lines += [
                f"[agents.{name}]",
                f'tier = "{TIERS[name]}"',
                f'token_sha256 = "{hash_token(token)}"',
            ]
        lines += ["[agents.carol]", 'tier = "full"']  # no token: not a gateway agent
    path = tmp_path / "webward.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def load(tmp_path: Path, **kwargs: Any) -> Settings:
    return Settings.load(write_config(tmp_path, **kwargs), environ={})


def loopback_web(settings: Settings, audit: MemoryAuditSink) -> Web:
    """A Web that resolves no names, keeps its audit in memory and knows no search keys."""
    return Web(settings, resolver=StaticResolver({}), audit=audit, credentials=EnvironmentStore({}))


@contextmanager
def running_gateway(
    settings: Settings,
    make_web: Callable[[], Web],
    *,
    http: str | None = None,
    loops: list[asyncio.AbstractEventLoop] | None = None,
) -> Iterator[str]:
    """Run ``create_app(settings, make_web())`` under uvicorn in a thread; yield its base URL.

    The socket listens before the thread starts, so requests made at once queue in the backlog
    until uvicorn accepts them: no waiting for readiness. ``http``: uvicorn's protocol
    (``h11`` or ``httptools``; default as `webward serve` picks it); ``loops`` is handed the
    server's event loop.
    """
    sock = bind_socket("127.0.0.1", 0)
    base = address_url(sock)
    servers: list[uvicorn.Server] = []
    created = threading.Event()
    failure: list[BaseException] = []

    stack = fastest_stack()  # as `webward serve` runs it
    if http is not None:
        stack = Stack(http, stack.loop)

    async def run() -> None:
        if loops is not None:
            loops.append(asyncio.get_running_loop())
        async with make_web() as web:
            config = uvicorn.Config(
                create_app(settings, web),
                log_level="warning",
                lifespan="on",
                ws="none",
                proxy_headers=False,
                http=http_protocol(stack),
            )
            server = uvicorn.Server(config)
            servers.append(server)
            created.set()
            await server.serve(sockets=[sock])

    def target() -> None:
        try:
            asyncio.run(run())
        except BaseException as exc:  # surfaced to the test below
            failure.append(exc)
        finally:
            created.set()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    created.wait(10)
    try:
        yield base
    finally:
        if servers:
            servers[0].should_exit = True
        thread.join(15)
        sock.close()
    if failure:
        raise failure[0]


def auth(agent: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[agent]}"}


PAGE = "<html><head><title>Gateway page</title></head><body><h1>Hello</h1><p>{}</p></body></html>"


@pytest.fixture
def site() -> Iterator[Any]:
    with serve(
        routes={"*": lambda req, sock: respond(200, PAGE.format(req.path))(req, sock)}
    ) as server:
        yield server


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[str, MemoryAuditSink]]:
    settings = load(tmp_path)
    audit = MemoryAuditSink()
    with running_gateway(settings, lambda: loopback_web(settings, audit)) as base:
        yield base, audit


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False, timeout=20) as c:
        yield c


def assert_error(response: httpx.Response, status: int, code: str) -> str:
    """The response is the error model with this status and code; returns the message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    message: str = body["error"]["message"]
    assert message and "\n" not in message
    return message


# ---- success and auth ------------------------------------------------------------------


@pytest.mark.anyio
async def test_fetch_returns_the_page_wire_model(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """A connected agent's fetch gets 200 and the camelCase page model, audited as that agent."""
    base, audit = gateway
    r = await client.post(
        base + FETCH_PATH,
        json={"url": site.url("/one"), "includeLinks": True},
        headers=auth("alice"),
    )
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["requestedUrl"] == site.url("/one")
    assert page["finalUrl"] == site.url("/one")
    assert page["classification"] == "untrusted-external"
    assert page["title"] == "Gateway page"
    assert "/one" in page["content"] and "untrusted-web-content" in page["content"]
    assert page["window"]["offset"] == 0 and page["window"]["nextOffset"] is None
    assert isinstance(page["links"], list)
    assert r.headers["cache-control"] == "no-store"
    assert [(rec.agent, rec.tier, rec.decision) for rec in audit.records] == [
        ("alice", "connected", "allowed")
    ]


@pytest.mark.anyio
async def test_fetch_takes_max_chars_and_query(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """maxChars gives a smaller window with exact offsets and a token estimate; query gives
    the matching passages; a maxChars over the window is 400 in one sentence."""
    base, _ = gateway
    small = await client.post(
        base + FETCH_PATH, json={"url": site.url("/two"), "maxChars": 4}, headers=auth("alice")
    )
    assert small.status_code == 200, small.text
    window = small.json()["window"]
    assert (window["offset"], window["end"], window["nextOffset"]) == (0, 4, 4)
    assert small.json()["approxTokens"] > 0
    found = await client.post(
        base + FETCH_PATH, json={"url": site.url("/two"), "query": "two"}, headers=auth("alice")
    )
    assert found.status_code == 200, found.text
    assert found.json()["passages"][0]["offset"] == found.json()["window"]["nextOffset"]
    too_big = await client.post(
        base + FETCH_PATH, json={"url": site.url("/two"), "maxChars": 40_001}, headers=auth("alice")
    )
    assert assert_error(too_big, 400, "invalid_input") == (
        "maxChars must be a whole number from 1 to 40000"
    )


@pytest.mark.anyio
async def test_fetch_takes_max_age(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """maxAge reaches the core: a young reading comes from the cache, 0 asks the site again,
    and a bad value is 400 in one sentence before any request."""
    base, _ = gateway
    url = site.url("/two")

    def reads() -> int:
        return [r.path for r in site.requests].count("/two")

    first = await client.post(base + FETCH_PATH, json={"url": url}, headers=auth("alice"))
    assert first.status_code == 200, first.text
    before = reads()
    cached = await client.post(
        base + FETCH_PATH, json={"url": url, "maxAge": 600}, headers=auth("alice")
    )
    assert cached.status_code == 200 and reads() == before
    fresh = await client.post(
        base + FETCH_PATH, json={"url": url, "maxAge": 0}, headers=auth("alice")
    )
    assert fresh.status_code == 200 and reads() == before + 1
    for bad in (-1, "60", 2.5, 31_536_001):
        r = await client.post(
            base + FETCH_PATH, json={"url": url, "maxAge": bad}, headers=auth("alice")
        )
        # The wire's type check names maxAge; the core's range check names max_age.
        assert assert_error(r, 400, "invalid_input").replace("maxAge", "max_age") == (
            "max_age must be a whole number of seconds from 0 to 31536000"
        )
    assert reads() == before + 1


@pytest.mark.anyio
async def test_missing_and_unknown_tokens_get_401(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """No token, another scheme or an unknown token: 401 with WWW-Authenticate, no audit."""
    base, audit = gateway
    body = {"url": site.url("/x")}
    for headers in (
        {},
        {"Authorization": "Basic YWxpY2U6eA=="},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-known-token"},
        {"Authorization": f"Bearer {TOKENS['alice']}x"},
    ):
        r = await client.post(base + FETCH_PATH, json=body, headers=headers)
        assert_error(r, 401, "refused")
        assert r.headers["www-authenticate"].startswith("Bearer")
    assert audit.records == []
    assert site.requests == []


@pytest.mark.anyio
async def test_a_header_of_one_value_sent_twice_is_400(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """Two Authorization headers (a proxy's token added to the client's): whose call is it?
    400 before either is looked up, unaudited as an unknown token is, and the page is not
    read. Two Content-Type or Webward-Session headers: 400 too, audited as the agent's call
    (the first no longer decides, in whichever order they came)."""
    base, audit = gateway
    body = json.dumps({"url": site.url("/x")}).encode()
    json_type = ("Content-Type", "application/json")
    for first, second in (("alice", "bob"), ("bob", "alice")):
        tokens = [("Authorization", f"Bearer {TOKENS[who]}") for who in (first, second)]
        r = await client.post(base + FETCH_PATH, content=body, headers=[*tokens, json_type])
        assert "send one Authorization header" in assert_error(r, 400, "invalid_input")
        # Whatever else is repeated before them.
        types = [json_type, ("Content-Type", "text/plain")]
        r = await client.post(base + FETCH_PATH, content=body, headers=[*types, *tokens])
        assert "send one Authorization header" in assert_error(r, 400, "invalid_input")
    assert audit.records == []
    token = ("Authorization", f"Bearer {TOKENS['alice']}")
    for repeated in (
        [json_type, ("Content-Type", "text/plain")],
        [json_type, ("Webward-Session", "a"), ("Webward-Session", "b")],
    ):
        r = await client.post(base + FETCH_PATH, content=body, headers=[token, *repeated])
        name = repeated[-1][0]
        assert f"send one {name} header" in assert_error(r, 400, "invalid_input")
    assert [(rec.agent, rec.decision) for rec in audit.records] == [("alice", "refused")] * 2
    assert site.requests == []


@pytest.mark.anyio
async def test_a_call_refused_before_the_core_records_its_session(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """A request refused before the core (a bad Webward-Session, a body of the wrong type or
    shape) is audited in the session it named, as a call that got through would be: scoped
    to its agent (``gateway:<agent>:<name>``, so that ``webward audit --session`` finds it),
    or, for a name that is no session name (too long, a tab inside), the name as sent. They
    recorded no session."""
    base, audit = gateway
    token = {"Authorization": f"Bearer {TOKENS['alice']}"}
    url = site.url("/x")
    long, tabbed = "x" * 600, "case\tA"
    for name in (long, tabbed):
        r = await client.post(
            base + FETCH_PATH, json={"url": url}, headers={**token, "Webward-Session": name}
        )
        assert_error(r, 400, "invalid_input")
    in_session = {**token, "Webward-Session": "case-A"}
    r = await client.post(base + FETCH_PATH, content=b"{}", headers=in_session)
    assert_error(r, 415, "invalid_input")
    r = await client.post(base + FETCH_PATH, json={"url": url, "bogus": 1}, headers=in_session)
    assert_error(r, 400, "invalid_input")
    r = await client.post(base + FETCH_PATH, json={"url": 1}, headers=token)
    assert_error(r, 400, "invalid_input")
    assert [(rec.decision, rec.session) for rec in audit.records] == [
        ("refused", long),
        ("refused", tabbed),
        ("refused", "gateway:alice:case-A"),
        ("refused", "gateway:alice:case-A"),
        ("refused", None),
    ]
    assert site.requests == []


@pytest.mark.anyio
async def test_refused_credentials_are_counted_and_logged_without_the_token(
    tmp_path: Path, site: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request refused for its credentials has no agent, so it is no call and has no audit
    record; security still needs to see token guessing and an agent left with a rotated
    token. Each is counted in ``webward_auth_refusals_total`` by reason (missing, malformed,
    unknown) and said in a WARNING line on the ``webward`` logger with the reason and the
    client address, one per reason per quiet period, and never with any part of the token.
    In-process (ASGI), with a client address of the test's choosing and the log's clock
    frozen, so that which refusals get a line does not depend on how fast the machine is."""
    from prometheus_client.parser import text_string_to_metric_families

    from webward._telemetry import _AUTH_QUIET_S, Telemetry

    settings = load(tmp_path)
    audit = MemoryAuditSink()
    telemetry = Telemetry(metrics=True)
    now = [5000.0]
    monkeypatch.setattr(telemetry._auth_log, "_clock", lambda: now[0])
    caplog.set_level(logging.WARNING, logger="webward")
    web = Web(
        settings,
        resolver=StaticResolver({}),
        audit=audit,
        credentials=EnvironmentStore({}),
        telemetry=telemetry,
    )

    def refusals() -> dict[str, float]:
        assert telemetry.metrics is not None
        page = telemetry.metrics.exposition().decode()
        return {
            s.labels["reason"]: s.value
            for family in text_string_to_metric_families(page)
            for s in family.samples
            if s.name == "webward_auth_refusals_total"
        }

    def lines() -> list[str]:
        said = [r for r in caplog.records if r.name == "webward" and "reason=" in r.getMessage()]
        assert all(r.levelno == logging.WARNING for r in said)
        return [r.getMessage() for r in said]

    body = json.dumps({"url": site.url("/x")}).encode()
    json_type = ("Content-Type", "application/json")
    guesses = ["guess-Q7ZK93-one", "guess-Q7ZK93-two", "guess-Q7ZK93-three"]
    async with web:
        app = create_app(settings, web)
        # Shown from zero before any refusal: an alert on rate() sees the first one.
        assert refusals() == {"missing": 0, "malformed": 0, "unknown": 0}
        transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:

            async def post(*headers: tuple[str, str]) -> httpx.Response:
                return await c.post(FETCH_PATH, content=body, headers=[json_type, *headers])

            assert_error(await post(), 401, "refused")  # missing
            for malformed in ("Basic YWxpY2U6eA==", "Bearer", "Bearer   "):
                assert_error(await post(("Authorization", malformed)), 401, "refused")
            two = [("Authorization", f"Bearer {TOKENS[who]}") for who in ("alice", "bob")]
            assert_error(await post(*two), 400, "invalid_input")  # malformed: which one?
            for guess in [*guesses, TOKENS["alice"] + "x"]:
                assert_error(await post(("Authorization", f"Bearer {guess}")), 401, "refused")
            ok = await post(("Authorization", f"Bearer {TOKENS['alice']}"))
            assert ok.status_code == 200, ok.text  # a known token is a call, not a refusal
            assert refusals() == {"missing": 1, "malformed": 4, "unknown": 4}
            first = lines()
            # One line per reason, each with the client's address; the rest held back.
            assert len(first) == 3
            for reason, line in zip(("missing", "malformed", "unknown"), first, strict=True):
                assert f"reason={reason}" in line and "203.0.113.7" in line
            # Once the quiet period is over, the next line says how many went unlogged.
            now[0] += _AUTH_QUIET_S
            assert_error(await post(("Authorization", "Bearer guess-Q7ZK93-four")), 401, "refused")
    last = lines()[3]
    assert "reason=unknown" in last and "3 more" in last
    # No part of any credential reaches the log: not the guesses, not a real token with a
    # character too many, not a Basic credential.
    logged = caplog.text
    for secret in ("Q7ZK93", "guess", "secret", TOKENS["alice"][:6], TOKENS["bob"][:6], "YWxp"):
        assert secret not in logged, secret
    assert [(r.agent, r.decision) for r in audit.records] == [("alice", "allowed")]


@pytest.mark.anyio
async def test_agents_get_their_own_tiers(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """Two tokens, two tiers: the as-owner agent is refused a host the connected agent reads."""
    base, audit = gateway
    ok = await client.post(base + FETCH_PATH, json={"url": site.url("/t")}, headers=auth("alice"))
    assert ok.status_code == 200
    refused = await client.post(
        base + FETCH_PATH, json={"url": site.url("/u")}, headers=auth("bob")
    )
    message = assert_error(refused, 403, "refused")
    assert "127.0.0.1" in message
    search = await client.post(base + SEARCH_PATH, json={"query": "webward"}, headers=auth("bob"))
    assert_error(search, 403, "refused")
    assert [(rec.agent, rec.tier) for rec in audit.records] == [
        ("alice", "connected"),
        ("bob", "as-owner"),
        ("bob", "as-owner"),
    ]
    assert [req.path for req in site.requests] == ["/t"]


@pytest.mark.anyio
async def test_search_without_provider_is_501_not_configured(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient
) -> None:
    """A search with no provider configured answers 501 with the not-configured message."""
    base, _ = gateway
    r = await client.post(
        base + SEARCH_PATH, json={"query": "webward", "limit": 5}, headers=auth("alice")
    )
    message = assert_error(r, 501, "not_configured")
    assert message.startswith("web search is not configured")
    assert "web_fetch still works" in message


@pytest.mark.anyio
async def test_refused_address_is_403_and_never_connected(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient
) -> None:
    """A loopback address outside allow_ranges is refused with 403 and no connection is made."""
    base, audit = gateway
    with accept_counter("127.0.0.2") as counter:
        r = await client.post(
            base + FETCH_PATH, json={"url": counter.url("/")}, headers=auth("dave")
        )
        message = assert_error(r, 403, "refused")
        assert "internal address" in message
    assert counter.accepts == 0
    assert audit.records[-1].decision == "refused"


# ---- bad input -------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "url is required: an absolute http:// or https:// URL to read"),
        ({"url": 5}, "url must be a string"),
        ({"url": None}, "url must be a string"),
        ({"url": "http://127.0.0.1/", "offset": "3"}, "offset must be a non-negative whole number"),
        ({"url": "http://127.0.0.1/", "offset": 1.5}, "offset must be a non-negative whole number"),
        (
            {"url": "http://127.0.0.1/", "offset": True},
            "offset must be a non-negative whole number",
        ),
        ({"url": "http://127.0.0.1/", "offset": -1}, "offset must be a non-negative whole number"),
        ({"url": "http://127.0.0.1/", "includeLinks": "yes"}, "includeLinks must be true or false"),
        (
            {"url": "http://127.0.0.1/", "includeScreenshot": 1},
            "includeScreenshot must be true or false",
        ),
        ({"url": "http://127.0.0.1/", "include_links": True}, "unknown field 'include_links'"),
        # Several faults: unknown fields first, then the catalogue's order, whatever the body's.
        ({"url": 5, "bogus": 1}, "unknown field 'bogus'; web:page.fetch@1 takes url, offset,"),
        ({"offset": "3"}, "url is required: an absolute http:// or https:// URL to read"),
        (
            {"includeLinks": "yes", "offset": "3", "url": "http://127.0.0.1/"},
            "offset must be a non-negative whole number",
        ),
        ({"url": "not a url"}, "URL"),
        ([{"url": "http://127.0.0.1/"}], "must be a JSON object"),
        ("http://127.0.0.1/", "must be a JSON object"),
    ],
)
async def test_bad_fetch_bodies_are_400(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient, body: Any, fragment: str
) -> None:
    """Missing, extra and mistyped fields and values the core refuses give 400 naming them;
    each is audited once, whether the gateway or the core refused it."""
    base, audit = gateway
    before = len(audit.records)
    r = await client.post(base + FETCH_PATH, json=body, headers=auth("alice"))
    assert fragment in assert_error(r, 400, "invalid_input")
    [record] = audit.records[before:]
    assert (record.agent, record.capability, record.decision) == (
        "alice",
        "web:page.fetch@1",
        "refused",
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "query is required: the words to search for"),
        ({"query": 7}, "query must be a string"),
        ({"query": "x", "limit": "10"}, "limit must be a whole number from 1 to 50"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 51}, "limit"),
        ({"query": "x", "page": 2}, "unknown field 'page'"),
        ({"query": ""}, "query"),
        ({"query": "x" * 513}, "query"),
        ({"query": "x", "allowedDomains": "a.org"}, "allowedDomains must be a list"),
        ({"query": "x", "blockedDomains": ["a.org/x"]}, "blockedDomains takes domain names"),
        ({"query": "x", "freshness": "hour"}, "freshness must be one of day, week, month, year"),
        ({"query": "x", "country": "usa"}, "country must be a two-letter ISO 3166-1 code"),
        ({"query": "x", "language": 5}, "language must be a two-letter ISO 639-1 code"),
    ],
)
async def test_bad_search_bodies_are_400(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient, body: Any, fragment: str
) -> None:
    """Search bodies with missing, extra or mistyped fields or out-of-range values give 400,
    each audited once."""
    base, audit = gateway
    before = len(audit.records)
    r = await client.post(base + SEARCH_PATH, json=body, headers=auth("alice"))
    assert fragment in assert_error(r, 400, "invalid_input")
    assert [(r.capability, r.decision) for r in audit.records[before:]] == [
        ("web:search.query@1", "refused")
    ]


@pytest.mark.anyio
async def test_non_json_bodies_are_400_or_415(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient
) -> None:
    """Broken JSON, non-UTF-8, NaN and deep nesting are 400; a body not declared JSON is 415.
    Each is one audited call of its agent."""
    base, audit = gateway
    json_headers = {**auth("alice"), "Content-Type": "application/json"}
    for raw in (b"{", b"", b"\xff\xfe{}", b'{"url": NaN}', b"[" * 60_000):
        r = await client.post(base + FETCH_PATH, content=raw, headers=json_headers)
        assert_error(r, 400, "invalid_input")
    for content_type in (None, "text/plain", "application/x-www-form-urlencoded"):
        headers = (
            auth("alice")
            if content_type is None
            else {**auth("alice"), "Content-Type": content_type}
        )
        r = await client.post(
            base + FETCH_PATH, content=b'{"url": "http://127.0.0.1/"}', headers=headers
        )
        assert_error(r, 415, "invalid_input")
    assert [(r.agent, r.decision, r.reason) for r in audit.records] == [
        ("alice", "refused", "invalid_input")
    ] * 8


@pytest.mark.anyio
async def test_a_compressed_body_is_415_not_read_as_sent(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient
) -> None:
    """The gateway never decodes a body's Content-Encoding: a gzip body was refused as "not
    UTF-8", and a plain JSON body labelled gzip was read and served, which a proxy or WAF in
    front that decodes (or refuses) it does not see. 415 naming the header, audited."""
    base, audit = gateway
    body = b'{"url": "http://127.0.0.1/"}'
    for encoding, raw in (("gzip", gzip.compress(body)), ("gzip", body), ("br", body)):
        headers = {**auth("alice"), "Content-Type": "application/json"}
        r = await client.post(
            base + FETCH_PATH, content=raw, headers={**headers, "Content-Encoding": encoding}
        )
        assert_error(r, 415, "invalid_input")
        assert "without Content-Encoding" in r.json()["error"]["message"]
    assert [(r.agent, r.decision, r.reason) for r in audit.records] == [
        ("alice", "refused", "invalid_input")
    ] * 3


@pytest.mark.anyio
async def test_oversized_bodies_are_413_whatever_the_headers_say(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient
) -> None:
    """A body over 64 KiB is 413 when declared and when streamed chunked without a length."""
    base, audit = gateway
    big = json.dumps({"url": "http://127.0.0.1/" + "a" * 70_000}).encode()
    r = await client.post(
        base + FETCH_PATH,
        content=big,
        headers={**auth("alice"), "Content-Type": "application/json"},
    )
    assert_error(r, 413, "invalid_input")

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"url": "http://127.0.0.1/'
        for _ in range(20):
            yield b"a" * 4096
        yield b'"}'

    r = await client.post(
        base + FETCH_PATH,
        content=chunks(),
        headers={**auth("alice"), "Content-Type": "application/json"},
    )
    assert "content-length" not in r.request.headers
    assert_error(r, 413, "invalid_input")
    # Both audited as alice's refused calls, with no target: the body was never read whole.
    assert [(r.agent, r.decision, r.target) for r in audit.records] == [
        ("alice", "refused", ""),
        ("alice", "refused", ""),
    ]


def test_a_content_length_with_thousands_of_leading_zeros_is_read_as_its_number(
    gateway: tuple[str, MemoryAuditSink], caplog: pytest.LogCaptureFixture
) -> None:
    """Content-Length is digits (RFC 9110), leading zeros allowed: httptools reads 5,000 of
    them before a 2, but int() refuses a string past 4,300 digits. The servers' protocol
    answered 400 "not HTTP/1.1" while the app, already started, failed with a traceback in
    the log and the call of the token's agent left no audit record. It is read as 2 (and
    5,000 zeros before 70000 as a body too large)."""
    base, audit = gateway
    host, port = base.removeprefix("http://").split(":")

    def exchange(length: bytes, body: bytes) -> bytes:
        head = (
            f"POST {FETCH_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKENS['alice']}"
            "\r\nContent-Type: application/json\r\nConnection: close\r\n"
        ).encode()
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(head + b"Content-Length: " + length + b"\r\n\r\n" + body)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        return answer

    with caplog.at_level(logging.WARNING):
        small = exchange(b"0" * 5000 + b"2", b"{}")
        large = exchange(b"0" * 5000 + b"70000", b"{}")
    assert small.startswith(b"HTTP/1.1 400 ") and b"url is required" in small, small
    assert large.startswith(b"HTTP/1.1 413 "), large
    assert "Traceback" not in caplog.text and "Exception in ASGI" not in caplog.text
    assert [(r.agent, r.decision) for r in audit.records] == [("alice", "refused")] * 2


@pytest.mark.anyio
async def test_a_body_is_cut_off_past_the_limit_in_one_message_or_many() -> None:
    """The body reader, as uvicorn hands it bodies: a body in one message is taken at once,
    and refused past the limit though no length was declared; one in many messages is
    joined, and refused once it passes the limit; a caller gone mid-body is told apart."""
    from webward._gateway import _BodyTooLarge, _Disconnected, _read_body

    def messages(*items: dict[str, Any]) -> Callable[[], Any]:
        queue = list(items)

        async def receive() -> dict[str, Any]:
            return queue.pop(0)

        return receive

    def part(body: bytes, more: bool = False) -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": more}

    assert await _read_body(messages(part(b"x" * 100)), None, 100) == b"x" * 100
    assert await _read_body(messages(part(b"ab", True), part(b"cd")), None, 100) == b"abcd"
    with pytest.raises(_BodyTooLarge):
        await _read_body(messages(part(b"x" * 101)), None, 100)
    with pytest.raises(_BodyTooLarge):
        await _read_body(messages(part(b"x" * 60, True), part(b"x" * 60)), None, 100)
    with pytest.raises(_BodyTooLarge):  # declared too large: refused before any is read
        await _read_body(messages(), b"101", 100)
    with pytest.raises(_Disconnected):
        await _read_body(messages(part(b"ab", True), {"type": "http.disconnect"}), None, 100)
    with pytest.raises(_Disconnected):
        await _read_body(messages({"type": "http.disconnect"}), None, 100)


@pytest.mark.anyio
async def test_wrong_method_unknown_path_health_and_openapi(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient
) -> None:
    """GET on a capability is 405 with Allow, an unknown path 404; health and OpenAPI answer."""
    base, _ = gateway
    r = await client.get(base + FETCH_PATH, headers=auth("alice"))
    assert_error(r, 405, "invalid_input")
    assert r.headers["allow"] == "POST"
    assert_error(
        await client.post(base + "/v1/capabilities/web:page.fetch@2", json={}), 404, "invalid_input"
    )
    assert_error(await client.get(base + "/"), 404, "invalid_input")
    # A slash too many is a 404 too: no redirect built from the Host header a client sent.
    for path in (FETCH_PATH + "/", "/healthz/", "/openapi.json/"):
        r = await client.post(
            base + path, json={}, headers={**auth("alice"), "Host": "evil.example"}
        )
        assert_error(r, 404, "invalid_input")
        assert_error(
            await client.get(base + path, headers={"Host": "evil.example"}), 404, "invalid_input"
        )
    # An encoded slash is no slash: a proxy's rule on /v1/... is not passed by /v1%2F...
    r = await client.post(
        base + "/v1%2Fcapabilities/web:page.fetch@1",
        json={"url": "http://127.0.0.1/"},
        headers=auth("alice"),
    )
    assert_error(r, 404, "invalid_input")
    console = await client.get(base + "/console", headers={"Host": "evil.example"})
    assert console.status_code == 307 and console.headers["location"] == "console/"
    health = await client.get(base + "/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    doc = await client.get(base + "/openapi.json")
    assert doc.status_code == 200
    assert doc.json() == openapi_document()


@pytest.mark.anyio
async def test_a_root_path_mount_reaches_the_same_checks(tmp_path: Path, site: Any) -> None:
    """Mounted under a root path (a proxy's prefix), the capability routes go through Starlette
    to the same handler: auth, body checks and the page model, as on the direct path."""
    settings = load(tmp_path)
    audit = MemoryAuditSink()
    async with loopback_web(settings, audit) as web:
        transport = httpx.ASGITransport(app=create_app(settings, web), root_path="/webward")
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            url = "/webward" + FETCH_PATH
            ok = await c.post(url, json={"url": site.url("/mounted")}, headers=auth("alice"))
            assert ok.status_code == 200 and ok.json()["finalUrl"] == site.url("/mounted")
            assert ok.headers["cache-control"] == "no-store"
            assert_error(await c.post(url, json={"url": site.url("/x")}), 401, "refused")
            assert_error(
                await c.post(url, json={"url": 1}, headers=auth("alice")), 400, "invalid_input"
            )
            assert_error(await c.get(url, headers=auth("alice")), 405, "invalid_input")
            health = await c.get("/webward/healthz")
            assert health.json() == {"status": "ok"}
    assert [(r.agent, r.decision) for r in audit.records] == [
        ("alice", "allowed"),
        ("alice", "refused"),
    ]


def test_a_body_that_stops_coming_is_answered_408_and_audited(
    gateway: tuple[str, MemoryAuditSink], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token holder sending a body slower than the bound (shortened here from 10 s) gets a
    408 in the error model and its connection closed; that call, and one whose client left
    mid-body, are audited."""
    monkeypatch.setattr(webward._serving, "BODY_TIMEOUT_S", 0.5)
    base, audit = gateway
    host, port = base.removeprefix("http://").split(":")
    head = (
        f"POST {FETCH_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKENS['alice']}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(head + b'{"url": ')  # and nothing more
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    message = "the request body did not arrive within 0.5 s of its head"
    assert answer.startswith(b"HTTP/1.1 408 ") and message.encode() in answer
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(head + b'{"url": ')
    deadline = time.monotonic() + 10
    while len(audit.records) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the server audits the second call once it sees the close
    assert [(r.agent, r.decision, r.reason) for r in audit.records] == [
        ("alice", "refused", "invalid_input")
    ] * 2


@pytest.mark.anyio
async def test_a_bad_body_is_not_answered_unaudited(tmp_path: Path) -> None:
    """A request refused for its body is a call too: when the audit log cannot take its
    record, the answer is the audit's refusal, not the body's 400."""
    settings = load(tmp_path)
    async with loopback_web(settings, MemoryAuditSink(broken=True)) as web:
        transport = httpx.ASGITransport(app=create_app(settings, web))
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            r = await c.post(FETCH_PATH, json={"url": 1}, headers=auth("alice"))
    # 503 with Retry-After: a store down is this replica's state, not a decision on the call.
    assert (r.status_code, r.headers["retry-after"]) == (503, "5")
    assert r.json()["error"]["message"].startswith("refused: audit unavailable")


@pytest.mark.anyio
async def test_readyz_answers_whether_the_stores_do(tmp_path: Path) -> None:
    """``/readyz`` (no token) is 200 while the audit and limit stores answer, and 503 with
    Retry-After and the refusal a call would get when the audit log cannot be written; it
    writes no audit record, being no call."""
    settings = load(tmp_path)
    async with Web(settings, resolver=StaticResolver({})) as web:  # SQLite stores, as shipped
        transport = httpx.ASGITransport(app=create_app(settings, web))
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            ready = await c.get("/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    assert (tmp_path / "state" / "audit.db").exists()  # the probe opened it: no call was made
    assert await webward_audit_rows(tmp_path / "state") == []

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the state dir should be", encoding="utf-8")
    down = Settings.load(write_config(tmp_path), environ={"WEBWARD_STATE_DIR": str(blocked)})
    async with Web(down, resolver=StaticResolver({})) as web:
        transport = httpx.ASGITransport(app=create_app(down, web))
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            r = await c.get("/readyz")
    assert (r.status_code, r.headers["retry-after"]) == (503, "5")
    assert_error(r, 503, "refused").startswith("refused: audit unavailable")
    assert str(blocked) in r.json()["error"]["message"]


class _CountingProbe(MemoryAuditSink):
    """An audit sink whose probe counts its runs and takes a while to answer."""

    def __init__(self) -> None:
        super().__init__()
        self.probes = 0

    async def probe(self) -> None:
        self.probes += 1
        await asyncio.sleep(0.05)  # long enough that the other requests arrive meanwhile


@pytest.mark.anyio
async def test_a_flood_of_readiness_probes_is_one_probe_of_the_store(tmp_path: Path) -> None:
    """``/readyz`` needs no token, so concurrent probes share one probe of the store."""
    settings = load(tmp_path)
    audit = _CountingProbe()
    async with loopback_web(settings, audit) as web:
        transport = httpx.ASGITransport(app=create_app(settings, web))
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            answers = await asyncio.gather(*(c.get("/readyz") for _ in range(20)))
    assert {r.status_code for r in answers} == {200}
    assert audit.probes == 1
    assert audit.records == []


async def _readiness_bug_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, said: str
) -> tuple[httpx.Response, logging.LogRecord]:
    """``/readyz`` answered while the limit store's probe fails in a way of its own (a
    driver's bug, raising ``said``), and the one log line saying so."""

    async def bug() -> None:
        raise RuntimeError(said)

    settings = load(tmp_path)
    caplog.set_level(logging.ERROR, logger="webward")
    async with loopback_web(settings, MemoryAuditSink()) as web:
        monkeypatch.setattr(web._limiter.state, "probe", bug, raising=False)
        transport = httpx.ASGITransport(app=create_app(settings, web))
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            r = await c.get("/readyz")
    [logged] = [rec for rec in caplog.records if "readiness probe" in rec.getMessage()]
    return r, logged


@pytest.mark.anyio
async def test_a_readiness_probes_bug_is_logged_without_the_credentials_it_names(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A limit store's probe that fails in a way of its own (a driver's bug) is answered 503
    with one sentence and logged with its traceback, which goes wherever the operator ships
    the server's log: the traceback was logged as it stood, a store DSN's password included."""
    said = "could not reach redis://webward:Zq-dsn-pw@db.internal:6379/0"
    r, logged = await _readiness_bug_logged(tmp_path, caplog, monkeypatch, said)
    assert r.status_code == 503
    assert "Traceback" not in r.text and "Zq-dsn-pw" not in r.text
    text = logged.getMessage() + (logged.exc_text or "")
    assert "RuntimeError" in text and "db.internal:6379" in text  # the bug, to be found
    assert "Zq-dsn-pw" not in text and logged.exc_info is None


@pytest.mark.anyio
async def test_a_readiness_probes_bug_is_logged_without_a_keyword_dsns_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL DSN is as often libpq's keywords as a URL (host=... password=...), and a
    driver's error may echo it: the readiness probe's bug was logged with the password, which
    only a URL's user information and a query's secret values were redacted of."""
    said = "bad conninfo: host=db.internal user=webward password='Zq dsn-pw' dbname=audit"
    r, logged = await _readiness_bug_logged(tmp_path, caplog, monkeypatch, said)
    assert r.status_code == 503
    text = logged.getMessage()
    assert "host=db.internal user=webward password=REDACTED dbname=audit" in text
    assert "Zq" not in text and "dsn-pw" not in text


# ---- status mapping for the core's errors ------------------------------------------------


@pytest.mark.anyio
async def test_core_errors_map_to_their_statuses(tmp_path: Path, client: httpx.AsyncClient) -> None:
    """Core errors map to statuses: 403, 422 (cap, type), 504, 502, 503 and 429 with Retry-After."""
    settings = load(
        tmp_path,
        limits={
            "breaker_failures": 2,
            "breaker_open_s": 60.0,
            "max_image_bytes": 100,
            "fetch_timeout_s": 0.5,
        },
    )
    routes = {
        "/err": respond(500, "boom"),
        "/big.png": respond(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 500, "image/png"),
        "/blob": respond(200, b"\0\1\2\3" * 64, "application/octet-stream"),
        "/slow": drip(b"x" * 100, 0.05, "text/plain"),
    }
    audit = MemoryAuditSink()
    with (
        serve(routes=routes) as site,
        running_gateway(settings, lambda: loopback_web(settings, audit)) as base,
    ):
        url = base + FETCH_PATH
        ftp = await client.post(url, json={"url": "ftp://127.0.0.1/"}, headers=auth("alice"))
        assert "ftp" in assert_error(ftp, 403, "refused")
        assert_error(
            await client.post(url, json={"url": site.url("/big.png")}, headers=auth("alice")),
            422,
            "too_large",
        )
        assert_error(
            await client.post(url, json={"url": site.url("/blob")}, headers=auth("alice")),
            422,
            "unsupported_type",
        )
        # Two failures in a row (breaker_failures = 2) open the host's circuit.
        assert_error(
            await client.post(url, json={"url": site.url("/slow")}, headers=auth("alice")),
            504,
            "timeout",
        )
        assert_error(
            await client.post(url, json={"url": site.url("/err")}, headers=auth("alice")),
            502,
            "upstream_error",
        )
        open_circuit = await client.post(url, json={"url": site.url("/err")}, headers=auth("alice"))
        assert_error(open_circuit, 503, "circuit_open")
        assert int(open_circuit.headers["retry-after"]) >= 1
        assert [rec.decision for rec in audit.records] == [
            "refused",
            "refused",
            "refused",
            "failed",
            "failed",
            "refused",
        ]

    limited = load(tmp_path, limits={"per_host_rate": 0.001, "per_host_burst": 1})
    with (
        serve(routes={"*": respond(200, PAGE.format("x"))}) as site,
        running_gateway(limited, lambda: loopback_web(limited, MemoryAuditSink())) as base,
    ):
        first = await client.post(
            base + FETCH_PATH, json={"url": site.url("/a")}, headers=auth("alice")
        )
        assert first.status_code == 200
        second = await client.post(
            base + FETCH_PATH, json={"url": site.url("/b")}, headers=auth("alice")
        )
        assert_error(second, 429, "rate_limited")
        assert int(second.headers["retry-after"]) >= 1


def test_every_wire_code_has_a_documented_status() -> None:
    """Each wire code maps to a status the OpenAPI document lists for both capabilities."""
    from webward._errors import WIRE_CODES

    doc = openapi_document()
    assert set(STATUS_FOR_CODE) == set(WIRE_CODES)
    for path in (FETCH_PATH, SEARCH_PATH):
        documented = set(doc["paths"][path]["post"]["responses"])
        assert {str(s) for s in STATUS_FOR_CODE.values()} <= documented
        assert {"400", "401", "413", "415"} <= documented


# ---- many agents at once -------------------------------------------------------------


@pytest.mark.anyio
async def test_thirty_concurrent_requests_from_three_agents(
    gateway: tuple[str, MemoryAuditSink], site: Any, client: httpx.AsyncClient
) -> None:
    """Thirty requests at once from three tokens all succeed and leave thirty audit records."""
    base, audit = gateway
    agents = ["alice", "dave", "alice"] * 10

    async def one(i: int, agent: str) -> httpx.Response:
        return await client.post(
            base + FETCH_PATH, json={"url": site.url(f"/c/{i}")}, headers=auth(agent)
        )

    responses = await asyncio.gather(*(one(i, a) for i, a in enumerate(agents)))
    assert [r.status_code for r in responses] == [200] * 30
    assert sorted(r.json()["requestedUrl"] for r in responses) == sorted(
        site.url(f"/c/{i}") for i in range(30)
    )
    assert len(audit.records) == 30
    assert sorted(rec.agent for rec in audit.records) == sorted(agents)
    assert all(rec.decision == "allowed" for rec in audit.records)


@pytest.mark.anyio
async def test_a_lone_surrogate_spoils_no_other_agents_audit(
    tmp_path: Path, site: Any, client: httpx.AsyncClient
) -> None:
    """A body whose URL holds a lone surrogate (valid JSON: "\\ud800") gets its 400 and its
    record; the reads committed to SQLite beside it are answered and recorded as usual."""
    settings = load(tmp_path)

    def web() -> Web:  # the shipped SQLite audit in the state dir
        return Web(settings, resolver=StaticResolver({}), credentials=EnvironmentStore({}))

    with running_gateway(settings, web) as base:
        odd = b'{"url": "' + site.url("/x").encode() + b'\\ud800"}'
        headers = {**auth("alice"), "Content-Type": "application/json"}
        responses = await asyncio.gather(
            *(client.post(base + FETCH_PATH, json={"url": site.url(f"/{i}")}, headers=auth("dave"))
              for i in range(10)),
            client.post(base + FETCH_PATH, content=odd, headers=headers),
        )  # fmt: skip
    assert [r.status_code for r in responses[:10]] == [200] * 10
    assert_error(responses[10], 400, "invalid_input")
    rows = await webward_audit_rows(tmp_path / "state")
    assert sorted(r.target for r in rows if r.agent == "dave") == sorted(
        site.url(f"/{i}") for i in range(10)
    )
    (odd_row,) = [r for r in rows if r.agent == "alice"]
    assert odd_row.decision == "refused" and odd_row.target.endswith("/x\\ud800")


async def webward_audit_rows(state_dir: Path) -> list[Any]:
    sink = SQLiteAuditSink(state_dir)
    try:
        return await sink.query(limit=1000)
    finally:
        await sink.aclose()


@pytest.mark.anyio
async def test_agents_share_one_cache_limiter_and_breaker(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    """One process, one Web: a page alice read is served to dave from the cache, the host's
    rate limit counts both agents' reads, and a circuit alice's failures opened stays open
    for dave."""
    settings = load(tmp_path)
    with (
        serve(routes={"/page": respond(200, PAGE.format("shared"))}) as site,
        running_gateway(settings, lambda: loopback_web(settings, MemoryAuditSink())) as base,
    ):
        url = base + FETCH_PATH
        first = await client.post(url, json={"url": site.url("/page")}, headers=auth("alice"))
        second = await client.post(url, json={"url": site.url("/page")}, headers=auth("dave"))
        assert [first.status_code, second.status_code] == [200, 200]
        assert second.json()["title"] == "Gateway page"
        assert [req.path for req in site.requests] == ["/page"]  # dave's read was a cache hit

    limited = load(tmp_path, limits={"per_host_burst": 2, "per_host_rate": 0.001})
    with (
        serve(routes={"*": respond(200, PAGE.format("limited"))}) as site,
        running_gateway(limited, lambda: loopback_web(limited, MemoryAuditSink())) as base,
    ):
        url = base + FETCH_PATH
        for path, agent in (("/a", "alice"), ("/b", "dave")):
            ok = await client.post(url, json={"url": site.url(path)}, headers=auth(agent))
            assert ok.status_code == 200, ok.text
        # One bucket of two tokens for both: alice's read spent one, dave's (tier full) a
        # quarter; the 0.75 left is less than alice's next read needs.
        refused = await client.post(url, json={"url": site.url("/c")}, headers=auth("alice"))
        assert "127.0.0.1" in assert_error(refused, 429, "rate_limited")
        assert [req.path for req in site.requests] == ["/a", "/b"]

    failing = load(tmp_path, limits={"breaker_failures": 1, "breaker_open_s": 60.0})
    with (
        serve(routes={"*": respond(500, "boom")}) as site,
        running_gateway(failing, lambda: loopback_web(failing, MemoryAuditSink())) as base,
    ):
        url = base + FETCH_PATH
        failed = await client.post(url, json={"url": site.url("/a")}, headers=auth("alice"))
        assert_error(failed, 502, "upstream_error")
        blocked = await client.post(url, json={"url": site.url("/b")}, headers=auth("dave"))
        assert_error(blocked, 503, "circuit_open")
        assert [req.path for req in site.requests] == ["/a"]


# ---- request bodies ---------------------------------------------------------------------

_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)  # past 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(value=_JSON_VALUES, encoding=st.sampled_from(["utf-8", "utf-16", "utf-8-sig"]))
@hyp_settings(max_examples=300, deadline=None)
def test_property_bodies_read_as_json_loads_reads_them(value: Any, encoding: str) -> None:
    """Whatever the fast reader takes, a UTF-8 body reads exactly as ``json.loads`` reads it:
    same values and same types (an integer past 64 bits stays an integer). UTF-16 and a
    byte-order mark, which ``json.loads`` reads and a proxy reading UTF-8 does not, are
    refused in one sentence."""
    for data in (value, {"url": "http://127.0.0.1/", "offset": value}):
        body = json.dumps(data, ensure_ascii=False).encode(encoding)
        if encoding != "utf-8":
            with pytest.raises(InvalidInput, match=r"^the request body is not UTF-8: send"):
                _parse_json(body)
            continue
        parsed = _parse_json(body)
        expected = json.loads(body)
        assert parsed == expected
        assert repr(parsed) == repr(expected)  # 1 and 1.0 compare equal; their reprs do not


def test_bodies_json_loads_turns_down_are_invalid_input() -> None:
    """NaN, broken UTF-8 and bad syntax are the one-sentence invalid-JSON refusal."""
    for body in (b'{"url": NaN}', b'{"url": ', b"[" * 5000):
        with pytest.raises(InvalidInput, match=r"not valid JSON|nested too deeply"):
            _parse_json(body)
    # Text that is not UTF-8 (broken, UTF-32, a BOM) is named so, whatever json.loads reads.
    for body in (
        b'{"url": "\xff"}',
        '{"url": "http://127.0.0.1/"}'.encode("utf-32"),
        '{"url": "http://127.0.0.1/"}'.encode("utf-16-le"),
        '{"url": "http://127.0.0.1/"}'.encode("utf-8-sig"),
    ):
        with pytest.raises(InvalidInput, match=r"not UTF-8"):
            _parse_json(body)
    # Valid JSON (RFC 8259 sets no bound on a number) that int() will not read: not "not
    # valid JSON", as it was said; as MCP says of the same argument.
    with pytest.raises(InvalidInput, match=r"a number of more than 4,300 digits") as caught:
        _parse_json(b'{"url": "http://127.0.0.1/", "offset": %s}' % (b"9" * 5000))
    assert "not valid JSON" not in caught.value.message


# ---- tokens and the command line -------------------------------------------------------


def test_token_table_matches_every_agent_and_rejects_bad_digests(tmp_path: Path) -> None:
    """Each token finds its agent, an unknown one none; a malformed digest is refused at startup."""
    table = TokenTable(load(tmp_path))
    assert len(table) == 3
    for name, token in TOKENS.items():
        found = table.lookup(token)
        assert found is not None and (found.name, found.tier) == (name, TIERS[name])
    assert table.lookup("") is None
    assert table.lookup(TOKENS["bob"].upper()) is None
    bad = Settings.load(
        overrides={"agents": {"eve": {"tier": "full", "token_sha256": "abc123"}}},
        environ={"WEBWARD_CONFIG": str(write_config(tmp_path))},
    )
    with pytest.raises(InvalidInput, match=r"\[agents\.eve\] token_sha256"):
        create_app(bad)


def test_two_agents_holding_one_token_are_refused_at_startup(tmp_path: Path) -> None:
    """Two agents with the same token_sha256 (a block copied for a new agent, its token left
    as it was): every call of either ran and was audited as the first, silently, with the
    first's tier. Refused when the gateway or MCP server starts, naming both."""
    shared = Settings.load(
        overrides={"agents": {"eve": {"tier": "full", "token_sha256": hash_token(TOKENS["bob"])}}},
        environ={"WEBWARD_CONFIG": str(write_config(tmp_path))},
    )
    with pytest.raises(InvalidInput, match=r"\[agents\.bob\] and \[agents\.eve\] hold the same"):
        TokenTable(shared)
    with pytest.raises(InvalidInput, match=r"give each agent its own token"):
        create_app(shared)


def test_token_lookup_compares_every_entry_whichever_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token is compared with hmac.compare_digest against every agent's digest, matching the
    first, the last or none: no early exit tells which agent came close."""
    import webward._tokens as tokens_module

    table = TokenTable(load(tmp_path))
    compared: list[tuple[bytes, bytes]] = []
    real = tokens_module.hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tokens_module.hmac, "compare_digest", counting)
    for token in (*TOKENS.values(), "unknown-token", ""):
        compared.clear()
        table.lookup(token)
        assert len(compared) == len(TOKENS)
        digest = hashlib.sha256(token.encode()).digest()
        assert {a for a, _ in compared} == {digest}  # the hash is compared, never the token
        assert {b for _, b in compared} == {
            hashlib.sha256(t.encode()).digest() for t in TOKENS.values()
        }


def test_hash_token_reads_stdin_and_prints_the_digest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`webward serve --hash-token` prints the SHA-256 of the token on stdin, newline stripped."""
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("s3cret-token\n"))
    assert main(["serve", "--hash-token", "--config", str(write_config(tmp_path))]) == 0
    assert capsys.readouterr().out.strip() == hashlib.sha256(b"s3cret-token").hexdigest()
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))
    assert main(["serve", "--hash-token", "--config", str(write_config(tmp_path))]) == 2


@pytest.mark.parametrize(
    ("token", "warned"), [("admintoken", True), ("x" * 19, True), ("x" * 20, False)]
)
def test_hash_token_warns_of_a_token_short_enough_to_guess(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    token: str,
    warned: bool,
) -> None:
    """`--hash-token` took "admintoken" without a word, though nothing slows the guesses the
    gateway and its console's login answer: it still prints the digest (the config's to
    take), and says on stderr that such a token can be guessed and how to make one that
    cannot."""
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(token + "\n"))
    assert main(["serve", "--hash-token", "--config", str(write_config(tmp_path))]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == hashlib.sha256(token.encode()).hexdigest()
    if warned:
        assert err.startswith(f"webward serve: warning: a token of {len(token)} characters")
        assert "can be found by guessing" in err and "secrets.token_urlsafe(32)" in err
        assert len(err.splitlines()) == 1
    else:
        assert err == ""


def test_serve_refuses_to_start_without_tokens(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With no agent holding a token, `webward serve` exits 3 saying how to add one."""
    config = write_config(tmp_path, agents=False)
    assert main(["serve", "--port", "0", "--config", str(config)]) == 3
    message = capsys.readouterr().err
    assert "[agents.NAME]" in message and "token_sha256" in message and "--hash-token" in message


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "127.0.0.1", "::1"])
def test_serve_warns_when_it_listens_where_other_machines_reach_it(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    host: str,
) -> None:
    """`webward serve --host 0.0.0.0` served plain HTTP to the network without a word: every
    agent's bearer token and every console login crossed it readable. It now says so on
    stderr, with the next step (loopback behind a TLS proxy); on loopback it says nothing.
    The socket is bound on 127.0.0.1 whatever --host says, and the server never runs."""
    import webward._gateway
    import webward._serving

    bound: list[str] = []

    def loopback_socket(asked: str, port: int, **advice: str) -> socket.socket:
        bound.append(asked)
        return bind_socket("127.0.0.1", 0)

    async def no_server(config: Any, sockets: list[socket.socket], **kwargs: Any) -> None:
        for sock in sockets:
            sock.close()

    monkeypatch.setattr(webward._gateway, "bind_socket", loopback_socket)
    monkeypatch.setattr(webward._serving, "serve", no_server)
    config = write_config(tmp_path)
    assert main(["serve", "--host", host, "--port", "0", "--config", str(config)]) == 0
    assert bound == [host]
    err = capsys.readouterr().err
    if host.startswith(("127.", "::1")):
        assert "warning" not in err
    else:
        (line,) = [line for line in err.splitlines() if "warning" in line]
        shown = f"[{host}]" if ":" in host else host
        assert f"warning: http://{shown}:" in line and "plain HTTP" in line
        assert "bearer tokens" in line and "127.0.0.1 behind a TLS reverse proxy" in line


def test_serve_command_runs_the_gateway(tmp_path: Path, site: Any) -> None:
    """`webward serve --port 0` starts, names its address on stderr and serves a fetch."""
    import os
    import subprocess

    import webward

    config = write_config(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = str(Path(webward.__file__).resolve().parents[1])
    env["WEBWARD_STATE_DIR"] = str(tmp_path / "state")
    proc = subprocess.Popen(
        [sys.executable, "-m", "webward.cli", "serve", "--port", "0", "--config", str(config)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("webward serve: gateway on http://127.0.0.1:"), line
        base = line.split(" on ", 1)[1].split()[0]
        with httpx.Client(trust_env=False, timeout=20) as c:
            assert c.get(base + "/healthz").json() == {"status": "ok"}
            r = c.post(base + FETCH_PATH, json={"url": site.url("/served")}, headers=auth("alice"))
            assert r.status_code == 200 and r.json()["finalUrl"] == site.url("/served")
    finally:
        proc.terminate()
        proc.wait(15)
        if proc.stderr is not None:
            proc.stderr.close()
    # The gateway names its agents by bearer token, and its records say so (face).
    audit = subprocess.run(
        [sys.executable, "-m", "webward.cli", "audit", "--json", "--config", str(config)],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    assert [(r["agent"], r["face"]) for r in json.loads(audit.stdout)] == [("alice", "gateway")]


def test_bind_socket_reports_a_taken_port() -> None:
    """Binding a port already in use is a one-sentence InvalidInput, not a traceback."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        with pytest.raises(InvalidInput, match=r"cannot listen on 127\.0\.0\.1:"):
            bind_socket("127.0.0.1", taken.getsockname()[1]).close()
    finally:
        taken.close()


def test_a_call_cut_by_shutdown_is_answered_503_in_one_sentence_and_audited(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A call still running when the server's graceful shutdown runs out is answered 503 in
    the error model with Retry-After (not the server's plain-text 500 with a traceback in its
    log), and audited as cancelled."""
    arrived, release = threading.Event(), threading.Event()

    def hang(req: Any, sock: socket.socket) -> None:
        arrived.set()
        release.wait(30)

    audit = MemoryAuditSink()
    settings = load(tmp_path)
    sock = bind_socket("127.0.0.1", 0)
    base = address_url(sock)
    servers: list[uvicorn.Server] = []

    async def run() -> None:
        async with loopback_web(settings, audit) as web:
            config = uvicorn.Config(
                create_app(settings, web),
                log_level="warning",
                lifespan="on",
                ws="none",
                timeout_graceful_shutdown=0.2,
            )
            servers.append(uvicorn.Server(config))
            await servers[0].serve(sockets=[sock])

    with serve(routes={"/hang": hang}) as site:
        thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
        thread.start()
        answers: list[httpx.Response] = []
        client = threading.Thread(
            target=lambda: answers.append(
                httpx.post(
                    base + FETCH_PATH,
                    json={"url": site.url("/hang")},
                    headers=auth("alice"),
                    timeout=30,
                )
            )
        )
        client.start()
        assert arrived.wait(10)
        servers[0].should_exit = True
        client.join(20)
        release.set()
        thread.join(20)
        sock.close()
    (answer,) = answers
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    assert answer.json()["error"]["code"] == "overloaded"
    assert "shutting down" in answer.json()["error"]["message"]
    assert [(r.decision, r.reason) for r in audit.records] == [("failed", "cancelled")]
    assert "Exception in ASGI application" not in caplog.text


class SignallingAudit(MemoryAuditSink):
    """Audit records in a list, and an event set once one has been written."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    async def write(self, record: Any) -> None:
        await super().write(record)
        self.written.set()


def raw_post(
    base: str, fields: dict[str, Any], path: str = FETCH_PATH
) -> tuple[socket.socket, bytes]:
    """A connection to the gateway, and a call with these fields to send on it as alice (the
    answer, then the connection closed)."""
    host, port = base.removeprefix("http://").split(":")
    body = json.dumps(fields).encode()
    request = (
        f"POST {path} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer "
        f"{TOKENS['alice']}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    return socket.create_connection((host, int(port)), timeout=10), request + body


def watchers(loop: asyncio.AbstractEventLoop) -> int:
    """How many of the gateway's watches for a client leaving are running on ``loop``."""

    async def count() -> int:
        return sum(
            not task.done() and task.get_coro().__qualname__ == "_await_leaving"  # type: ignore[union-attr]
            for task in asyncio.all_tasks()
        )

    return asyncio.run_coroutine_threadsafe(count(), loop).result(10)


def until(condition: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


@contextmanager
def server_warnings() -> Iterator[list[logging.LogRecord]]:
    """The warnings and errors uvicorn and webward log meanwhile (uvicorn's loggers do not
    propagate to the root logger pytest captures)."""
    records: list[logging.LogRecord] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Kept(logging.WARNING)
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "webward")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield records
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


@pytest.mark.parametrize(
    ("http", "capability", "leaves"),
    [
        ("httptools", "fetch", "watched"),
        ("h11", "fetch", "watched"),
        ("httptools", "search", "watched"),
        ("h11", "search", "watched"),
        ("httptools", "fetch", "at once"),
        ("h11", "fetch", "at once"),
    ],
)
def test_a_client_that_leaves_mid_call_cancels_it_and_it_is_audited_cancelled(
    tmp_path: Path, http: str, capability: str, leaves: str
) -> None:
    """A client that disconnects while its read (or search) is waiting on the far side
    cancels the call: the gateway hangs up on the origin (or the search provider), nothing
    is answered, and the one audit record of the call says ``failed`` / ``cancelled``, not
    ``allowed``. The client leaves once the gateway watches for it, or at once (then the
    watch, when it starts, finds it gone)."""
    arrived, hung_up, hold = held()

    audit = SignallingAudit()
    loops: list[asyncio.AbstractEventLoop] = []
    with serve(routes={"/hold": hold, "/search": hold}) as site:  # SearXNG's path
        settings = load(tmp_path).replace({"search": {"searxng_url": site.base}})
        if capability == "fetch":
            path, fields, target = FETCH_PATH, {"url": site.url("/hold")}, site.url("/hold")
        else:
            path, fields, target = SEARCH_PATH, {"query": "owls at night"}, "owls at night"
        with (
            server_warnings() as warned,
            running_gateway(
                settings, lambda: loopback_web(settings, audit), http=http, loops=loops
            ) as base,
        ):
            conn, request = raw_post(base, fields, path)
            with conn:
                conn.sendall(request)
                assert arrived.wait(10)
                if leaves == "watched":
                    until(lambda: watchers(loops[0]) == 1, "the gateway to watch for the client")
            assert hung_up.wait(10), "the gateway did not hang up on the far side"
            assert audit.written.wait(10)
            until(lambda: watchers(loops[0]) == 0, "the watch to end")
    assert [(r.agent, r.decision, r.reason, r.target) for r in audit.records] == [
        ("alice", "failed", "cancelled", target)
    ]
    assert [r.path for r in site.requests] == ["/hold" if capability == "fetch" else "/search"]
    assert warned == []  # no answer attempted: no 500, no "returned without a response"


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_requests_pipelined_behind_a_call_whose_client_leaves_are_never_started(
    tmp_path: Path, http: str
) -> None:
    """Three calls pipelined in one write, the client gone while the first runs: the first is
    audited cancelled; the two behind it were never started, so neither reaches its page
    nor the audit log, as if never sent (docs/servers.md). Starting them would read pages for
    a client that is gone."""
    arrived = threading.Event()

    def hold(req: Any, sock: socket.socket) -> None:
        arrived.set()
        with suppress(OSError):
            sock.recv(1)  # holds its answer until the gateway closes the connection

    audit = SignallingAudit()
    settings = load(tmp_path)
    loops: list[asyncio.AbstractEventLoop] = []
    routes = {"/hold": hold, "/behind": respond(200, PAGE.format("behind"))}
    with (
        serve(routes=routes) as site,
        running_gateway(
            settings, lambda: loopback_web(settings, audit), http=http, loops=loops
        ) as base,
    ):
        calls = []
        for path in ("/hold", "/behind", "/behind"):
            body = json.dumps({"url": site.url(path)}).encode()
            calls.append(
                f"POST {FETCH_PATH} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer "
                f"{TOKENS['alice']}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(b"".join(calls))  # all three in one write, kept alive
            assert arrived.wait(10)
            # Leaves with a reset while the first call runs.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        assert audit.written.wait(10)
        until(lambda: watchers(loops[0]) == 0, "the watch to end")
    # The gateway has stopped (and the origin): nothing it held is left to start.
    assert [(r.decision, r.reason, r.target) for r in audit.records] == [
        ("failed", "cancelled", site.url("/hold"))
    ]
    assert [r.path for r in site.requests] == ["/hold"]


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_slow_call_whose_client_stays_is_answered_and_audited_allowed(
    tmp_path: Path, http: str
) -> None:
    """A read slow enough to be watched for its client leaving, whose client stays: answered
    200 and audited ``allowed``, and the watch ends with the call."""
    arrived, release = threading.Event(), threading.Event()

    def slow(req: Any, sock: socket.socket) -> None:
        arrived.set()
        if release.wait(10):
            respond(200, PAGE.format("slow"))(req, sock)

    audit = SignallingAudit()
    settings = load(tmp_path)
    loops: list[asyncio.AbstractEventLoop] = []
    with (
        server_warnings() as warned,
        serve(routes={"/slow": slow}) as site,
        running_gateway(
            settings, lambda: loopback_web(settings, audit), http=http, loops=loops
        ) as base,
    ):
        conn, request = raw_post(base, {"url": site.url("/slow")})
        with conn:
            conn.sendall(request)
            assert arrived.wait(10)
            until(lambda: watchers(loops[0]) == 1, "the gateway to watch for the client")
            release.set()
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        assert watchers(loops[0]) == 0
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert json.loads(body)["finalUrl"] == site.url("/slow")
    assert [(r.decision, r.reason) for r in audit.records] == [("allowed", "allowed")]
    assert warned == []


@pytest.mark.anyio
async def test_a_far_sides_429_reaches_the_caller_with_its_retry_after(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    """The replica that was told to slow down says so too: its 502 carries the far side's
    Retry-After as a header, not only in the body."""
    settings = load(tmp_path)
    audit = MemoryAuditSink()
    routes = {"/busy": respond(429, "slow down", "text/plain", headers={"Retry-After": "7"})}
    with (
        serve(routes=routes) as site,
        running_gateway(settings, lambda: loopback_web(settings, audit)) as base,
    ):
        r = await client.post(
            base + FETCH_PATH, json={"url": site.url("/busy")}, headers=auth("alice")
        )
    assert_error(r, 502, "upstream_error")
    assert r.headers["retry-after"] == "7" and r.json()["error"]["retryAfter"] == 7


@pytest.mark.anyio
async def test_the_cores_refusals_name_the_fields_as_the_body_spells_them(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient, site: Any
) -> None:
    """A value the core refuses is named by the body's own field (maxChars, maxAge), not
    by the tools' spelling the client never sent."""
    base, _ = gateway
    url = base + FETCH_PATH
    for field, value, said in (
        ("maxChars", 0, "maxChars must be"),
        ("maxAge", -5, "maxAge must be"),
    ):
        r = await client.post(url, json={"url": site.url("/"), field: value}, headers=auth("alice"))
        message = assert_error(r, 400, "invalid_input")
        assert said in message and "_" not in message.split(" must ")[0], message


@pytest.mark.anyio
async def test_a_field_named_twice_is_refused_and_audited(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient
) -> None:
    """A body naming a field twice is read by a proxy or a WAF in front perhaps as its first
    value, by a JSON parser as its last: it is refused, audited, naming the field; a string
    that merely holds '":' is no second field."""
    base, audit = gateway
    before = len(audit.records)
    twice = b'{"url": "http://127.0.0.1/a", "url": "http://127.0.0.1/b"}'
    headers = {**auth("alice"), "Content-Type": "application/json"}
    r = await client.post(base + FETCH_PATH, content=twice, headers=headers)
    assert "names the field 'url' twice" in assert_error(r, 400, "invalid_input")
    [record] = audit.records[before:]
    assert record.decision == "refused"
    # JSON allows blanks before a name's colon: the second url was read, the first not seen.
    for blanks in (b" ", b"\n", b"\t \r\n"):
        spaced = b'{"url"%s: "http://127.0.0.1/a", "url"%s: "http://127.0.0.1/b"}' % (
            blanks,
            blanks,
        )
        r = await client.post(base + FETCH_PATH, content=spaced, headers=headers)
        assert "names the field 'url' twice" in assert_error(r, 400, "invalid_input")
    odd = b'{"url": "http://127.0.0.1:1/\\":x"}'  # '":' inside the string
    r = await client.post(base + FETCH_PATH, content=odd, headers=headers)
    assert "twice" not in r.text


@pytest.mark.anyio
async def test_a_body_not_in_utf8_is_refused_audited_and_not_read(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient, site: Any
) -> None:
    """A proxy or WAF in front reads a body as UTF-8, and sees no URL in UTF-16 or UTF-32,
    which Python's parser reads: such a body (a byte-order mark too) is refused in one
    sentence and audited, and its URL is never asked for."""
    base, audit = gateway
    before = len(audit.records)
    text = json.dumps({"url": site.url("/hidden")})
    headers = {**auth("alice"), "Content-Type": "application/json"}
    for encoding in ("utf-16-le", "utf-16", "utf-32", "utf-8-sig"):
        r = await client.post(base + FETCH_PATH, content=text.encode(encoding), headers=headers)
        assert "the request body is not UTF-8" in assert_error(r, 400, "invalid_input")
    records = audit.records[before:]
    assert [record.decision for record in records] == ["refused"] * 4
    assert site.requests == []
    plain = await client.post(base + FETCH_PATH, content=text.encode(), headers=headers)
    assert plain.status_code == 200, plain.text


@pytest.mark.anyio
async def test_a_url_is_read_without_the_whitespace_around_it_and_no_url_is_no_target(
    gateway: tuple[str, MemoryAuditSink], client: httpx.AsyncClient, site: Any
) -> None:
    """As at every face: a URL with whitespace around it is read, and audited as the URL
    read; a blank one is a missing url. A url or query that is null (or no string) is
    refused as before, its record's target empty rather than the value's Python repr."""
    base, audit = gateway
    padded = await client.post(
        base + FETCH_PATH, json={"url": f" {site.url('/one')}\n\t"}, headers=auth("alice")
    )
    assert padded.status_code == 200, padded.text
    assert padded.json()["requestedUrl"] == site.url("/one")
    refused = [
        (FETCH_PATH, {"url": "   "}, "url is required: an absolute http:// or https:// URL"),
        (FETCH_PATH, {"url": ""}, "url is required: an absolute http:// or https:// URL"),
        (FETCH_PATH, {"url": None}, "url must be a string"),
        (FETCH_PATH, {"url": 5}, "url must be a string"),
        (SEARCH_PATH, {"query": None}, "query must be a string"),
        (FETCH_PATH, {"url": f" {site.url('/two')} ", "bogus": 1}, "unknown field 'bogus'"),
    ]
    for path, body, said in refused:
        r = await client.post(base + path, json=body, headers=auth("alice"))
        assert said in assert_error(r, 400, "invalid_input")
    assert [(r.capability, r.target, r.decision) for r in audit.records] == [
        ("web:page.fetch@1", site.url("/one"), "allowed"),
        ("web:page.fetch@1", "", "refused"),
        ("web:page.fetch@1", "", "refused"),
        ("web:page.fetch@1", "", "refused"),
        ("web:page.fetch@1", "", "refused"),
        ("web:search.query@1", "", "refused"),
        ("web:page.fetch@1", site.url("/two"), "refused"),
    ]
    assert [r.path for r in site.requests] == ["/one"]


def test_the_servers_answers_to_a_bad_head_are_in_the_openapi_document(
    gateway: tuple[str, MemoryAuditSink], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 431 (a head past 64 KiB) and 408 (a head that stops coming; the bound shortened
    here from 10 s) the servers answer on any route are documented for each operation of
    /openapi.json, in the error model the document names."""
    monkeypatch.setattr(webward._serving, "HEAD_TIMEOUT_S", 0.5)
    base, _ = gateway
    address = base.removeprefix("http://").split(":")
    document = openapi_document()
    operations = [(FETCH_PATH, "post"), (SEARCH_PATH, "post"), ("/healthz", "get"),
                  ("/readyz", "get")]  # fmt: skip
    # Every head sent at once, the slow ones waiting out their bound together.
    sent = []
    for path, method in operations:
        start = f"{method.upper()} {path} HTTP/1.1\r\nHost: x\r\n".encode()
        for data in (start + b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n", start + b"X-Half"):
            conn = socket.create_connection((address[0], int(address[1])), timeout=10)
            conn.sendall(data)
            sent.append((path, method, conn))
    answered = []
    for path, method, conn in sent:
        with conn:
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        status = head.split()[1].decode()
        answered.append(status)
        assert b"\r\ncontent-type: application/json" in head.lower()
        responses = document["paths"][path][method]["responses"]
        assert status in responses, f"{status} on {method} {path} is not documented"
        assert responses[status]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
        jsonschema.validate(json.loads(body), document["components"]["schemas"]["Error"])
    assert answered == ["431", "408"] * len(operations)
