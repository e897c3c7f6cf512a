"""The gate's order (``_gate``): the literal guard runs before the reach policy on every hop
kind, so an internal target is ``internal_address`` in every tier and mode, never a policy
matter (``host_not_allowed``, ``host_denied``) with advice to allow it.

Every hop kind is tried against the metadata address 169.254.169.254, which is never
connected to: a connector that records each attempt and connects to 127.0.0.1 only shows
nothing else was tried; against 127.0.0.2, an accept-counting listener shows no connection.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpcore
import pytest
from localserver import LocalServer, accept_counter, redirect, respond, serve

import webward
from webward import Refused, Settings, StaticResolver, Web
from webward._cache import CachedPage, MemoryPageCache, cache_key
from webward._call import Call
from webward._convert import Converted
from webward._errors import Reason
from webward.testing import MemoryAuditSink, RecordingConnector

pytestmark = pytest.mark.anyio

METADATA = "http://169.254.169.254/latest/meta-data/"
TIERS = ("as-owner", "connected", "full")
MODES = ("enforce", "report")


class LoopbackConnector(RecordingConnector):
    """Records every connection attempt; connects to 127.0.0.1 only, refuses the rest."""

    async def connect_tcp(
        self, host: str, port: int, *args: Any, **kw: Any
    ) -> httpcore.AsyncNetworkStream:
        if host != "127.0.0.1":
            return await super().connect_tcp(host, port, *args, **kw)  # recorded, refused
        self.attempts.append((host, port))
        return await httpcore.AnyIOBackend().connect_tcp(host, port, *args, **kw)


@pytest.fixture
def internal() -> Iterator[LocalServer]:
    with accept_counter("127.0.0.2") as server:
        server.routes["*"] = respond(200, "secret")
        yield server


def settings(tier: str, mode: str, *, robots: bool = False, **policy: Any) -> Settings:
    """Tier ``tier``; as-owner may read the loopback test server (and only it)."""
    return Settings().replace(
        {
            # Exactly the test server's address; 127.0.0.2 and the metadata address stay out.
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {
                "default_tier": tier,
                "mode": mode,
                "allow": ["127.0.0.1"],
                "robots": robots,
                **policy,
            },
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
        }
    )


def make_web(s: Settings, connector: LoopbackConnector, **kw: Any) -> tuple[Web, MemoryAuditSink]:
    audit = MemoryAuditSink()
    return Web(s, StaticResolver({}), connector=connector, audit=audit, **kw), audit


def assert_internal(audit: MemoryAuditSink, err: Refused) -> None:
    """Refused as internal_address, audited so, with no policy would-deny on the way (the
    operator's step may name the tier's allow-list too: Gate._tier_step)."""
    assert err.reason == "internal_address"
    why = err.message.partition("; ")[0]
    assert "allow-list" not in why and "[policy]" not in why
    assert "[policy]" not in err.for_model
    assert [(r.decision, r.reason, r.would_deny) for r in audit.records] == [
        ("refused", "internal_address", None)
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tier", TIERS)
async def test_first_hop_to_metadata_is_internal_address(tier: str, mode: str) -> None:
    connector = LoopbackConnector()
    web, audit = make_web(settings(tier, mode), connector)
    async with web:
        with pytest.raises(Refused) as err:
            await web.fetch(METADATA)
    assert_internal(audit, err.value)
    assert connector.attempts == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tier", TIERS)
async def test_redirect_to_metadata_is_internal_address_in_every_tier(tier: str, mode: str) -> None:
    """The issue's bug: as-owner refused this redirect as host_not_allowed (advising to add
    the metadata address to [policy] allow), and report mode recorded that as would_deny."""
    connector = LoopbackConnector()
    with serve(routes={"/go": redirect(METADATA)}) as srv:
        web, audit = make_web(settings(tier, mode), connector)
        async with web:
            with pytest.raises(Refused) as err:
                await web.fetch(srv.url("/go"))
    assert_internal(audit, err.value)
    assert audit.records[0].redirects == (srv.url("/go"), METADATA)
    assert [r.path for r in srv.requests] == ["/go"]
    assert connector.attempts == [("127.0.0.1", srv.port)]  # never the metadata address


@pytest.mark.parametrize("mode", MODES)
async def test_redirect_to_an_internal_listener_is_internal_address_as_owner(
    internal: LocalServer, mode: str
) -> None:
    """The same with a real listener on 127.0.0.2: refused by the guard, never accepted."""
    connector = LoopbackConnector()
    with serve(routes={"/go": redirect(internal.url("/"))}) as srv:
        web, audit = make_web(settings("as-owner", mode), connector)
        async with web:
            with pytest.raises(Refused) as err:
                await web.fetch(srv.url("/go"))
    assert_internal(audit, err.value)
    assert internal.accepts == 0
    assert connector.attempts == [("127.0.0.1", srv.port)]


@pytest.mark.parametrize("mode", MODES)
async def test_an_internal_refusal_names_the_tiers_step_when_the_tier_would_refuse_next(
    internal: LocalServer, mode: str
) -> None:
    """At as-owner, 127.0.0.2 (not on [policy] allow) would be refused by the tier once its
    range is allowed: the operator's step names both. In report mode the tier lets it
    through, so the range alone is named."""
    web, audit = make_web(settings("as-owner", mode), LoopbackConnector())
    async with web:
        with pytest.raises(Refused) as err:
            await web.fetch(internal.url("/"))
    assert_internal(audit, err.value)
    assert '"127.0.0.2/32" to [network] allow_ranges' in err.value.message
    tiers_step = "and add 127.0.0.2 to [policy] allow (tier as-owner reads only the hosts"
    assert (tiers_step in err.value.message) == (mode == "enforce")
    assert internal.accepts == 0


@pytest.mark.parametrize(
    "host", ["127.0.2", "0x7f000002", "%31%32%37.0.0.2", "0177.0.0.2", "\uff11\uff12\uff17.0.0.2"]
)
async def test_the_tiers_step_names_the_host_as_the_guard_reads_it(
    internal: LocalServer, host: str
) -> None:
    """127.0.0.2 in another spelling is refused as 127.0.0.2, and the tier's step names the
    host the policy will be asked about, 127.0.0.2: it named the spelling as urllib reads
    it ('add 127.0.2 to [policy] allow', which no host the guard hands the policy matches),
    or, for a percent-encoded host, said no tier's step at all."""
    web, audit = make_web(settings("as-owner", "enforce"), LoopbackConnector())
    async with web:
        with pytest.raises(Refused) as err:
            await web.fetch(f"http://{host}:{internal.port}/")
    assert_internal(audit, err.value)
    assert "and add 127.0.0.2 to [policy] allow (tier as-owner reads only" in err.value.message
    assert internal.accepts == 0


