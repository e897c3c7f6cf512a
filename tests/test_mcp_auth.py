"""MCP over streamable HTTP knows the agent: the gateway's bearer tokens, 401 with the
protected-resource metadata otherwise, and no listening beyond loopback without tokens."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import httpx2
import pytest
from localserver import LocalServer, respond, serve
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_mcp import (
    INITIALIZE,
    UNREADABLE_CALLS,
    mcp_over_http,
    rpc_answer,
    text_of,
    unreadable_call,
    write_config,
)
from test_mcp import MCP_HEADERS as ACCEPT

from webward import Settings
from webward._errors import InvalidInput, Refused
from webward._mcp import _refusal, http_access, print_ready
from webward._tokens import hash_token
from webward.audit import open_audit_sink
from webward.cli import main

TOKENS = {"alice": "alice-mcp-token", "bob": "bob-mcp-token"}
TIERS = {"alice": "connected", "bob": "as-owner"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serve(routes={"/page": respond(200, "<h1>Owls</h1><p>Owls hunt at night.</p>")}) as s:
        yield s


def token_config(tmp_path: Path) -> Path:
    """The loopback test config plus two agents with tokens, and one without."""
    path = write_config(tmp_path)
    lines = []
    for name, token in TOKENS.items():
        lines += [f"[agents.{name}]", f'tier = "{TIERS[name]}"']
        lines += [f'token_sha256 = "{hash_token(token)}"']
    lines += ["[agents.carol]", 'tier = "full"']  # no token: cannot call
    path.write_text(path.read_text(encoding="utf-8") + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


async def records(config: Path) -> list[tuple[str, str, str]]:
    sink = open_audit_sink(Settings.load(config, environ={}))
    try:
        found = await sink.query(limit=100)
    finally:
        await sink.aclose()
    return sorted((r.agent, r.tier, r.decision) for r in found)


async def alices_session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    """The headers of a request in a session alice opened (initialize, with her token)."""
    opened = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **bearer("alice")})
    headers = {**ACCEPT, **bearer("alice"), "mcp-session-id": opened.headers["mcp-session-id"]}
    headers["mcp-protocol-version"] = "2025-06-18"
    return headers


@pytest.mark.anyio
async def test_each_token_acts_as_its_agent_and_tier(tmp_path: Path, site: LocalServer) -> None:
    """alice (connected) reads the page, bob (as-owner) is refused it and search; arguments
    naming another agent or tier are refused (the tools take none) and audited as the token's
    agent; the audit names the token's agent."""
    config = token_config(tmp_path)
    async with mcp_over_http(tmp_path, config, args=()) as url:
        async with (
            httpx2.AsyncClient(headers=bearer("alice")) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            chosen = await client.call_tool(
                "web_fetch", {"url": site.url("/page"), "agent": "carol", "tier": "full"}
            )
            assert chosen.is_error and "unknown argument 'agent'" in text_of(chosen)
            page = await client.call_tool("web_fetch", {"url": site.url("/page")})
            assert not page.is_error and "Owls hunt at night." in text_of(page)
        async with (
            httpx2.AsyncClient(headers=bearer("bob")) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            refused = await client.call_tool("web_fetch", {"url": site.url("/page")})
            assert refused.is_error and "127.0.0.1" in text_of(refused)
            search = await client.call_tool("web_search", {"query": "owls"})
            assert search.is_error and "agent bob has tier as-owner" in text_of(search)
    assert [r.path for r in site.requests] == ["/page"]
    assert await records(config) == [
        ("alice", "connected", "allowed"),
        ("alice", "connected", "refused"),
        ("bob", "as-owner", "refused"),
        ("bob", "as-owner", "refused"),
    ]


@pytest.mark.anyio
async def test_missing_wrong_and_tokenless_agents_get_401_with_metadata(tmp_path: Path) -> None:
    """No token, another scheme, a wrong token or an agent without one: 401 and a
    WWW-Authenticate naming the RFC 9728 metadata, which names this server; nothing audited,
    and each counted on /metrics by its reason. Its body and challenge say which, in the
    gateway's words: the SDK said "Authentication required" to a wrong token too (the
    TypeScript SDK's user read that, having sent one)."""
    required = "a bearer token is required: send Authorization: Bearer <token>"
    unknown = "the bearer token is not known to this server: send one of its agents' tokens"
    config = token_config(tmp_path)
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        base = url.removesuffix("/mcp")
        metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
        for headers, said in (
            ({}, required),
            ({"Authorization": "Basic YWxpY2U6eA=="}, required),
            ({"Authorization": "Bearer"}, required),
            ({"Authorization": f"Bearer {TOKENS['alice']}x"}, unknown),
            ({"Authorization": "Bearer carol"}, unknown),
        ):
            r = await http.post(url, json=LIST, headers={**ACCEPT, **headers})
            assert r.status_code == 401, headers
            challenge = r.headers["www-authenticate"]
            assert challenge.startswith("Bearer ")
            assert f'resource_metadata="{metadata_url}"' in challenge
            assert f'error_description="{said}"' in challenge
            assert r.json() == {"error": "invalid_token", "error_description": said}
        for where in (metadata_url, f"{base}/.well-known/oauth-protected-resource"):
            document = (await http.get(where)).json()
            assert document["resource"] == url
            assert document["bearer_methods_supported"] == ["header"]
            assert document["authorization_servers"]
        ok = await http.post(url, json=LIST, headers={**ACCEPT, **bearer("alice")})
        assert ok.status_code != 401
        # Counted as the gateway counts them (by reason, never the token), from zero.
        two = [("Authorization", "Bearer alice-mcp-token"), ("Authorization", "Bearer x")]
        r = await http.post(url, json=LIST, headers=[*ACCEPT.items(), *two])
        assert r.status_code == 400
        counted = (await http.get(f"{base}/metrics")).text
        assert 'webward_auth_refusals_total{reason="missing"} 1.0' in counted
        assert 'webward_auth_refusals_total{reason="malformed"} 3.0' in counted
        assert 'webward_auth_refusals_total{reason="unknown"} 2.0' in counted
        assert "alice-mcp-token" not in counted
    assert await records(config) == []


# What the TypeScript SDK's OAuth client (@modelcontextprotocol/sdk 1.32, a host's
# authProvider) sent once webward refused its token, as captured: its initialize, then the
# metadata, the authorization server's (none: 404) and a dynamic registration (RFC 7591).
TS_INITIALIZE = {
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "oauth", "version": "1"},
    },
    "jsonrpc": "2.0",
    "id": 0,
}
TS_REGISTRATION = {"client_name": "probe", "redirect_uris": ["http://127.0.0.1:1/cb"]}


