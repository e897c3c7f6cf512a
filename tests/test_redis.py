"""Scaling out through Redis: two ``Web`` replicas pointed at one real redis-server share one
rate budget, one breaker and one page cache, and a Redis that goes away refuses reads
(limits) or misses (cache) without crashing."""

from __future__ import annotations

import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import pytest
import redis
from conftest import RedisServer
from fake_models import png_bytes
from localserver import Request, respond, send, serve

from webward import Refused, Settings, StaticResolver, UpstreamError, Web
from webward._cache import CachedPage, PageCache
from webward._cache_redis import RedisPageCache
from webward._call import CALL_DEADLINE
from webward._convert import Converted
from webward._gate import Gate
from webward._provenance import SESSIONS_PREFIX
from webward._redis_client import redact_url
from webward._render import Rendered
from webward._web import _default_cache
from webward.limits import HostState, open_limit_state
from webward.limits._redis import LIMITS_PREFIX, RedisLimitState
from webward.limits._steps import Config, admit
from webward.testing import FakeClock, MemoryAuditSink

pytestmark = pytest.mark.anyio


def settings(redis_url: str, **limits: Any) -> Settings:
    return Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000, **limits},
            "state": {"redis_url": redis_url},
        }
    )


@asynccontextmanager
async def replicas(s: Settings, clock: FakeClock) -> AsyncIterator[tuple[Web, Web]]:
    """Two gateways as two machines would run them: nothing shared but the Redis URL."""
    async with (
        Web(s, StaticResolver({}), audit=MemoryAuditSink(), clock=clock) as a,
        Web(s, StaticResolver({}), audit=MemoryAuditSink(), clock=clock) as b,
    ):
        yield a, b


async def spread(
    work: Any, stores: list[RedisLimitState], *, tasks: int, key: str
) -> HostState | None:
    """``tasks`` tasks of ``work`` at once, spread over ``stores`` (replicas); then ``key``'s
    state, and the stores closed."""
    async with anyio.create_task_group() as tg:
        for i in range(tasks):
            tg.start_soon(work, stores[i % len(stores)])
    state = await stores[0].get(key)
    for store in stores:
        await store.aclose()
    return state


def page(text: str) -> CachedPage:
    converted = Converted("text", "text/plain", "", text, (), (), False)
    return CachedPage("https://e.com/a", "https://e.com/a", 200, converted)


async def test_settings_choose_redis_for_limits_and_the_page_cache(redis_url: str) -> None:
    """With state.redis_url set, both the limit store and the default page cache are Redis."""
    s = settings(redis_url)
    state = open_limit_state(s, "sqlite")
    cache = _default_cache(s)
    assert isinstance(state, RedisLimitState)
    assert isinstance(cache, RedisPageCache) and isinstance(cache, PageCache)
    await state.aclose()
    await cache.aclose()


async def test_two_replicas_share_one_rate_budget(redis_url: str) -> None:
    """A burst of 2 is spent across both replicas: the third read on either is rate limited."""
    clock = FakeClock()
    s = settings(redis_url, per_host_rate=0.001, per_host_burst=2)
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with replicas(s, clock) as (a, b):
            await a.fetch(srv.url("/1"))
            await b.fetch(srv.url("/2"))
            for w, path in ((a, "/3"), (b, "/4")):
                with pytest.raises(Refused) as err:
                    await w.fetch(srv.url(path))
                assert err.value.code == "rate_limited"
    assert [r.path for r in srv.requests] == ["/1", "/2"]


async def test_concurrent_spenders_never_overspend(redis_url: str) -> None:
    """Forty racing updates on one key through two stores each see a consistent state: the
    WATCH/MULTI/EXEC loop grants exactly the burst of 10, no more."""
    cfg = Config(rate=0.001, burst=10, failures=5, open_s=30, max_open_s=300, probe_lease_s=60)
    stores = [RedisLimitState(redis_url), RedisLimitState(redis_url)]
    granted: list[bool] = []

    async def spend(store: RedisLimitState) -> None:
        admission = await store.update("host", lambda cur: admit(cur, cfg, 1000.0))
        granted.append(admission.ok)

    state = await spread(spend, stores, tasks=40, key="host")
    assert granted.count(True) == 10
    assert state is not None and state.tokens == 0.0