@pytest.mark.parametrize("mode", MODES)
async def test_redirect_to_a_denied_internal_host_is_internal_address(mode: str) -> None:
    """The deny list and the agent's own deny list come after the guard too."""
    connector = LoopbackConnector()
    s = settings("connected", mode, deny=["169.254.169.254"]).replace(
        {"agents": {"cli": {"tier": "connected", "deny": ["169.254.169.254"]}}}
    )
    with serve(routes={"/go": redirect(METADATA)}) as srv:
        web, audit = make_web(s, connector)
        async with web:
            with pytest.raises(Refused) as err:
                await web.fetch(srv.url("/go"))
    assert_internal(audit, err.value)
    assert connector.attempts == [("127.0.0.1", srv.port)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tier", TIERS)
async def test_robots_txt_redirect_to_metadata_is_internal_address(tier: str, mode: str) -> None:
    """A robots.txt redirecting to the metadata address: that hop is refused by the guard
    (the read then finds robots.txt unreadable, saying why), never by the policy."""
    connector = LoopbackConnector()
    routes = {"/robots.txt": redirect(METADATA), "/": respond(200, "page")}
    with serve(routes=routes) as srv:
        web, _audit = make_web(settings(tier, mode, robots=True), connector)
        async with web:
            with pytest.raises(Refused) as robots_hop:
                await web._gate.fetch_robots(srv.url("/robots.txt"), agent="cli", tier=tier)
            with pytest.raises(Refused) as read:
                await web.fetch(srv.url("/"))
    assert robots_hop.value.reason == "internal_address"
    assert read.value.reason == "robots_unreachable"
    assert "169.254.169.254" in read.value.message and "never fetches" in read.value.message
    assert "allow-list" not in read.value.message
    assert [r.path for r in srv.requests] == ["/robots.txt", "/robots.txt"]
    assert {host for host, _ in connector.attempts} == {"127.0.0.1"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tier", TIERS)
async def test_cached_window_with_a_metadata_hop_is_internal_address(tier: str, mode: str) -> None:
    """A cached reading whose redirect chain passed the metadata address (put there by the
    test: no read reaches it) is refused on that hop by the guard, with nothing sent."""
    connector = LoopbackConnector()
    with serve(routes={"*": respond(200, "live")}) as srv:
        url = srv.url("/page")
        cache = MemoryPageCache(ttl_s=600, max_chars=1_000_000)
        how = "plain" if tier == "as-owner" else "rendered"
        converted = Converted("text", "text/plain", "", "cached text", (), (), False)
        now = time.time()
        cached = CachedPage(url, METADATA, 200, converted, (url, METADATA), fetched_at=now)
        await cache.put(cache_key(url, False, reading=how, reach="127.0.0.1/32"), cached)
        web, audit = make_web(settings(tier, mode), connector, page_cache=cache)
        async with web:
            with pytest.raises(Refused) as err:
                await web.fetch(url)
        assert srv.accepts == 0
    assert_internal(audit, err.value)
    assert connector.attempts == []


@pytest.mark.parametrize("mode", MODES)
async def test_provider_request_to_metadata_is_internal_address(mode: str) -> None:
    connector = LoopbackConnector()
    s = settings("connected", mode).replace(
        {"search": {"provider": "searxng", "searxng_url": METADATA}}
    )
    web, audit = make_web(s, connector)
    async with web:
        with pytest.raises(Refused) as direct:
            await web.provider_request("searxng", "GET", METADATA + "search?q=x")
        with pytest.raises(Refused) as err:
            await web.search("owls")
    assert direct.value.reason == "internal_address"
    assert err.value.reason == "internal_address"
    assert [(r.decision, r.reason, r.would_deny) for r in audit.records] == [
        ("refused", "internal_address", None)
    ]
    assert connector.attempts == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tier", TIERS)
async def test_render_proxy_request_to_metadata_is_internal_address(
    internal: LocalServer, tier: str, mode: str
) -> None:
    connector = LoopbackConnector()
    web, _audit = make_web(settings(tier, mode), connector)
    call = Call("web:page.fetch@1", "cli", "")
    async with web:
        gate = web._gate.render_gate("cli", tier, call)
        for url in (METADATA, internal.url("/")):
            with pytest.raises(Refused) as err:
                await gate.request("GET", url, [], 1000)
            assert err.value.reason == "internal_address"
            with pytest.raises(Refused) as tunnel:
                await gate.check_tunnel(url)
            assert tunnel.value.reason == "internal_address"
    assert call.render_refused == [
        "169.254.169.254 (internal_address)",
        f"127.0.0.2:{internal.port} (internal_address)",
    ]
    assert call.would_deny is None and call.render_contacted == []
    assert connector.attempts == [] and internal.accepts == 0


def test_reasons_are_one_registry() -> None:
    """Every reason literal left in the package is a member of ``Reason`` (values
    unchanged), so the registry names every reason the audit log can hold."""
    root = Path(webward.__file__).parent
    literal = re.compile(r"""reason=["']([a-z_]+)["']|REASON_[A-Z_]+ = ["']([a-z_]+)["']""")
    found = {
        a or b for path in root.rglob("*.py") for a, b in literal.findall(path.read_text("utf-8"))
    }
    assert found <= {r.value for r in Reason}
    assert Reason.INTERNAL_ADDRESS == "internal_address"
    assert {r.value for r in Reason} >= {"allowed", "cancelled", "internal_error", "robots"}