@pytest.mark.anyio
async def test_an_oauth_client_refused_a_token_is_told_in_a_sentence_to_send_one(
    tmp_path: Path,
) -> None:
    """An OAuth client refused a token finds no authorization server at the one the metadata
    names (this server) and registers at /register: answered as an OAuth error, JSON with one
    sentence, which the TypeScript SDK shows; a bare 404 "Not Found" reached its user as
    `Invalid OAuth error response: SyntaxError: ... is not valid JSON`. Not a call: no record."""
    config = token_config(tmp_path)
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        r = await http.post(
            url, json=TS_INITIALIZE, headers={**ACCEPT, **{"Authorization": "Bearer wrong"}}
        )
        assert r.status_code == 401
        [where] = re.findall(r'resource_metadata="([^"]+)"', r.headers["www-authenticate"])
        [issuer] = (await http.get(where)).json()["authorization_servers"]
        for path in (
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ):
            assert (await http.get(urljoin(issuer, path))).status_code == 404  # runs no OAuth
        r = await http.post(urljoin(issuer, "/register"), json=TS_REGISTRATION)
        assert r.status_code == 400
        assert r.headers["content-type"] == "application/json"
        answer = r.json()
        assert answer["error"] == "invalid_client_metadata"
        description = answer["error_description"]
        assert description.startswith("webward runs no OAuth flow")
        assert "Authorization: Bearer <token>" in description and "\n" not in description
        # A client in a browser (the MCP Inspector's web UI) asks first, as it asks for the
        # metadata, and reads the answer only where CORS lets it: not a bare 405.
        browser = {"Origin": "http://localhost:6274"}
        ask = {**browser, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "content-type"}  # fmt: skip
        r = await http.options(urljoin(issuer, "/register"), headers=ask)
        assert r.status_code == 200 and "POST" in r.headers["access-control-allow-methods"]
        r = await http.post(urljoin(issuer, "/register"), json=TS_REGISTRATION, headers=browser)
        assert r.status_code == 400 and r.headers["access-control-allow-origin"] == "*"
        assert r.json()["error_description"] == description
        r = await http.options(where, headers={**ask, "Access-Control-Request-Method": "GET"})
        assert r.status_code == 200  # as the metadata's
        # A method the metadata does not take: one sentence, not Starlette's bare text.
        r = await http.post(where)
        assert r.status_code == 405 and r.headers["content-type"] == "application/json"
        assert r.json()["error"]["message"] == "POST is not allowed at this path; GET it"
        assert "GET" in r.headers["allow"]
    assert await records(config) == []


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ([], "missing"),
        ([b""], "malformed"),
        ([b"Basic YWxpY2U6eA=="], "malformed"),
        ([b"Bearer"], "malformed"),
        ([b"Bearer   "], "malformed"),
        ([b"Bearer \xa0"], "malformed"),  # only white space past ASCII: no token either
        ([b"bEaReR x"], "unknown"),
        ([b"Bearer \xa0x"], "unknown"),
    ],
)
def test_refused_credentials_are_counted_for_the_reason_the_gateway_gives(
    given: list[bytes], reason: str
) -> None:
    """mcp-http names why the SDK refused a request's credentials as the gateway does (its
    bearer_token): a header with nothing but white space after ``Bearer`` holds no token."""
    assert _refusal(given) == reason