async def test_many_writers_on_one_key_never_find_the_store_unavailable(redis_url: str) -> None:
    """Sixty tasks, through three stores, each count forty times on one key (an agent's budget
    under load): every update lands. A tight retry loop gave up on about one in ten with
    'writers in a row raced for one key', refused limits_unavailable with the store up."""
    stores = [RedisLimitState(redis_url) for _ in range(3)]

    def count(cur: HostState | None) -> tuple[HostState, None]:
        return HostState(tokens=(cur.tokens if cur else 0.0) + 1, updated=0.0), None

    async def writer(store: RedisLimitState) -> None:
        for _ in range(40):
            await store.update("budget:bot:fetch:calls:hour", count)

    state = await spread(writer, stores, tasks=60, key="budget:bot:fetch:calls:hour")
    assert state is not None and state.tokens == 60 * 40


async def test_a_breaker_opened_on_one_replica_refuses_on_the_other(redis_url: str) -> None:
    """A host failing on replica A opens its circuit for replica B too, before B sends anything."""
    clock = FakeClock()
    s = settings(redis_url, breaker_failures=1)
    with serve(routes={"*": respond(503, "down")}) as srv:
        async with replicas(s, clock) as (a, b):
            with pytest.raises(UpstreamError):
                await a.fetch(srv.url("/x"))
            with pytest.raises(Refused) as err:
                await b.fetch(srv.url("/y"))
    assert err.value.code == "circuit_open"
    assert [r.path for r in srv.requests] == ["/x"]


async def test_a_page_cached_by_one_replica_is_served_by_the_other(redis_url: str) -> None:
    """Replica B pages through a document replica A downloaded, without a second download."""
    text = "".join(f"line {i:06d} of a long plain text page\n" for i in range(3000))
    clock = FakeClock()
    with serve(routes={"/": respond(200, text, "text/plain")}) as srv:
        async with replicas(settings(redis_url), clock) as (a, b):
            first = await a.fetch(srv.url("/"))
            second = await b.fetch(srv.url("/"), offset=40_000)
    assert len(srv.requests) == 1
    assert first.window.offset == 0 and second.window.offset == 40_000
    assert "line 00" in second.content


async def test_pages_are_stored_with_the_ttl_and_a_hashed_key(redis_url: str) -> None:
    """The entry carries the page-cache TTL, sits under webward:pages:, and round-trips."""
    cache = RedisPageCache(redis_url, ttl_s=60)
    await cache.put("https://e.com/a\x00links=False", page("hello"))
    got = await cache.get("https://e.com/a\x00links=False")
    await cache.aclose()
    with redis.Redis.from_url(redis_url) as client:
        (name,) = client.keys("*")
        ttl_ms = client.pttl(name)
    assert got == page("hello")
    assert name.startswith(b"webward:pages:") and b"e.com" not in name
    assert 0 < ttl_ms <= 60_000


async def test_oversized_pages_and_zero_ttl_are_not_kept(redis_url: str) -> None:
    """A page bigger than max_chars, or any page with TTL 0, is not stored."""
    small = RedisPageCache(redis_url, ttl_s=60, max_chars=10)
    off = RedisPageCache(redis_url, ttl_s=0)
    await small.put("k", page("x" * 100))
    await off.put("j", page("x"))
    assert await small.get("k") is None and await off.get("j") is None
    await small.aclose()
    await off.aclose()


async def test_limit_state_lives_under_its_namespace_with_an_idle_ttl(redis_url: str) -> None:
    """One JSON value per key under webward:limits:, expiring when idle; get reads it back."""
    store = RedisLimitState(redis_url, idle_ttl_s=3600)
    state = HostState(tokens=1.5, updated=10.0, failures=2)
    await store.update("example.org", lambda cur: (state, None))
    assert await store.get("example.org") == state
    assert await store.get("never.seen") is None
    await store.aclose()
    with redis.Redis.from_url(redis_url) as client:
        assert 0 < client.ttl(LIMITS_PREFIX + "example.org") <= 3600


