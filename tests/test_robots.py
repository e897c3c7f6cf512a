"""robots.txt: RFC 9309 rules against real loopback servers, through an injected fetch."""

from __future__ import annotations

import http.client
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import anyio
import pytest
from localserver import LocalServer, accept_counter, redirect, respond, serve

from webward._errors import InvalidInput, Refused
from webward._robots import (
    MAX_ROBOTS_BYTES,
    REASON_ROBOTS,
    REASON_ROBOTS_UNREACHABLE,
    RobotsChecker,
    robots_url,
)
from webward.testing import FakeClock

ROBOTS = """\
User-agent: *
Disallow: /private
Allow: /private/open

User-agent: otherbot
Disallow: /
"""


class LoopbackFetch:
    """A small stand-in for the core's guarded fetch: stdlib HTTP in a worker thread.

    Like the core it follows up to five redirects and refuses (without connecting) any host
    outside its allowed set; here only 127.0.0.1 is "public", so a redirect to 127.0.0.2
    plays the part of a redirect to an internal address.
    """

    def __init__(self) -> None:
        self.urls: list[str] = []

    async def __call__(self, url: str) -> tuple[int, bytes]:
        self.urls.append(url)
        for _ in range(6):
            parts = urlsplit(url)
            if parts.hostname != "127.0.0.1":
                raise Refused(
                    f"refused: {parts.hostname} is an internal address", reason="internal_address"
                )
            status, body, location = await anyio.to_thread.run_sync(
                _get, parts.hostname, parts.port, parts.path
            )
            if status in (301, 302, 307, 308) and location:
                url = urljoin(url, location)
                continue
            return status, body
        return status, body


def _get(host: str, port: int | None, path: str) -> tuple[int, bytes, str | None]:
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path, headers={"User-Agent": "webward-test"})
        response = conn.getresponse()
        return response.status, response.read(), response.getheader("Location")
    finally:
        conn.close()


def robots_requests(server: LocalServer) -> int:
    return len([r for r in server.requests if r.path == "/robots.txt"])