@pytest.mark.anyio
async def test_a_message_the_sdk_cannot_read_is_one_sentence_and_a_call_is_audited(
    tmp_path: Path,
) -> None:
    """Over HTTP, a batch or params that are no object were answered with a multi-line
    validation dump, and a tools/call whose id is no string or integer with 202 and nothing
    (the SDK read it as a notification), unaudited. Each is now a 400 JSON-RPC error of one
    sentence, and each tools/call among them (a batch's too) one audit record of the token's
    agent; a request without a token is still the SDK's 401, and one for a foreign Host its
    421, unaudited."""
    config = token_config(tmp_path)
    call = {"name": "web_fetch", "arguments": {"url": "https://a.test/"}}
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        headers = await alices_session(http, url)
        bodies = [
            [LIST, {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call}],
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": [1]},
            {"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/call", "params": call},
            {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
            5,
        ]
        answers = [await http.post(url, json=body, headers=headers) for body in bodies]
        anonymous = await http.post(url, json=bodies[2], headers=ACCEPT)
        foreign = await http.post(url, json=bodies[2], headers={**headers, "host": "evil.test"})
        unreadable = await http.post(url, content=b"\xff{", headers=headers)
        listed = await http.post(url, json=LIST, headers=headers)
    assert [a.status_code for a in answers] == [400] * 5
    errors = [a.json() for a in answers]
    assert [(e["id"], e["error"]["code"]) for e in errors] == [
        (None, -32600), (4, -32600), (None, -32600), (None, -32600), (None, -32600)
    ]  # fmt: skip
    for e in errors:
        assert "\n" not in e["error"]["message"] and "pydantic" not in e["error"]["message"]
    assert errors[0]["error"]["message"].startswith("the message is a batch")
    assert errors[2]["error"]["message"].startswith('the request\'s "id" must be a string')
    assert anonymous.status_code == 401
    assert foreign.status_code == 421  # the SDK's own checks come first: no call, no record
    assert unreadable.status_code == 400
    assert unreadable.json()["error"]["message"].startswith("the message is not UTF-8 text")
    assert listed.status_code == 200 and "web_fetch" in listed.text  # the session goes on
    # The call in the batch, the one with params that are no object, the one of a bad id.
    assert await records(config) == [
        ("alice", "connected", "refused"),
        ("alice", "connected", "refused"),
        ("alice", "connected", "refused"),
    ]


@pytest.mark.anyio
async def test_a_batch_of_the_sessionless_protocol_is_refused_as_a_batch_and_its_call_audited(
    tmp_path: Path,
) -> None:
    """A batch sent as the sessionless protocol (2026-07-28: no session, its version in
    MCP-Protocol-Version) is refused by the SDK's reader in its own words ("Body must be a
    single JSON-RPC request or notification object"), and the tools/call in it went unaudited,
    where the same batch in a session is refused in one sentence and its call audited. Both
    are now: the batch's sentence, and one record of the token's agent."""
    config = token_config(tmp_path)
    version = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    call = {"name": "web_fetch", "arguments": {"url": "https://a.test/"}, "_meta": meta}
    batch = [{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call}]
    sessionless = {"mcp-protocol-version": version, "mcp-method": "tools/call"}
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        answer = await http.post(
            url, json=batch, headers={**ACCEPT, **sessionless, **bearer("alice")}
        )
    assert answer.status_code == 400
    error = answer.json()
    assert error["id"] is None and error["error"]["code"] == -32600
    assert error["error"]["message"].startswith("the message is a batch")
    assert await records(config) == [("alice", "connected", "refused")]


@pytest.mark.anyio
async def test_valid_json_the_sdk_cannot_read_is_answered_with_its_id_and_audited(
    tmp_path: Path,
) -> None:
    """Over HTTP, a tools/call that is JSON the parsers will not read (a number too long,
    arguments nested too deeply, a lone surrogate) was answered "not JSON" with no id, or,
    for the surrogate, "not a JSON-RPC 2.0 request", and only that one audited. Each is now
    answered with its id and the sentence naming its argument, and audited once; text that
    is no JSON is still told so, with no id and no record."""
    config = token_config(tmp_path)
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        headers = await alices_session(http, url)
        answers = [
            await http.post(url, content=unreadable_call(41 + i, arguments), headers=headers)
            for i, arguments in enumerate(UNREADABLE_CALLS)
        ]
        not_json = await http.post(
            url, content=b'{"jsonrpc": "2.0", "id": 5, "params": {', headers=headers
        )
    assert [a.status_code for a in answers] == [400] * len(answers)
    for i, (answer, (_, sentence)) in enumerate(
        zip(answers, UNREADABLE_CALLS.values(), strict=True)
    ):
        error = answer.json()
        assert error["id"] == 41 + i
        assert error["error"]["code"] == -32602
        assert error["error"]["message"].startswith(sentence), error
    assert not_json.status_code == 400
    assert not_json.json()["id"] is None
    assert not_json.json()["error"]["message"].startswith("the message is not JSON")
    assert await records(config) == [("alice", "connected", "refused")] * len(UNREADABLE_CALLS)


@pytest.mark.anyio
async def test_a_call_in_utf16_is_answered_not_utf8_with_its_id_and_audited(
    tmp_path: Path,
) -> None:
    """A tools/call sent as UTF-16 or UTF-32 without a BOM is JSON to Python's parser, not to
    the SDK's (UTF-8 alone). Its ASCII text with NULs between passes as UTF-8, so it was
    answered "not JSON" with no id and its call went unaudited. It is answered "not UTF-8"
    with its id, and audited; so is one in Latin-1 (an "é" in its URL), which was answered
    with id null and not audited."""
    config = token_config(tmp_path)
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        headers = await alices_session(http, url)
        answers = []
        for i, encoding in enumerate(("utf-16-le", "utf-16-be", "utf-32-le")):
            call = {"jsonrpc": "2.0", "id": 77 + i, "method": "tools/call",
                    "params": {"name": "web_fetch", "arguments": {"url": "https://a.test/"}}}  # fmt: skip
            body = json.dumps(call).encode(encoding)
            answers.append(await http.post(url, content=body, headers=headers))
        latin1 = {"jsonrpc": "2.0", "id": 80, "method": "tools/call",
                  "params": {"name": "web_fetch", "arguments": {"url": "https://a.test/café"}}}  # fmt: skip
        body = json.dumps(latin1, ensure_ascii=False).encode("latin-1")
        answers.append(await http.post(url, content=body, headers=headers))
    assert [a.status_code for a in answers] == [400] * 4
    assert [a.json()["id"] for a in answers] == [77, 78, 79, 80]
    for answer in answers:
        assert answer.json()["error"]["code"] == -32700
        assert answer.json()["error"]["message"].startswith("the message is not UTF-8 text")
    assert await records(config) == [("alice", "connected", "refused")] * 4


@pytest.mark.anyio
async def test_a_message_naming_a_member_twice_or_a_header_twice_is_refused_and_audited(
    tmp_path: Path, site: LocalServer
) -> None:
    """Over HTTP, a tools/call naming its url twice was read as its last url and fetched, as
    the gateway refuses (a proxy or a WAF in front may read the first). It is the tool's
    refusal of one sentence, in the gateway's words, and one record of the token's agent;
    a message whose id is named twice, or a request sending Mcp-Session-Id twice, is a 400
    JSON-RPC error, its call audited. The SDK's own checks still come first (a foreign Host:
    421, no record), and a call read as ever still reads its page."""
    config = token_config(tmp_path)
    page = site.url("/page").encode()
    twice = (
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "web_fetch", '
        b'"arguments": {"url": "http://first.example/", "url" : "%s"}}}' % page
    )
    once = b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "web_fetch", '
    once += b'"arguments": {"url": "%s"}, "_meta": {"progressToken": "a\\":b"}}}' % page
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        headers = await alices_session(http, url)
        refused = await http.post(url, content=twice, headers=headers)
        single = twice.replace(b'"url": "http://first.example/", ', b"")
        id_twice = await http.post(
            url, content=single.replace(b'"id": 2', b'"id": 3, "id": 4'), headers=headers
        )
        header_twice = await http.post(
            url, content=single, headers=[*headers.items(), ("mcp-session-id", "another")]
        )
        foreign = await http.post(url, content=twice, headers={**headers, "host": "evil.test"})
        read = await http.post(url, content=once, headers=headers)
    assert refused.status_code == 200
    answer = rpc_answer(refused)
    assert answer["id"] == 2 and answer["result"]["isError"] is True
    assert answer["result"]["content"] == [
        {"type": "text", "text": "the message names the field 'url' twice; send each once"}
    ]
    assert id_twice.status_code == 400
    assert id_twice.json()["id"] is None
    assert id_twice.json()["error"]["message"] == (
        "the message names the field 'id' twice; send each once"
    )
    assert header_twice.status_code == 400
    assert header_twice.json()["id"] == 2
    assert header_twice.json()["error"]["message"] == (
        "send one Mcp-Session-Id header; this request sent more"
    )
    assert foreign.status_code == 421
    assert rpc_answer(read)["result"]["isError"] is False
    assert [r.path for r in site.requests] == ["/page"]  # the last call's alone
    sink = open_audit_sink(Settings.load(config, environ={}))
    try:
        found = await sink.query(limit=100)
    finally:
        await sink.aclose()
    assert sorted((r.agent, r.decision, r.reason, r.target) for r in found) == [
        ("alice", "allowed", "allowed", page.decode()),
        ("alice", "refused", "invalid_input", ""),  # the URL in doubt
        ("alice", "refused", "invalid_input", page.decode()),  # the id in doubt
        ("alice", "refused", "invalid_input", page.decode()),  # the header twice
    ]


@pytest.mark.anyio
async def test_a_session_belongs_to_the_agent_that_opened_it(tmp_path: Path) -> None:
    """bob's token on alice's session id is turned away: a token cannot borrow a session."""
    config = token_config(tmp_path)
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        opened = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **bearer("alice")})
        assert opened.status_code == 200
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        theirs = await http.post(url, json=LIST, headers={**ACCEPT, **session, **bearer("bob")})
        assert theirs.status_code in (403, 404)
        assert "web_fetch" not in theirs.text