@pytest.mark.parametrize(
    "stored",
    [
        '{"tokens":5,"updated":0,"hold_until":0,"failures":0,"opened":0,"open_until":1e400,'
        '"probe_until":0}',
        '{"tokens":-1e400,"updated":0,"hold_until":0,"failures":0,"opened":0,"open_until":0,'
        '"probe_until":0}',
        '{"tokens":NaN,"updated":0,"hold_until":0,"failures":0,"opened":0,"open_until":0,'
        '"probe_until":0}',
        '{"tokens":"5","updated":0,"hold_until":0,"failures":0,"opened":0,"open_until":0,'
        '"probe_until":0}',
        '{"tokens":5,"updated":0,"hold_until":0,"failures":0.5,"opened":0,"open_until":0,'
        '"probe_until":0}',
        '{"tokens":5}',
        "[1, 2]",
        "not json",
    ],
)
async def test_a_hostile_limit_key_refuses_in_one_sentence(redis_url: str, stored: str) -> None:
    """A shared store's key that no limiter wrote (an infinity, NaN, a string, a field
    missing) refuses the host's reads as limits_unavailable, audited, never an internal
    error from the limiter's arithmetic; and a read is not admitted on NaN tokens."""
    with redis.Redis.from_url(redis_url) as client:
        client.set(LIMITS_PREFIX + "127.0.0.1", stored)
    audit = MemoryAuditSink()
    with serve(routes={"*": respond(200, "<p>owls</p>")}) as origin:
        async with Web(settings(redis_url), StaticResolver({}), audit=audit) as web:
            with pytest.raises(Refused) as info:
                await web.fetch(origin.url("/"))
    assert info.value.reason == "limits_unavailable"
    assert "holds values webward never writes" in info.value.message
    assert origin.accepts == 0
    assert [(r.decision, r.reason) for r in audit.records] == [("refused", "limits_unavailable")]
    with redis.Redis.from_url(redis_url) as client:
        client.delete(LIMITS_PREFIX + "127.0.0.1")


async def test_redis_going_down_refuses_reads_and_misses_the_cache() -> None:
    """With Redis stopped, reads are refused (limits_unavailable, fail closed) and the page
    cache answers misses and drops puts instead of raising."""
    server = RedisServer().start()
    try:
        clock = FakeClock()
        cache = RedisPageCache(server.url)
        with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
            async with replicas(settings(server.url), clock) as (a, _):
                await a.fetch(srv.url("/before"))
                server.stop()
                with pytest.raises(Refused) as err:
                    await a.fetch(srv.url("/after"))
                assert await cache.get("k") is None
                await cache.put("k", page("x"))
        await cache.aclose()
    finally:
        server.stop()
    assert err.value.reason == "limits_unavailable"
    assert "webward does not read without its abuse protections" in err.value.message
    assert [r.path for r in srv.requests] == ["/before"]


async def test_readiness_follows_redis() -> None:
    """``Web.check_ready`` (a gateway's ``/readyz``) passes while Redis answers and refuses
    with the limit store's sentence, its next step included, once it has gone."""
    server = RedisServer().start()
    try:
        async with Web(settings(server.url), StaticResolver({}), audit=MemoryAuditSink()) as web:
            await web.check_ready()
            server.stop()
            with pytest.raises(Refused) as err:
                await web.check_ready()
    finally:
        server.stop()
    assert err.value.reason == "limits_unavailable"
    assert "point [state] redis_url" in err.value.message


async def test_messages_never_show_a_redis_password() -> None:
    """A URL's user and password are cut from everything the limit store says."""
    url = "redis://user:s3cret-pass@127.0.0.1:1/0"  # port 1: nothing listens, refused at once
    assert redact_url(url) == "redis://127.0.0.1:1/0"
    store = RedisLimitState(url)
    with pytest.raises(Refused) as err:
        await store.get("k")
    await store.aclose()
    assert "s3cret" not in err.value.message and "s3cret" not in repr(store)
    assert "127.0.0.1:1" in err.value.message


@contextmanager
def frozen_by_the_page(server: RedisServer) -> Iterator[Any]:
    """A handler that freezes ``server`` (SIGSTOP: it keeps its connections and answers
    nothing, as a Redis stuck on a long command or a full disk) as it serves the page; the
    server is thawed when the block ends."""
    assert server.proc is not None
    pid = server.proc.pid

    def handler(req: Request, sock: socket.socket) -> None:
        os.kill(pid, signal.SIGSTOP)
        send(sock, 200, b"<p>a page that links <a href='/next'>on</a></p>")

    try:
        yield handler
    finally:
        os.kill(pid, signal.SIGCONT)