@pytest.mark.anyio
async def test_allowed_and_disallowed_paths() -> None:
    """A disallowed path is refused by name; an allowed one (and an Allow inside it) passes."""
    with serve(routes={"/robots.txt": respond(200, ROBOTS, "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        await robots.check(srv.url("/"))
        await robots.check(srv.url("/public/page?x=1"))
        await robots.check(srv.url("/private/open/doc"))
        with pytest.raises(Refused) as info:
            await robots.check(srv.url("/private/page"))
        assert info.value.reason == REASON_ROBOTS
        assert info.value.code == "refused"
        assert info.value.message == (
            f"refused: robots.txt of 127.0.0.1:{srv.port} disallows /private/page for webward; the "
            "site asks not to be read there; an operator can let a tier skip robots.txt "
            "([policy.tiers.NAME] robots = false)"
        )
        # A model is told the why, not the setting that would let it through.
        assert info.value.for_model.endswith(
            "the site asks not to be read there; only webward's operator can change that"
        )
        assert robots_requests(srv) == 1  # cached per origin


@pytest.mark.anyio
async def test_a_group_for_webward_wins_over_the_star_group() -> None:
    """webward reads the group naming its own token before the * group."""
    body = "User-agent: *\nAllow: /\n\nUser-agent: webward\nDisallow: /no-agents\n"
    with serve(routes={"/robots.txt": respond(200, body, "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        await robots.check(srv.url("/yes"))
        with pytest.raises(Refused, match="disallows /no-agents/x for webward"):
            await robots.check(srv.url("/no-agents/x"))


@pytest.mark.anyio
@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
async def test_4xx_robots_allows_everything(status: int) -> None:
    """A 4xx robots.txt (404 included) is "unavailable": every path is allowed."""
    with serve(routes={"/robots.txt": respond(status, "nope", "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        await robots.check(srv.url("/private/page"))


@pytest.mark.anyio
@pytest.mark.parametrize("status", [500, 502, 503, 429])
async def test_5xx_robots_disallows_everything(status: int) -> None:
    """A 5xx (or 429) robots.txt is "unreachable": every path is refused, and says why."""
    with serve(routes={"/robots.txt": respond(status, "down", "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        with pytest.raises(Refused) as info:
            await robots.check(srv.url("/"))
        assert info.value.reason == REASON_ROBOTS_UNREACHABLE
        assert f"HTTP {status}" in info.value.message
        assert info.value.message.startswith(
            f"refused: robots.txt of 127.0.0.1:{srv.port} could not"
        )


@pytest.mark.anyio
async def test_robots_redirect_to_an_internal_address_disallows_and_never_connects() -> None:
    """A robots.txt redirect the guard refuses counts as unreachable; no connection is made."""
    with accept_counter("127.0.0.2") as internal:
        target = internal.url("/robots.txt")
        with serve(routes={"/robots.txt": redirect(target)}) as srv:
            robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
            with pytest.raises(Refused) as info:
                await robots.check(srv.url("/page"))
        assert info.value.reason == REASON_ROBOTS_UNREACHABLE
        assert "127.0.0.2 is an internal address" in info.value.message
        # A refusal is lasting: not "try again later", and one sentence, not two glued.
        assert "it leads where webward never reads" in info.value.message
        assert "try again later" not in info.value.message
        assert info.value.message.count("refused:") == 1
        assert internal.accepts == 0


@pytest.mark.anyio
async def test_robots_redirect_on_the_same_host_is_followed() -> None:
    """A redirect the guard allows is followed, and the file it leads to decides."""
    routes = {"/robots.txt": redirect("/real-robots.txt"), "/real-robots.txt": respond(200, ROBOTS)}
    with serve(routes=routes) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        with pytest.raises(Refused, match="disallows /private"):
            await robots.check(srv.url("/private"))


@pytest.mark.anyio
async def test_unreachable_is_cached_briefly_and_rules_for_the_ttl() -> None:
    """Rules are kept for ttl_s; an unreachable answer only for error_ttl_s."""
    clock = FakeClock()
    state = {"status": 503}

    def handler(req: object, sock: object) -> None:
        respond(state["status"], ROBOTS, "text/plain")(req, sock)  # type: ignore[arg-type]

    with serve(routes={"/robots.txt": handler}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=clock, ttl_s=3600, error_ttl_s=60)
        for _ in range(2):
            with pytest.raises(Refused, match="could not be read"):
                await robots.check(srv.url("/a"))
        assert robots_requests(srv) == 1
        state["status"] = 200
        clock.advance(60)
        await robots.check(srv.url("/a"))
        assert robots_requests(srv) == 2
        state["status"] = 503
        clock.advance(3599)
        await robots.check(srv.url("/a"))  # still the cached rules
        assert robots_requests(srv) == 2
        clock.advance(1)
        with pytest.raises(Refused, match="could not be read"):
            await robots.check(srv.url("/a"))
        assert robots_requests(srv) == 3


@pytest.mark.anyio
async def test_a_verdict_is_remembered_while_its_rules_live_and_no_longer() -> None:
    """The same URL asked again (a cached page read again) gets the rules' answer without
    asking the parser again; once the origin's rules expire and change, it gets the new
    rules' answer, never the remembered one."""
    clock = FakeClock()
    state = {"body": ROBOTS}

    def handler(req: object, sock: object) -> None:
        respond(200, state["body"], "text/plain")(req, sock)  # type: ignore[arg-type]

    with serve(routes={"/robots.txt": handler}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=clock, ttl_s=60)
        for _ in range(3):
            await robots.check(srv.url("/open"))
            with pytest.raises(Refused, match="disallows /private/page for webward"):
                await robots.check(srv.url("/private/page"))
        entry = robots._cached(f"http://127.0.0.1:{srv.port}")
        assert entry is not None and len(entry.verdicts) == 2  # one parse per URL
        state["body"] = "User-agent: *\nDisallow: /open\n"
        clock.advance(60)
        with pytest.raises(Refused, match="disallows /open for webward"):
            await robots.check(srv.url("/open"))
        await robots.check(srv.url("/private/page"))
        assert robots_requests(srv) == 2


@pytest.mark.anyio
async def test_own_rate_limit_on_the_robots_fetch_is_passed_on_uncached() -> None:
    """If webward's own limiter refuses the robots fetch, that refusal (with its retry time)
    comes back as it is and nothing is cached."""
    calls: list[str] = []

    async def limited(url: str) -> tuple[int, bytes]:
        calls.append(url)
        raise Refused("rate limited: x; retry in 1 s", code="rate_limited", retry_after=1.0)

    robots = RobotsChecker(limited, clock=FakeClock())
    for _ in range(2):
        with pytest.raises(Refused) as info:
            await robots.check("https://example.org/a")
        assert info.value.code == "rate_limited"
    assert calls == ["https://example.org/robots.txt"] * 2


@pytest.mark.anyio
@pytest.mark.parametrize("reason", ["limits_unavailable", "audit_unavailable"])
async def test_own_store_down_on_the_robots_fetch_is_passed_on_uncached(reason: str) -> None:
    """webward's own store failing on the robots.txt read's way out (an unusable limits.db)
    is not the site's answer: its own refusal comes back, not 'robots.txt could not be read
    ... set robots = false', and nothing is cached for when the store works again."""
    calls: list[str] = []

    async def store_down(url: str) -> tuple[int, bytes]:
        calls.append(url)
        raise Refused("refused: the rate-limit state is unavailable (limits.db)", reason=reason)

    robots = RobotsChecker(store_down, clock=FakeClock())
    for _ in range(2):
        with pytest.raises(Refused) as info:
            await robots.check("https://example.org/a")
        assert info.value.reason == reason
    assert calls == ["https://example.org/robots.txt"] * 2


@pytest.mark.anyio
async def test_only_the_first_500_kib_are_parsed() -> None:
    """Rules past MAX_ROBOTS_BYTES are ignored; rules before them hold."""
    filler = "# " + "x" * 1000 + "\n"
    body = "User-agent: *\nDisallow: /early\n" + filler * (MAX_ROBOTS_BYTES // len(filler) + 5)
    body += "Disallow: /late\n"
    assert len(body.encode()) > MAX_ROBOTS_BYTES
    with serve(routes={"/robots.txt": respond(200, body, "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        await robots.check(srv.url("/late"))
        with pytest.raises(Refused, match="/early"):
            await robots.check(srv.url("/early"))


@pytest.mark.anyio
async def test_concurrent_checks_of_one_origin_fetch_once() -> None:
    """Ten reads of one new host at once fetch its robots.txt once."""
    with serve(routes={"/robots.txt": respond(200, ROBOTS, "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(robots.check, srv.url(f"/page{i}"))
        assert robots_requests(srv) == 1


@dataclass(frozen=True)
class _Parsed:
    url: str


@pytest.mark.anyio
async def test_accepts_parsed_urls_and_origins_are_separate() -> None:
    """check() takes the core's parsed URL objects; each scheme/host/port has its own file."""
    fetch = LoopbackFetch()
    with (
        serve(routes={"/robots.txt": respond(200, ROBOTS, "text/plain")}) as a,
        serve(routes={"/robots.txt": respond(404)}) as b,
    ):
        robots = RobotsChecker(fetch, clock=FakeClock())
        with pytest.raises(Refused):
            await robots.check(_Parsed(a.url("/private")))
        await robots.check(_Parsed(b.url("/private")))
    assert fetch.urls == [a.url("/robots.txt"), b.url("/robots.txt")]


def test_robots_url_and_bad_urls() -> None:
    """The robots URL drops default ports and keeps others; a non-http URL is InvalidInput."""
    assert robots_url("https://Example.org:443/a?b") == (
        "https://example.org", "https://example.org/robots.txt", "example.org",
    )  # fmt: skip
    assert robots_url("http://[::1]:8080/x")[1] == "http://[::1]:8080/robots.txt"
    for bad in ("ftp://example.org/", "/relative", "http://", "http://example.org:99999/"):
        with pytest.raises(InvalidInput):
            robots_url(bad)


# ---- what a process keeps: bounded in memory, parsed off the event loop ---------------------

WILDCARDS = ("User-agent: *\n" + "".join(f"Disallow: /*{i}*$\n" for i in range(50_000)))[
    :MAX_ROBOTS_BYTES
]


class ServedFrom:
    """A fetch that answers every robots.txt with ``text`` and counts what it was asked."""

    def __init__(self, text: str) -> None:
        self.body = text.encode()
        self.urls: list[str] = []

    async def __call__(self, url: str) -> tuple[int, bytes]:
        self.urls.append(url)
        return 200, self.body


@pytest.mark.anyio
async def test_large_robots_files_of_many_hosts_do_not_pile_up_in_memory() -> None:
    """Protego holds 500 KiB of wildcard rules in about 40 MB: one agent reading a page on
    each of many host names grew a gateway by 31 MB a host, 4.8 GB after 150 (the cache
    was bounded only at 1,024 origins). Now the least recently used answers go past the
    cache's bound in memory: the first host's file is asked for again."""
    fetch = ServedFrom(WILDCARDS)
    checker = RobotsChecker(fetch)
    hosts = [f"http://h{i}.example/" for i in range(5)]
    for url in hosts:
        await checker.check(url)
    await checker.check(hosts[-1])  # the newest stays
    assert len(fetch.urls) == 5
    await checker.check(hosts[0])
    assert fetch.urls[-1] == "http://h0.example/robots.txt" and len(fetch.urls) == 6


@pytest.mark.anyio
async def test_small_robots_files_of_a_thousand_hosts_all_stay() -> None:
    """The bound in memory does not cut the cache for files of the usual size."""
    fetch = ServedFrom((ROBOTS * 40)[:4096])  # 4 KiB, more than a common robots.txt
    checker = RobotsChecker(fetch)
    for i in range(1024):
        await checker.check(f"http://h{i}.example/")
    await checker.check("http://h0.example/")
    assert len(fetch.urls) == 1024


@pytest.mark.anyio
async def test_a_large_robots_file_is_parsed_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """500 KiB of rules take Protego 0.3 s: parsed on the event loop, they held every other
    call of a gateway (health checks waited up to 7.6 s while one agent read 96 hosts)."""
    import threading

    from protego import Protego

    threads: list[int] = []
    parse = Protego.parse.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Protego], content: str) -> Protego:
        threads.append(threading.get_ident())
        return parse(cls, content)

    monkeypatch.setattr(Protego, "parse", classmethod(spy))
    loop = threading.get_ident()
    await RobotsChecker(ServedFrom(WILDCARDS)).check("http://big.example/")
    await RobotsChecker(ServedFrom(ROBOTS)).check("http://small.example/")
    assert threads[0] != loop  # the large file in a worker thread
    assert threads[1] == loop  # a small one where it is quicker than a hop


@pytest.mark.anyio
async def test_remembered_verdicts_of_long_urls_stay_small() -> None:
    """An origin remembers its verdicts up to a number and a size of URLs, whatever their
    length (URLs may be 2,048 characters: 4,096 of them were 8 MB an origin)."""
    checker = RobotsChecker(ServedFrom(ROBOTS))
    for i in range(300):
        await checker.check(f"http://one.example/{i:04d}" + "x" * 2000)
    entry = checker._cached("http://one.example")
    assert entry is not None
    assert 0 < sum(len(url) for url, _ in entry.verdicts) <= 12_000


@pytest.mark.anyio
async def test_an_origin_read_again_stays_while_others_go() -> None:
    """The bound forgets the least recently used origin: one asked for on every read is
    kept, not the one first cached (a hit did not count as a use)."""
    fetch = ServedFrom(ROBOTS)
    checker = RobotsChecker(fetch, max_origins=2)
    await checker.check("http://hot.example/")
    await checker.check("http://cold1.example/")
    await checker.check("http://hot.example/")
    await checker.check("http://cold2.example/")
    await checker.check("http://hot.example/")
    assert fetch.urls.count("http://hot.example/robots.txt") == 1


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["//private", "///private/page", "//private?x=1", "/private//"])
async def test_rules_see_the_path_with_runs_of_slashes_merged(path: str) -> None:
    """Most servers serve //private as /private (nginx merges slashes by default, Apache's
    file mapping too): a rule for /private is matched against the path with runs of slashes
    merged, and the refusal names the path as asked."""
    with serve(routes={"/robots.txt": respond(200, ROBOTS, "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        with pytest.raises(Refused) as info:
            await robots.check(srv.url(path))
    assert info.value.reason == REASON_ROBOTS
    assert f"disallows {path} for webward" in info.value.message


@pytest.mark.anyio
async def test_merging_slashes_keeps_allow_rules_and_the_query_as_they_are() -> None:
    """The merge reads the path only: an Allow inside a disallowed path still passes with
    doubled slashes, and a query's slashes are matched as sent."""
    rules = "User-agent: *\nDisallow: /private\nAllow: /private/open\nDisallow: /*?next=//\n"
    with serve(routes={"/robots.txt": respond(200, rules, "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        await robots.check(srv.url("//private//open/doc"))
        await robots.check(srv.url("/login?next=/home"))
        with pytest.raises(Refused):
            await robots.check(srv.url("/login?next=//evil"))


@pytest.mark.anyio
async def test_a_read_with_doubled_slashes_or_a_backslash_meets_the_rule() -> None:
    """Through the whole read: /\\private (sent as //private) and //private are refused by a
    rule for /private, and the server is asked only for robots.txt; a path the rules allow is
    still requested as it was normalised (its slashes not merged)."""
    from webward import Settings, StaticResolver, Web
    from webward.testing import MemoryAuditSink

    settings = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": True},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
        }
    )
    routes = {"/robots.txt": respond(200, ROBOTS, "text/plain"), "*": respond(200, "<p>page</p>")}
    with serve(routes=routes) as srv:
        async with Web(settings, StaticResolver({}), audit=MemoryAuditSink()) as w:
            for path in ("/\\private", "//private", "///private"):
                with pytest.raises(Refused) as info:
                    await w.fetch(srv.url(path))
                assert info.value.reason == REASON_ROBOTS
            assert [r.target for r in srv.requests] == ["/robots.txt"]
            await w.fetch(srv.url("//public"))
    assert srv.requests[-1].target == "//public"


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/blog//post", "/files//raw", "/files//raw/x", "//files//raw"])
async def test_rules_that_name_a_run_of_slashes_still_match(path: str) -> None:
    """Rules are matched against the path as sent as well as merged: a rule that itself
    names `//` (the common `Disallow: /*//` against duplicate-slash URLs, or
    `Disallow: /files//raw`) matched nothing once only the merged path was asked."""
    rules = "User-agent: *\nDisallow: /*//\nDisallow: /files//raw\n"
    with serve(routes={"/robots.txt": respond(200, rules, "text/plain")}) as srv:
        robots = RobotsChecker(LoopbackFetch(), clock=FakeClock())
        with pytest.raises(Refused) as info:
            await robots.check(srv.url(path))
        await robots.check(srv.url("/files/raw"))  # one slash: neither rule
    assert info.value.reason == REASON_ROBOTS
    assert f"disallows {path} for webward" in info.value.message