@pytest.mark.anyio
async def test_one_agent_cannot_fill_the_servers_sessions(tmp_path: Path) -> None:
    """New sessions are counted per agent ([limits] mcp_sessions_per_minute, here 3): alice's
    fourth opening at once is answered 429 with Retry-After before a session is made, while
    bob still opens his and alice's open sessions go on working."""
    config = token_config(tmp_path)
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("[limits]\n", "[limits]\nmcp_sessions_per_minute = 3\n"), encoding="utf-8"
    )
    async with (
        mcp_over_http(tmp_path, config, args=()) as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        opened = [
            await http.post(url, json=INITIALIZE, headers={**ACCEPT, **bearer("alice")})
            for _ in range(3)
        ]
        assert [r.status_code for r in opened] == [200, 200, 200]
        refused = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **bearer("alice")})
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "mcp-session-id" not in refused.headers
        assert "too many new MCP sessions" in refused.json()["error"]["message"]
        # Nor does a header the SDK does not go by open one uncounted: an Mcp-Method other
        # than initialize on a 2025 request; a second Authorization (a proxy's token beside
        # the client's, in either order: whose request is it?) is answered 400 before anyone
        # reads either.
        for extra, status in (
            ([("mcp-method", "tools/list")], 429),
            ([("authorization", "Bearer junk")], 400),
            ([("authorization", f"Bearer {TOKENS['bob']}")], 400),
        ):
            sneaked = await http.post(
                url,
                json=INITIALIZE,
                headers=[*ACCEPT.items(), *bearer("alice").items(), *extra],
            )
            assert sneaked.status_code == status, extra
            assert "mcp-session-id" not in sneaked.headers
            if status == 400:
                assert "send one Authorization header" in sneaked.json()["error"]["message"]
        theirs = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **bearer("bob")})
        assert theirs.status_code == 200
        # A request of the sessionless protocol opens no session, so it is not counted.
        sessionless = {"mcp-method": "tools/list", "mcp-protocol-version": "2026-07-28"}
        listing = await http.post(
            url, json=LIST, headers={**ACCEPT, **sessionless, **bearer("alice")}
        )
        assert listing.status_code != 429
        session = {"mcp-session-id": opened[0].headers["mcp-session-id"]}
        listed = await http.post(url, json=LIST, headers={**ACCEPT, **session, **bearer("alice")})
        assert listed.status_code == 200 and "web_fetch" in listed.text