async def test_a_redis_that_freezes_mid_call_cannot_hold_it_past_its_deadline() -> None:
    """Redis freezes while the page is read: the round trips the read has left (its outcome
    for the breaker, the page cache, its session's URLs) each had a timeout of 2 s and a
    retry, and together held the call for 12 s against a deadline of 3. They now end by the
    call's deadline plus a second, and the call is refused and audited in one sentence."""
    server = RedisServer().start()
    audit = MemoryAuditSink()
    try:
        with frozen_by_the_page(server) as freezing:
            routes = {"/page": freezing, "*": respond(200, "<p>x</p>")}
            s = settings(server.url, fetch_timeout_s=1.0).replace(
                {"agents": {"bot": {"provenance": "session"}}}  # its session keeps URLs
            )
            with serve(routes=routes) as srv:
                async with Web(s, StaticResolver({}), audit=audit) as web:
                    await web.declare_urls("s1", srv.url("/warm"), srv.url("/page"))
                    await web.fetch(srv.url("/warm"), agent="bot", session="s1")
                    with pytest.raises(Refused) as err:
                        await web.fetch(srv.url("/page"), agent="bot", session="s1")
    finally:
        server.stop()
    assert err.value.reason == "limits_unavailable"
    assert "no answer within the deadline of the call it served" in err.value.message
    assert [(r.decision, r.reason) for r in audit.records] == [
        ("allowed", "allowed"),
        ("refused", "limits_unavailable"),
    ]
    assert CALL_DEADLINE.get() is None  # the caller's context keeps no call's deadline


class SlowScreenshots:
    """A renderer whose screenshot takes longer than the read's deadline, as a heavy page's
    may (the render has a deadline of its own)."""

    def __init__(self, takes_s: float) -> None:
        self.takes_s = takes_s

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        await anyio.sleep(self.takes_s)
        return Rendered("<p>rendered</p>", png_bytes() if screenshot else None)


async def test_a_screenshot_past_the_read_deadline_still_joins_its_session(redis_url: str) -> None:
    """The store's bound is the read's deadline, but a screenshot's render has its own: the
    session's URLs are remembered after it, within the grace a read's have."""
    s = settings(redis_url, fetch_timeout_s=1.0).replace(
        {"agents": {"bot": {"provenance": "session"}}}  # its session keeps URLs
    )
    with serve(routes={"*": respond(200, "<p>see <a href='/next'>next</a></p>")}) as srv:
        renderer = SlowScreenshots(takes_s=2.5)  # past the deadline and its second of grace
        async with Web(s, StaticResolver({}), audit=MemoryAuditSink(), renderer=renderer) as web:
            await web.declare_urls("s", srv.url("/"))
            page = await web.fetch(
                srv.url("/"), include_screenshot=True, tier="full", agent="bot", session="s"
            )
    assert page.screenshot is not None
    with redis.Redis.from_url(redis_url) as client:
        assert client.zscore(SESSIONS_PREFIX + "s", srv.url("/next")) is not None


@contextmanager
def frozen(server: RedisServer) -> Iterator[None]:
    """``server`` frozen (SIGSTOP: it keeps its connections and answers nothing, as a stalled
    host or a network partition) for the block, and thawed after it whatever happens."""
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)


async def test_a_frozen_redis_refuses_concurrent_calls_to_one_host_promptly() -> None:
    """Ten calls at once to one host, with Redis frozen: each waited for the one ahead of it
    (the limiter's per-key lock), which spent its 2 s timeout and a retry per round trip, so
    one was refused after 8 s and nine ran into the 12 s read deadline, answered 504
    `timeout` and audited failed/deadline, blaming a site never contacted. Now all ten are
    refused limits_unavailable well within the deadline, each audited once, and calls that
    come while Redis is known not to answer are refused at once."""
    server = RedisServer().start()
    audit = MemoryAuditSink()
    outcomes: list[tuple[str | None, float]] = []
    try:
        with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
            async with Web(settings(server.url), StaticResolver({}), audit=audit) as web:

                async def call(path: str) -> None:
                    began = anyio.current_time()
                    try:
                        await web.fetch(srv.url(path))
                    except Refused as exc:
                        outcomes.append((exc.reason, anyio.current_time() - began))
                    except Exception as exc:  # the defect: a 504 timeout, blamed on the site
                        outcomes.append((getattr(exc, "reason", repr(exc)), 99.0))

                with frozen(server), anyio.fail_after(30):
                    async with anyio.create_task_group() as tg:
                        for i in range(10):
                            tg.start_soon(call, f"/first/{i}")
                    first = outcomes[:]
                    outcomes.clear()
                    async with anyio.create_task_group() as tg:  # Redis known not to answer
                        for i in range(10):
                            tg.start_soon(call, f"/then/{i}")
                    then = outcomes[:]
    finally:
        server.stop()
    assert [reason for reason, _ in first] == ["limits_unavailable"] * 10, first
    assert max(took for _, took in first) < 5.0, first  # was 8 s, and 12 s for nine of ten
    assert [reason for reason, _ in then] == ["limits_unavailable"] * 10, then
    assert max(took for _, took in then) < 1.5, then  # refused at once
    assert srv.accepts == 0  # the site was never contacted
    assert [(r.decision, r.reason) for r in audit.records] == [
        ("refused", "limits_unavailable")
    ] * 20