@pytest.mark.anyio
async def test_a_server_on_every_address_answers_its_clients_by_any_name(tmp_path: Path) -> None:
    """On 0.0.0.0 (tokens required) the server is reached by names no list could know
    (Host: mcp.internal.example): not answered 421. Its token is what keeps a rebinding
    page out, so a request without one is still 401."""
    async with (
        mcp_over_http(tmp_path, token_config(tmp_path), args=(), address="0.0.0.0:0") as url,
        httpx.AsyncClient(trust_env=False, timeout=20) as http,
    ):
        named = {"Host": "mcp.internal.example:8000"}
        opened = await http.post(
            url, json=INITIALIZE, headers={**ACCEPT, **named, **bearer("alice")}
        )
        assert opened.status_code == 200, opened.text
        anonymous = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **named})
        assert anonymous.status_code == 401


def settings_with(tmp_path: Path, *, tokens: bool) -> Settings:
    return Settings.load(token_config(tmp_path) if tokens else write_config(tmp_path), environ={})


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.org", "10.1.2.3"])
def test_without_tokens_only_loopback_is_served(tmp_path: Path, host: str) -> None:
    """Without tokens a non-loopback address is refused in one sentence saying what to do."""
    with pytest.raises(Refused) as caught:
        http_access(settings_with(tmp_path, tokens=False), host)
    message = caught.value.message
    assert f"will not listen on {host} without bearer tokens" in message
    assert "127.0.0.1" in message and "token_sha256" in message and "\n" not in message


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_without_tokens_loopback_is_served_as_the_servers_agent(tmp_path: Path, host: str) -> None:
    """Loopback without tokens: no token table, the server's own agent acts."""
    assert http_access(settings_with(tmp_path, tokens=False), host) is None


def test_with_tokens_any_address_and_no_agent_flags(tmp_path: Path) -> None:
    """With tokens every address is allowed; --agent or --tier would contradict the tokens."""
    settings = settings_with(tmp_path, tokens=True)
    tokens = http_access(settings, "0.0.0.0")
    assert tokens is not None and tokens.lookup(TOKENS["bob"]) is not None
    for flags in ({"agent": "x"}, {"tier": "full"}):
        with pytest.raises(InvalidInput, match="come from its bearer token"):
            http_access(settings, "127.0.0.1", **flags)


def test_command_refuses_a_public_address_before_binding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`webward mcp --http 0.0.0.0:PORT` without tokens exits 3 with one line, never binding."""
    bound: list[tuple[str, int]] = []

    def no_bind(host: str, port: int) -> socket.socket:
        bound.append((host, port))
        raise AssertionError("bound a socket")

    monkeypatch.setattr("webward._mcp.bind_socket", no_bind)
    config = write_config(tmp_path)
    assert main(["mcp", "--http", "0.0.0.0:8765", "--config", str(config)]) == 3
    err = capsys.readouterr().err.strip()
    assert bound == []
    assert len(err.splitlines()) == 1 and "will not listen on 0.0.0.0" in err
    config = token_config(tmp_path)
    assert main(["mcp", "--http", "127.0.0.1:0", "--tier", "full", "--config", str(config)]) == 2
    assert "come from its bearer token" in capsys.readouterr().err
    assert bound == []


@pytest.mark.parametrize(
    ("url", "warned"),
    [
        ("http://0.0.0.0:8765/mcp", True),
        ("http://[::]:8765/mcp", True),
        ("http://10.1.2.3:8765/mcp", True),
        ("http://127.0.0.1:8765/mcp", False),
        ("http://[::1]:8765/mcp", False),
    ],
)
def test_the_ready_line_warns_of_plain_http_where_other_machines_reach_it(
    capsys: pytest.CaptureFixture[str], url: str, warned: bool
) -> None:
    """`webward mcp --http 0.0.0.0:PORT` (tokens required there) said only where it listened:
    the agents' bearer tokens then cross the network unencrypted. The line it prints when
    ready is now followed by a warning with the next step; on loopback by nothing."""
    print_ready(url)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"webward mcp: streamable HTTP on {url}"
    if warned:
        host = url.split("//", 1)[1].rsplit(":", 1)[0]
        assert lines[1] == (
            f"webward mcp: warning: http://{host}:8765 is plain HTTP on an address other machines "
            "may reach, so agents' bearer tokens cross the network unencrypted; listen on "
            '127.0.0.1 behind a TLS reverse proxy (docs/servers.md, "Behind a reverse proxy")'
        )
    else:
        assert len(lines) == 1


def test_help_names_the_token_rule(capsys: pytest.CaptureFixture[str]) -> None:
    """`webward mcp --help` says HTTP takes the [agents.NAME] tokens and is loopback without."""
    with pytest.raises(SystemExit):
        main(["mcp", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "token_sha256" in text and "loopback only" in text
    assert "/.well-known/oauth-protected-resource/mcp" in text