async def test_readiness_fails_on_a_full_redis_as_calls_do() -> None:
    """A full Redis (maxmemory, noeviction) answers PING but refuses every write: the
    readiness check pinged and said ready while every uncached read was refused
    limits_unavailable. It now makes a real small write with an expiry, as a call's change
    of the limits does, and fails as the call does; and passes again once there is room.
    Both say to give it room: they said to bring back a server that was up."""
    server = RedisServer().start()
    try:
        with redis.Redis.from_url(server.url) as client:
            client.config_set("maxmemory-policy", "noeviction")
            client.config_set("maxmemory", "1")  # full: every write is refused (OOM)
        with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
            async with Web(
                settings(server.url), StaticResolver({}), audit=MemoryAuditSink()
            ) as web:
                with pytest.raises(Refused) as call:
                    await web.fetch(srv.url("/"))
                with pytest.raises(Refused) as ready:
                    await web.check_ready()
                with redis.Redis.from_url(server.url) as client:
                    client.config_set("maxmemory", "0")  # room again
                await web.check_ready()
    finally:
        server.stop()
    assert call.value.reason == ready.value.reason == "limits_unavailable"
    assert "maxmemory" in ready.value.message and "\n" not in ready.value.message
    assert srv.accepts == 0
    # The next step is room, not a server that was up all along ("bring it back"), and
    # redis-py's note of the pipeline's command (a host's limiter key) is not repeated.
    for message in (call.value.message, ready.value.message):
        assert message.endswith(
            "; give it room (maxmemory), or point [state] redis_url at a primary whose user "
            "may write"
        ), message
        assert "Command #" not in message and "bring it back" not in message


async def test_a_redis_that_refuses_the_urls_credentials_says_to_give_its_password() -> None:
    """A Redis that asks for a password the URL does not give (or refuses the one it does)
    refuses each call as unavailable, with its next step: the password in the URL. It said
    "bring it back" of a server that was up, and quoted Redis's paragraph about HELLO and
    the RESP protocol; the password is never repeated."""
    server = RedisServer().start()
    try:
        with redis.Redis.from_url(server.url) as client:
            client.config_set("requirepass", "s3cret-pass")
        said = []
        with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
            for url in (server.url, server.url.replace("//", "//:wrong-pass@")):
                async with Web(settings(url), StaticResolver({}), audit=MemoryAuditSink()) as web:
                    with pytest.raises(Refused) as call:
                        await web.fetch(srv.url("/"))
                said.append(call.value)
            async with Web(
                settings(server.url.replace("//", "//:s3cret-pass@")),
                StaticResolver({}),
                audit=MemoryAuditSink(),
            ) as web:
                await web.fetch(srv.url("/"))  # with its password, it reads
    finally:
        server.stop()
    assert srv.accepts == 1  # the one read with the password
    step = (
        "; give its password in [state] redis_url, before the host: :PASSWORD@ "
        "(USER:PASSWORD@ for an ACL user)"
    )
    missing, wrong = said
    assert missing.reason == wrong.reason == "limits_unavailable"
    assert "it asks for a password, and the URL gives none" in missing.message
    assert "invalid username-password pair" in wrong.message
    for error in said:
        assert error.message.endswith(step), error.message
        assert "HELLO" not in error.message and "bring it back" not in error.message
        assert "wrong-pass" not in error.message


async def test_a_database_the_redis_lacks_and_tls_to_a_plain_redis_get_their_own_steps() -> None:
    """A database number the server does not have (/99 of 16) and a rediss:// URL sent to a
    plain Redis (its TLS handshake waits out the connect timeout) each refuse the call with
    the step that fixes them: both were told "bring it back" of a server that was up."""
    server = RedisServer().start()
    said = []
    try:
        with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
            for url in (server.url.replace("/0", "/99"), server.url.replace("redis:", "rediss:")):
                async with Web(settings(url), StaticResolver({}), audit=MemoryAuditSink()) as web:
                    with pytest.raises(Refused) as call:
                        await web.fetch(srv.url("/"))
                said.append(call.value)
    finally:
        server.stop()
    assert srv.accepts == 0
    database, tls = said
    assert database.reason == tls.reason == "limits_unavailable"
    assert database.message.endswith(
        "(DB index is out of range); give [state] redis_url a database number the server "
        "has (0 to 15, unless its databases setting allows more)"
    ), database.message
    assert tls.message.endswith(
        "; bring it back; a rediss:// URL speaks TLS, so if that port serves plain Redis, use "
        "redis://"
    ), tls.message


async def test_a_redis_that_stops_answering_is_logged_once_each_way(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Redis that gives no answer is said once in the log (where and why), not once per
    refused call, and once more when it answers again; in between,
    the limit store refuses at once rather than waiting a timeout per call."""
    caplog.set_level(logging.WARNING, logger="webward")
    server = RedisServer().start()
    store = RedisLimitState(server.url)
    change = lambda cur: (HostState(tokens=1.0, updated=0.0), None)  # noqa: E731
    try:
        await store.update("k", change)
        server.stop()
        for _ in range(5):
            with pytest.raises(Refused) as err:
                await store.update("k", change)
            assert err.value.reason == "limits_unavailable"
        server.start()
        with anyio.fail_after(20):
            while True:  # refused at once while known down, then one change tries again
                try:
                    await store.update("k", change)
                    break
                except Refused:
                    await anyio.sleep(0.1)
        await store.update("k", change)
    finally:
        await store.aclose()
        server.stop()
    said = [r.getMessage() for r in caplog.records if r.name == "webward.redis"]
    assert len(said) == 2, said
    assert said[0].startswith(f"the Redis at {server.url} failed (")
    assert said[0].endswith("); calls that need it are refused until it answers")
    assert said[1] == f"the Redis at {server.url} answers again"


async def test_a_full_redis_is_logged_once_until_a_write_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A full Redis (maxmemory, noeviction) answers, so it was never said to have failed:
    every call was refused limits_unavailable and the log said nothing. Its refusal is now
    said once (the store, why, the next step), the reads it still answers in between do not
    end it, and the first write that passes once there is room is said once."""
    caplog.set_level(logging.WARNING, logger="webward")
    server = RedisServer().start()
    store = RedisLimitState(server.url)
    cache = RedisPageCache(server.url)
    change = lambda cur: (HostState(tokens=1.0, updated=float(cur is not None)), None)  # noqa: E731
    try:
        await store.update("k", change)
        with redis.Redis.from_url(server.url) as client:
            client.config_set("maxmemory-policy", "noeviction")
            client.config_set("maxmemory", "1")  # full: every write is refused (OOM)
        for _ in range(3):
            with pytest.raises(Refused):
                await store.update("k", change)
            assert await store.get("k") is not None  # a read is still answered
            await cache.put("p", page("x"))  # not kept
        with pytest.raises(Refused):
            await store.probe()
        with redis.Redis.from_url(server.url) as client:
            client.config_set("maxmemory", "0")  # room again
        await store.update("k", change)
        await store.update("k", change)
    finally:
        await store.aclose()
        await cache.aclose()
        server.stop()
    said = [r.getMessage() for r in caplog.records if r.name == "webward.redis"]
    assert len(said) == 2, said
    assert said[0].startswith(f"the Redis at {server.url} refuses writes (")
    assert "OOM" in said[0] or "maxmemory" in said[0]
    assert said[0].endswith(
        "calls that need it are refused until it takes them: give it room (maxmemory), or "
        "point [state] redis_url at a primary whose user may write"
    )
    assert said[1] == f"the Redis at {server.url} takes writes again"


async def test_a_frozen_redis_refuses_an_agents_session_calls_promptly_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An agent with URL provenance has its session asked before the limits: the sessions'
    round trips did not share the store's health, so with Redis frozen every call waited out
    the client's 2 s, the calls after it too, and the log said nothing (the limits, never
    reached, were the ones that say it). Now the calls that come while Redis is known not to
    answer are refused at once, and the failure is said once."""
    caplog.set_level(logging.WARNING, logger="webward")
    server = RedisServer().start()
    s = settings(server.url).replace({"agents": {"bot": {"provenance": "session"}}})
    audit = MemoryAuditSink()
    said_to: list[Refused] = []
    try:
        with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
            async with Web(s, StaticResolver({}), audit=audit) as web:
                await web.declare_urls("s1", srv.url("/a"))
                await web.fetch(srv.url("/a"), agent="bot", session="s1")

                async def call() -> None:
                    with pytest.raises(Refused) as err:
                        await web.fetch(srv.url("/a"), agent="bot", session="s1")
                    said_to.append(err.value)

                with frozen(server), anyio.fail_after(30):
                    await call()  # finds it silent
                    for _ in range(3):
                        await call()  # known not to answer: at once
    finally:
        server.stop()
    assert [e.reason for e in said_to] == ["limits_unavailable"] * 4
    assert "Timeout reading from" in said_to[0].message
    for later in said_to[1:]:  # not asked: each waited out a timeout of its own
        assert "not asked again for 2 s" in later.message, later.message
    said = [r.getMessage() for r in caplog.records if r.name == "webward.redis"]
    assert len(said) == 1 and said[0].startswith(f"the Redis at {server.url} failed ("), said
    assert [r.reason for r in audit.records].count("limits_unavailable") == 4


async def test_a_replica_never_serves_a_page_its_network_settings_refuse(redis_url: str) -> None:
    """Replica A may reach the intranet (``allow_ranges``), replica B may not; both share one
    Redis. A page A read from an intranet name was served by B from the cache: the recheck of
    a cached read runs the policy and robots.txt, and the address guard only where a
    connection is made, so B handed over a page it would have refused to fetch. Replicas with
    different [network] settings now keep their pages apart, and B refuses, as it refuses the
    fetch, without a connection."""
    clock = FakeClock()
    resolver = StaticResolver({"plans.example.com": ["127.0.0.1"]})
    open_to = settings(redis_url)
    closed = open_to.replace({"network": {"allow_ranges": []}})
    with serve(routes={"/": respond(200, "<p>the intranet's plans</p>")}) as srv:
        url = f"http://plans.example.com:{srv.port}/"
        async with (
            Web(open_to, resolver, audit=MemoryAuditSink(), clock=clock) as a,
            Web(closed, resolver, audit=MemoryAuditSink(), clock=clock) as b,
        ):
            first = await a.fetch(url)
            with pytest.raises(Refused) as err:
                await b.fetch(url)
            again = await a.fetch(url)  # A's own page is still A's to serve from the cache
    assert "the intranet's plans" in first.content and "the intranet's plans" in again.content
    assert err.value.reason == "internal_address"
    assert srv.accepts == 1


async def test_deployments_with_their_own_redis_prefix_share_nothing_on_one_database(
    redis_url: str,
) -> None:
    """Two deployments (staging beside production) on one Redis database: the keys name
    agents, sessions, hosts and pages, never the deployment, so an agent's hour budget spent
    in one was refused budget_exhausted in the other and a session's URLs passed the other's
    provenance check. With a [state] redis_prefix each, every key either writes starts with
    its own prefix, and neither sees the other's budget, session URLs or pages."""
    agent = {"bot": {"provenance": "session", "budget": {"fetch_per_hour": 2}}}
    base = settings(redis_url).replace({"agents": agent})
    staging = base.replace({"state": {"redis_prefix": "staging:"}})
    production = base.replace({"state": {"redis_prefix": "production:"}})
    clock = FakeClock()
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with (
            Web(staging, StaticResolver({}), audit=MemoryAuditSink(), clock=clock) as a,
            Web(production, StaticResolver({}), audit=MemoryAuditSink(), clock=clock) as b,
        ):
            await a.declare_urls("s1", srv.url("/1"), srv.url("/2"))
            await a.fetch(srv.url("/1"), agent="bot", session="s1")
            await a.fetch(srv.url("/2"), agent="bot", session="s1")  # staging's budget spent
            with pytest.raises(Refused) as err:
                await b.fetch(srv.url("/1"), agent="bot", session="s1")
            assert err.value.reason == "url_not_in_session"  # staging's URLs are not its own
            await b.declare_urls("s1", srv.url("/1"), srv.url("/2"))
            await b.fetch(srv.url("/1"), agent="bot", session="s1")  # its own budget, not spent
            await b.fetch(srv.url("/2"), agent="bot", session="s1")
    ready = open_limit_state(staging)
    await ready.probe()  # readiness writes a key of its deployment's too
    await ready.aclose()
    assert [r.path for r in srv.requests] == ["/1", "/2", "/1", "/2"]  # no page of the other's
    with redis.Redis.from_url(redis_url) as client:
        keys = sorted(k.decode() for k in client.keys("*"))
    assert keys and all(k.startswith(("staging:", "production:")) for k in keys), keys
    for prefix in ("staging:", "production:"):
        kinds = {k[len(prefix) :].split(":")[0] for k in keys if k.startswith(prefix)}
        probed = {"ready"} if prefix == "staging:" else set()
        assert kinds == {"limits", "pages", "session"} | probed, (prefix, kinds)


@pytest.mark.parametrize(
    ("kind", "stored"),
    [("limits", "a list"), ("limits", "not json"), ("session", "a string")],
)
async def test_a_key_of_another_kind_at_our_name_says_another_program_writes_there(
    redis_url: str, kind: str, stored: str
) -> None:
    """Another program (or a deployment without a prefix of its own) writing at webward's key
    names: a list at a host's limiter key, a string at a session's. Each call is refused and
    recorded, with no read; the sentence said to bring the Redis back, which was up, and
    answered. It now says that another program writes there, and to give webward a database
    or a redis_prefix of its own; the calls go on once the key is gone."""
    s = settings(redis_url).replace({"agents": {"bot": {"provenance": "session"}}})
    audit = MemoryAuditSink()
    with serve(routes={"*": respond(200, "<p>owls</p>")}) as origin:
        name = LIMITS_PREFIX + "127.0.0.1" if kind == "limits" else SESSIONS_PREFIX + "s1"
        async with Web(s, StaticResolver({}), audit=audit) as web:
            if kind == "limits":
                await web.declare_urls("s1", origin.url("/"))
            with redis.Redis.from_url(redis_url) as client:
                if stored == "a list":
                    client.rpush(name, "x")
                else:
                    client.set(name, stored)
            with pytest.raises(Refused) as info:
                await web.fetch(origin.url("/"), agent="bot", session="s1")
            with redis.Redis.from_url(redis_url) as client:
                client.delete(name)
            await web.declare_urls("s1", origin.url("/"))
            await web.fetch(origin.url("/"), agent="bot", session="s1")
    assert info.value.reason == "limits_unavailable"
    assert info.value.message.endswith(
        "; another program writes keys under webward's [state] redis_prefix in that database; "
        "give webward a database or a redis_prefix of its own"
    ), info.value.message
    assert "bring it back" not in info.value.message
    assert origin.accepts == 1  # the call after the key was gone
    assert [r.reason for r in audit.records] == ["limits_unavailable", "allowed"]


async def test_a_redis_that_takes_no_more_clients_says_to_raise_its_maxclients() -> None:
    """A Redis at its maxclients (the replicas' pools and every other client count) refuses a
    new connection with 'max number of clients reached': each call was refused with 'bring it
    back, or point [state] redis_url … at one that answers' of a server that was up and
    answering the clients it had. The step is now to raise its maxclients."""
    server = RedisServer().start()
    try:
        with redis.Redis.from_url(server.url) as hog:
            hog.config_set("maxclients", 1)  # itself: the one client it takes
            with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
                async with Web(
                    settings(server.url), StaticResolver({}), audit=MemoryAuditSink()
                ) as web:
                    with pytest.raises(Refused) as call:
                        await web.fetch(srv.url("/"))
            hog.config_set("maxclients", 10)
    finally:
        server.stop()
    assert srv.accepts == 0
    assert call.value.reason == "limits_unavailable"
    assert "(max number of clients reached" in call.value.message  # the cache's trip first
    assert call.value.message.endswith(
        "); raise its maxclients, or give the other clients of that Redis fewer connections"
    ), call.value.message
